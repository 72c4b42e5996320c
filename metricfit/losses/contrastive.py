r"""The contrastive loss with margin m (DrLIM; seed 003, "Pay quadratically").

Seed 003 (Hadsell, Chopra and LeCun's DrLIM, in LeCun's slides): outputs of neighbours in the
neighbourhood graph are pulled together by a spring of rest length 0; outputs of non-neighbours
are pushed apart by a spring that only acts while they are closer than the margin m ("pay
quadratically for making outputs of non-neighbours smaller than a margin m"). With
``Y = (1 - s) / 2`` (0 similar, 1 dissimilar) and the energy E of :mod:`._energy`:

.. math::

    L = (1 - Y)\,\tfrac12 E^2 + Y\,\tfrac12 \max(0, m - E)^2, \qquad
    \frac{\partial L}{\partial E} = (1 - Y)\, E - Y \max(0, m - E),

and ``dJ/da = dL/dE dE/da``, ``dJ/db = -dJ/da``. With the L2 energy the similar term's
gradient is ``a - b`` (smooth at E = 0); with L1 it is ``E sign(a - b)``. The margin sets the
scale of the output space (seed 003) and only matters against the regulariser. Pairs are
scored by ``-E``.
"""

import numpy as np

from ._energy import energy_loss
from ._spec import PairLoss
from .distances import L2Energy, get_distance
from .reducers import get_reducer

__all__ = ["per_pair", "embedding_cost_grad", "pair_score", "DEFAULTS"]

DEFAULTS = {"margin": 1.0, "energy": "l2", "reducer": "mean"}


def per_pair(E, Y, margin):
    """``(L, dL/dE)`` per pair for energies E and impostor indicators Y (1 = dissimilar)."""
    short = np.maximum(0.0, margin - E)
    return (1 - Y) * E**2 / 2 + Y * short**2 / 2, (1 - Y) * E - Y * short


def embedding_cost_grad(a, b, s, margin=1.0, energy="l2", reducer="mean"):
    """Contrastive loss over pairs of embeddings (their mean by default) and
    ``(J, dJ/da, dJ/db)``.

    Parameters
    ----------
    a, b : ndarray of shape (n, k)
    s : ndarray of shape (n,), +1 similar / -1 dissimilar
    margin : float, default=1.0
        m > 0.
    energy : {'l2', 'l1'} or distance, default='l2'
        DrLIM uses the Euclidean distance (:mod:`metricfit.losses.distances`).
    reducer : {'mean', 'avg_non_zero'} or reducer, default='mean'
        How the per-pair losses become J (:mod:`metricfit.losses.reducers`).
    """
    distance, reducer = get_distance(energy), get_reducer(reducer)
    return energy_loss(lambda E, Y: per_pair(E, Y, float(margin)), a, b, s, distance, reducer)


def pair_score(a, b, margin=1.0, energy="l2", reducer="mean"):
    """``-E``: higher means more similar."""
    return get_distance(energy).score(a, b)


SPEC = PairLoss("contrastive", embedding_cost_grad, pair_score, score_kind="energy",
                defaults=DEFAULTS, distance=L2Energy())
