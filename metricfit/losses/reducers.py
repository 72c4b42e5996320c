r"""Reducers: how the per-pair losses ``L_i`` become the cost J (as pytorch-metric-learning's
reducers). Each returns J and ``dJ/dL_i``, which the energy losses chain with ``dL_i/dE_i``
and the distance's ``dE_i/da_i``:

.. math::

    \text{mean:}\quad J = \frac1n \sum_i L_i, \quad \frac{\partial J}{\partial L_i} = \frac1n;
    \qquad
    \text{avg\_non\_zero:}\quad J = \frac1{n_+} \sum_i L_i, \quad
    \frac{\partial J}{\partial L_i} = \frac1{n_+},

with ``n_+`` the number of pairs whose loss is > 0 (J = 0 and zero gradient when there is
none). DrLIM's hinge gives the impostors beyond the margin a zero loss: as training goes on
most of them are, and the plain mean shrinks the step; ``avg_non_zero`` averages over the
pairs that still pay. ``n_+`` is piecewise constant in the embeddings, so the gradient above
is exact wherever no loss crosses zero. A reducer acts on the pairs the loss is given at once:
a mini-batch of SGD, or a chunk of the full objective (up to
:data:`metricfit.pairs.index.CHUNK_SIZE` pairs, each chunk weighted by its share of the pairs),
as pytorch-metric-learning reduces each batch.
"""

import numpy as np

from ._spec import Stateless

__all__ = ["MeanReducer", "AvgNonZeroReducer", "REDUCERS", "get_reducer"]


class _Reducer(Stateless):
    name = None


class MeanReducer(_Reducer):
    """The mean over the pairs (the losses' default).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.losses.reducers import MeanReducer
    >>> J, dJ_dL = MeanReducer().reduce(np.array([0.0, 2.0]), np.array([0.0, 4.0]))
    >>> J, dJ_dL.tolist()
    (1.0, [0.0, 2.0])
    """

    name = "mean"

    def reduce(self, L, dL):
        """``(J, dJ/dE_i)``: J the mean of L (a Python float), ``dL / n`` the chained
        gradient of the per-pair derivatives ``dL`` (n,)."""
        return float(np.mean(L)), dL / L.shape[0]


class AvgNonZeroReducer(_Reducer):
    """The mean over the pairs with a loss > 0 (pytorch-metric-learning's contrastive default).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.losses.reducers import AvgNonZeroReducer
    >>> J, dJ_dL = AvgNonZeroReducer().reduce(np.array([0.0, 2.0]), np.array([0.0, 4.0]))
    >>> J, dJ_dL.tolist()
    (2.0, [0.0, 4.0])
    """

    name = "avg_non_zero"

    def reduce(self, L, dL):
        """``(J, dJ/dE_i)``: J the sum of L over the ``n_+`` pairs with L > 0, and
        ``dL / n_+``; 0 and zero gradient when no pair has a loss."""
        count = int(np.count_nonzero(L > 0))
        if count == 0:
            return 0.0, np.zeros_like(dL)
        return float(np.sum(L) / count), dL / count


REDUCERS = {"mean": MeanReducer(), "avg_non_zero": AvgNonZeroReducer()}


def get_reducer(reducer):
    """The reducer named ``reducer`` ('mean' or 'avg_non_zero'), or ``reducer`` itself when
    it is a reducer object. Raises ValueError listing the choices."""
    if isinstance(reducer, _Reducer):
        return reducer
    if isinstance(reducer, str) and reducer in REDUCERS:
        return REDUCERS[reducer]
    raise ValueError(f"reducer must be one of {', '.join(REDUCERS)} or a reducer of "
                     f"metricfit.losses.reducers, got {reducer!r}.")
