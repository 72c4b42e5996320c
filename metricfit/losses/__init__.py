"""Pair losses, one module each, and the one registry of them.

Every pair loss on embeddings is declared by one :class:`PairLoss` (its module's ``SPEC``):
``embedding_cost_grad(a, b, s, **params) -> (J, dJ/da, dJ/db)`` (J the mean over the pairs, a
Python float; pure NumPy / numba), ``pair_score(a, b, **params)`` (how a fitted model scores
pairs with it: higher = more similar), its ``score_kind``, its ``defaults`` (hyper-parameters)
and, for those with a faster algebra for linear maps, ``linear`` (:class:`LinearPath`):

- ``cost_grad(A, X1, X2, s, lam=0.0, A0=None) -> (J, G)``: stateless, the generic composition;
- ``objective(X1, X2, s, lam=0.0, A0=None) -> f``: prepared once per data set, ``f(A) -> (J, G)``
  (TSML's ``x + s y``, DDML's ``x - y``);
- ``index_objective(points, index, s, lam=0.0, A0=None) -> f`` over index pairs.

:data:`PAIR_LOSSES` is the registry (the rows of the grid), name -> :class:`PairLoss`:
'triangular' (TSML, seed 002; alias 'tsml'), 'cosine' (CSML; alias 'csml'), 'ddml' (seed 004),
'contrastive' (DrLIM), 'square_square', 'square_exponential' (seeds 003 / 000),
'signature_cosine' (seed 003's signature slides); :func:`get_loss` resolves a name, an alias
or a declaration. The energy losses take a distance (:mod:`.distances`) and a reducer
(:mod:`.reducers`) as parameters; :mod:`.penalty` is the one L2 penalty of every objective.
``ldml`` does not learn a map but a Mahalanobis matrix M and a bias b:
``cost_grad(M, b, X1, X2, s, lam=0.0) -> (J, GM, gb)`` and ``objective(X1, X2, s, lam=0.0)``
on the flat ``theta = [M.ravel(), b]``; ``nca`` is point-based.
"""

import warnings
from numbers import Real
from types import ModuleType

import numpy as np

from . import (
    contrastive,
    csml,
    ddml,
    distances,
    ldml,
    penalty,
    reducers,
    signature_cosine,
    square_exponential,
    square_square,
    tsml,
)
from ._spec import LinearPath, PairLoss

PAIR_LOSSES = {spec.name: spec for spec in (
    tsml.SPEC, csml.SPEC, ddml.SPEC, contrastive.SPEC, square_square.SPEC,
    square_exponential.SPEC, signature_cosine.SPEC)}
ALIASES = {alias: spec.name for spec in PAIR_LOSSES.values() for alias in spec.aliases}


def get_loss(loss):
    """The :class:`PairLoss` named ``loss`` (a key of :data:`PAIR_LOSSES` or an alias), or
    ``loss`` itself when it is a :class:`PairLoss`; a loss module gives its ``SPEC``. Raises
    ValueError listing the choices.

    Examples
    --------
    >>> from metricfit.losses import get_loss, tsml
    >>> get_loss("tsml") is get_loss("triangular") is get_loss(tsml) is tsml.SPEC
    True
    """
    if isinstance(loss, PairLoss):
        return loss
    if isinstance(loss, ModuleType) and isinstance(getattr(loss, "SPEC", None), PairLoss):
        return loss.SPEC
    if not isinstance(loss, str):
        raise ValueError(f"loss must be a name or a PairLoss, got {loss!r}.")
    name = ALIASES.get(loss, loss)
    if name not in PAIR_LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose from {', '.join(PAIR_LOSSES)} "
                         f"(aliases: {', '.join(ALIASES)}).")
    return PAIR_LOSSES[name]


def loss_params(loss, params=None):
    """The hyper-parameters of ``loss`` (anything :func:`get_loss` takes): its ``defaults``
    updated with ``params``. Raises ValueError for a key the loss does not take."""
    loss = get_loss(loss)
    defaults = dict(loss.defaults)
    params = dict(params or {})
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        accepted = ", ".join(defaults) or "none"
        raise ValueError(f"loss {loss.name!r} takes no parameter(s) "
                         f"{', '.join(unknown)}; it takes: {accepted}.")
    for key, value in params.items():
        if _non_finite(value):
            raise ValueError(f"loss_params[{key!r}] must be a finite number, got {value!r}.")
    defaults.update(params)
    return defaults


def _non_finite(value):
    """A real number (not a bool) that is NaN, +-inf or beyond the float64 range."""
    if not isinstance(value, Real) or isinstance(value, (bool, np.bool_)):
        return False
    try:
        return not np.isfinite(float(value))
    except OverflowError:
        return True


def __getattr__(name):
    if name == "LOSSES":
        warnings.warn("metricfit.losses.LOSSES is deprecated and will be removed in 0.3; use "
                      "metricfit.losses.PAIR_LOSSES (or the modules tsml, csml, ddml, ldml) "
                      "instead", FutureWarning, stacklevel=2)
        return {"tsml": tsml, "csml": csml, "ddml": ddml, "ldml": ldml}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["tsml", "csml", "ddml", "ldml", "contrastive", "square_square",
           "square_exponential", "signature_cosine", "distances", "reducers", "penalty",
           "PairLoss", "LinearPath", "PAIR_LOSSES", "get_loss", "loss_params"]
