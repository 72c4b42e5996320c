r"""The square-square energy loss (seed 003, "Square-Square Loss").

Seed 003 writes, for a sample ``X^i`` with correct answer ``Y^i`` and its most offending alien
point (the closest point of another label),

.. math::

    \mathcal L(W) = \sum_i E(W, Y^i, X^i)^2
        + \big(\max(0, m - \min_{Y \ne Y^i} E(W, Y, X^i))\big)^2 :

the genuine energy squared (pushes down the correct answer) plus a squared hinge on the
impostor energy (pulls up the most offending incorrect answer, until it is beyond the margin
m). On pairs (a, b, s) each term is carried by its own pair: genuine pairs (s = +1, Y = 0)
pay ``E^2``, impostor pairs (s = -1, Y = 1) pay ``max(0, m - E)^2``:

.. math::

    L = (1 - Y) E^2 + Y \max(0, m - E)^2, \qquad
    \frac{\partial L}{\partial E} = 2 (1 - Y) E - 2 Y \max(0, m - E).

On a pair this is twice DrLIM's contrastive loss (:mod:`.contrastive`); what makes it the
"most offending alien point" loss is which impostor pairs are drawn (the closest alien of each
point), a choice of the pairs, not of the per-pair formula. Pairs are scored by ``-E``.
"""

import numpy as np

from ._energy import energy_loss
from ._spec import PairLoss
from .distances import L2Energy, get_distance
from .reducers import get_reducer

__all__ = ["per_pair", "embedding_cost_grad", "pair_score", "DEFAULTS"]

DEFAULTS = {"margin": 1.0, "energy": "l2", "reducer": "mean"}


def per_pair(E, Y, margin):
    """``(L, dL/dE)`` per pair (Y = 1 impostor)."""
    short = np.maximum(0.0, margin - E)
    return (1 - Y) * E**2 + Y * short**2, 2 * (1 - Y) * E - 2 * Y * short


def embedding_cost_grad(a, b, s, margin=1.0, energy="l2", reducer="mean"):
    """Square-square loss over pairs of embeddings (their mean by default) and
    ``(J, dJ/da, dJ/db)``.

    Parameters
    ----------
    a, b : ndarray of shape (n, k)
    s : ndarray of shape (n,), +1 genuine / -1 impostor
    margin : float, default=1.0
    energy : {'l2', 'l1'} or distance, default='l2'
    reducer : {'mean', 'avg_non_zero'} or reducer, default='mean'
        How the per-pair losses become J (:mod:`metricfit.losses.reducers`).
    """
    distance, reducer = get_distance(energy), get_reducer(reducer)
    return energy_loss(lambda E, Y: per_pair(E, Y, float(margin)), a, b, s, distance, reducer)


def pair_score(a, b, margin=1.0, energy="l2", reducer="mean"):
    """``-E``: higher means more similar."""
    return get_distance(energy).score(a, b)


SPEC = PairLoss("square_square", embedding_cost_grad, pair_score, score_kind="energy",
                defaults=DEFAULTS, distance=L2Energy())
