r"""The square-exponential energy loss (seed 003 "Square-Exponential Loss"; seed 000 eq. 8).

Seed 003's slide writes ``sum_i E(W, Y^i, X^i)^2 + K exp(min_{Y != Y^i} E(W, Y, X^i))``: the
genuine energy squared plus an exponential of the most offending impostor's energy. As
printed the exponential *increases* with the impostor energy, which would pull impostors
together; the loss must decrease with it (the slide's own words: "decreasing function ... pulls
up on the energies of the most offending incorrect answer"), so the exponent is negative.
Seed 000 (eq. 8, and seed 003's "Our Loss function for a single training pair") gives the
constants, with Q (seed 003 writes R) the largest possible energy:

.. math::

    L = (1 - Y)\,\frac2Q E^2 + Y\, 2Q\, e^{-2.77 E / Q}, \qquad
    \frac{\partial L}{\partial E} = (1 - Y)\,\frac4Q E - Y\, 5.54\, e^{-2.77 E / Q},

Y = 0 genuine (s = +1), 1 impostor (s = -1). Seed 000 uses the L1 energy of embeddings in
(-1, 1)^k, so ``Q = 2k``; for unbounded mappings (linear) Q is only a scale. Pairs are scored
by ``-E``.
"""

import numpy as np

from ._energy import energy_loss
from ._spec import PairLoss
from .distances import L1Energy, get_distance
from .reducers import get_reducer

__all__ = ["DECAY", "per_pair", "embedding_cost_grad", "pair_score", "DEFAULTS"]

DECAY = 2.77  # seed 000 eq. 8
DEFAULTS = {"Q": None, "energy": "l1", "reducer": "mean"}


def per_pair(E, Y, Q):
    """Seed 000 eq. 8 per pair: ``(L, dL/dE)`` (Y = 1 impostor)."""
    decay = np.exp(-DECAY * E / Q)
    L = (1 - Y) * (2 / Q) * E**2 + Y * 2 * Q * decay
    return L, (1 - Y) * (4 / Q) * E - Y * 2 * DECAY * decay


def embedding_cost_grad(a, b, s, Q=None, energy="l1", reducer="mean"):
    """Square-exponential loss over pairs of embeddings (their mean by default) and
    ``(J, dJ/da, dJ/db)``.

    Parameters
    ----------
    a, b : ndarray of shape (n, k)
    s : ndarray of shape (n,), +1 genuine / -1 impostor
    Q : float, default=None
        The bound of E; None: the distance's ``bound`` for outputs in (-1, 1)^k (``2k`` for
        L1, ``2 sqrt(k)`` for L2; :mod:`metricfit.losses.distances`).
    energy : {'l1', 'l2'} or distance, default='l1'
    reducer : {'mean', 'avg_non_zero'} or reducer, default='mean'
        How the per-pair losses become J (:mod:`metricfit.losses.reducers`).
    """
    distance, reducer = get_distance(energy), get_reducer(reducer)
    Q = distance.bound(a.shape[1]) if Q is None else float(Q)
    return energy_loss(lambda E, Y: per_pair(E, Y, Q), a, b, s, distance, reducer)


def pair_score(a, b, Q=None, energy="l1", reducer="mean"):
    """``-E``: higher means more similar."""
    return get_distance(energy).score(a, b)


SPEC = PairLoss("square_exponential", embedding_cost_grad, pair_score, score_kind="energy",
                defaults=DEFAULTS, distance=L1Energy())
