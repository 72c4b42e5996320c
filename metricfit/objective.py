r"""One objective factory: any pair loss x any mapping x vector or index pairs.

:func:`make_objective` is the only place that chooses how a siamese objective is computed
(ARCHITECTURE.md, "The generic path and the fast path agree"):

- ``Linear`` + a loss that declares a prepared linear form (``PairLoss.linear``: triangular,
  cosine, ddml): on vector pairs (n, 2, d) the loss's prepared ``objective`` (TSML's
  ``x + s y``, DDML's ``x - y``); on index pairs into points the loss's ``index_objective``
  (project the points once, scatter back, one GEMM).
- ``ConvNet``, any loss: on vector pairs :class:`~metricfit.cnn.SiameseObjective` (one pass
  of the stacked ``[X1; X2]`` images); on index pairs :class:`IndexMappedObjective`.
- any other mapping: :class:`MappedObjective` on vector pairs, :class:`IndexMappedObjective`
  on index pairs.

All four return ``f(theta) -> (J, G)`` on the flat parameter vector with the batch protocol of
the SGD solver (``n_pairs``, ``labels``, ``batch``), and the same cost and gradient
(``tests/test_objective.py`` ties every fast path to the generic composition to 1e-10).
The data are validated once, at the estimator's edge: the objectives built here do not scan
them again (``trusted=True``, explicit). The penalty is :mod:`metricfit.losses.penalty`'s.
"""

import numpy as np

from .cnn.objective import SiameseObjective
from .losses import get_loss, ldml, loss_params
from .losses.penalty import Regularised
from .mappings import ConvNet, MappedObjective
from .mappings.objective import IndexMappedObjective
from .pairs.index import IndexPairs

__all__ = ["make_objective", "make_metric_objective"]


def has_fast_path(loss, mapping):
    """Whether (loss, mapping) has a prepared linear algebra: a mapping that declares
    ``is_linear`` and a loss that declares one (``PairLoss.linear``)."""
    return mapping.is_linear and get_loss(loss).linear is not None


def make_objective(loss, mapping, pairs, s, lam=0.0, theta0=None, params=None, fast=True,
                   trusted=True, recipe=None):
    r"""``f(theta) -> (J, G)`` of ``J = mean_i L(f(x_i), f(y_i), s_i) + lam/2 |theta - theta0|^2``.

    Parameters
    ----------
    loss : str or PairLoss
        A name of :data:`metricfit.losses.PAIR_LOSSES` (or alias) or a declared loss.
    mapping : metricfit.mappings.Mapping
    pairs : ndarray of shape (n_pairs, 2, d) or IndexPairs
        Validated (finite, float32 or float64) when ``trusted``, as the estimators' edge
        returns them.
    s : ndarray of shape (n_pairs,)
        Labels in {-1, +1}, validated when ``trusted``.
    lam : float, default=0.0
    theta0 : ndarray of shape (n_params,), default=None
        The regulariser's target (None: zeros).
    params : dict, default=None
        The loss's hyper-parameters (its ``defaults`` updated with these).
    fast : bool, default=True
        False forces the generic composition (for the tests that tie the two).
    trusted : bool, default=True
        The data were validated upstream: the objectives and the losses that check their
        input (``checks_input``) only lay the data out, without scanning them again.
    recipe : metricfit.cnn.objective.TrainingRecipe, default=None
        For a ``ConvNet`` mapping on vector pairs: the augmentation of every mini-batch, weight
        decay of the network's weights and the learning-rate schedule, applied around the
        siamese objective (and its ``lam`` penalty). Other mappings refuse one.

    Returns
    -------
    f : callable ``theta -> (J, G)`` with the batch protocol
    """
    loss = get_loss(loss)
    params = loss_params(loss, params)
    index = isinstance(pairs, IndexPairs)
    if fast and has_fast_path(loss, mapping):
        shape = (mapping.n_components, mapping.n_features)
        A0 = None if theta0 is None else np.asarray(theta0).reshape(shape)
        if index:
            return loss.linear.index_objective(pairs.points, pairs.index, s, lam=lam, A0=A0,
                                               validated=trusted, **params)
        return loss.linear.objective(pairs[:, 0], pairs[:, 1], s, lam=lam, A0=A0,
                                     validated=trusted, **params)
    cost_grad = loss.cost_grad_on(params, trusted=trusted)
    if fast and isinstance(mapping, ConvNet) and not index:
        images = pairs.reshape(pairs.shape[0], 2, *mapping.input_shape)
        augment = None if recipe is None else recipe.augment
        objective = Regularised(SiameseObjective(mapping.network, images, s, augment=augment,
                                                 embedding_cost_grad=cost_grad), lam, theta0)
        return objective if recipe is None else recipe.wrap(objective, mapping.network)
    if recipe is not None:
        raise ValueError("a training recipe applies to the ConvNet mapping on vector pairs, "
                         f"not to {type(mapping).__name__}.")
    if index:
        return IndexMappedObjective(cost_grad, mapping, pairs.points, pairs.index, s, lam=lam,
                                    theta0=theta0, validated=trusted)
    return MappedObjective(cost_grad, mapping, pairs[:, 0], pairs[:, 1], s, lam=lam,
                           theta0=theta0, validated=trusted)


def make_metric_objective(pairs, s, lam=0.0):
    """LDML's ``f(theta) -> (J, G)`` on ``theta = [M.ravel(), b]`` (seed 001), over validated
    vector pairs (the prepared ``x - y`` form) or index pairs (``[X M, X]`` per call).

    References
    ----------
    - Guillaumin, Verbeek and Schmid, "Is that you? Metric Learning Approaches for Face
      Identification", ICCV 2009 (seed 001).
    """
    if isinstance(pairs, IndexPairs):
        return ldml.index_objective(pairs.points, pairs.index, s, lam=lam)
    return ldml.objective(pairs[:, 0], pairs[:, 1], s, lam=lam)
