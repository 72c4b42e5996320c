"""Pair losses, one module each.

Every pair loss on embeddings offers ``embedding_cost_grad(a, b, s, **params) -> (J, dJ/da,
dJ/db)`` (the mean over the pairs, pure NumPy / numba), ``pair_score(a, b, **params)`` (how a
fitted model scores pairs with it: higher = more similar) and ``DEFAULTS`` (its
hyper-parameters). Those with a faster algebra for linear maps also keep it:

- ``cost_grad(A, X1, X2, s, lam=0.0, A0=None) -> (J, G)``: stateless, the generic composition;
- ``objective(X1, X2, s, lam=0.0, A0=None) -> f``: prepared once per data set, ``f(A) -> (J, G)``
  (TSML's ``x + s y``, DDML's ``x - y``);
- ``index_objective(points, index, s, lam=0.0, A0=None) -> f`` over index pairs.

:data:`PAIR_LOSSES` names the losses on embeddings (the rows of the grid):
'triangular' (TSML, seed 002), 'cosine' (CSML), 'ddml' (seed 004), 'contrastive' (DrLIM),
'square_square', 'square_exponential' (seeds 003 / 000), 'signature_cosine' (seed 003's
signature slides). ``ldml`` does not learn a map but a Mahalanobis matrix M and a bias b:
``cost_grad(M, b, X1, X2, s, lam=0.0) -> (J, GM, gb)`` and ``objective(X1, X2, s, lam=0.0)``
on the flat ``theta = [M.ravel(), b]``.
"""

from numbers import Real

import numpy as np

from . import (contrastive, csml, ddml, ldml, signature_cosine, square_exponential,
               square_square, tsml)

LOSSES = {"tsml": tsml, "csml": csml, "ddml": ddml, "ldml": ldml}

PAIR_LOSSES = {
    "triangular": tsml,
    "cosine": csml,
    "ddml": ddml,
    "contrastive": contrastive,
    "square_square": square_square,
    "square_exponential": square_exponential,
    "signature_cosine": signature_cosine,
}
ALIASES = {"tsml": "triangular", "csml": "cosine"}


def get_loss(loss):
    """The loss module named ``loss`` (a key of :data:`PAIR_LOSSES` or an alias), or ``loss``
    itself when it is already a loss module. Raises ValueError listing the choices."""
    if not isinstance(loss, str):
        if callable(getattr(loss, "embedding_cost_grad", None)):
            return loss
        raise ValueError(f"loss must be a name or a loss module, got {loss!r}.")
    name = ALIASES.get(loss, loss)
    if name not in PAIR_LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose from {', '.join(PAIR_LOSSES)} "
                         f"(aliases: {', '.join(ALIASES)}).")
    return PAIR_LOSSES[name]


def loss_params(loss, params=None):
    """The hyper-parameters of ``loss`` (a module): its ``DEFAULTS`` updated with ``params``.
    Raises ValueError for a key the loss does not take."""
    defaults = dict(getattr(loss, "DEFAULTS", {}))
    params = dict(params or {})
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        accepted = ", ".join(defaults) or "none"
        raise ValueError(f"loss {loss.__name__.rsplit('.', 1)[-1]!r} takes no parameter(s) "
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


__all__ = ["tsml", "csml", "ddml", "ldml", "contrastive", "square_square",
           "square_exponential", "signature_cosine", "LOSSES", "PAIR_LOSSES", "get_loss",
           "loss_params"]
