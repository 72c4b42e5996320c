"""What a pair loss is: one frozen declaration of its parts and capabilities.

Every loss module declares, at its bottom, one :class:`PairLoss` naming its pure functions.
The objective factory (:func:`metricfit.objective.make_objective`) and the learners read the
declaration: a fast path is used because the loss *declares* one (``linear``), a scan of
the input is skipped because the loss *declares* that it makes one (``checks_input``); nothing
is discovered with ``hasattr`` or ``inspect``.
"""

import functools
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping, Optional, Tuple

__all__ = ["PairLoss", "LinearPath", "SCORE_KINDS"]

SCORE_KINDS = ("cosine", "distance", "energy")


class Stateless:
    """A part without parameters (a distance, a reducer): instances of one class are equal,
    hash alike, and print as ``Name()``."""

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __eq__(self, other):
        return type(other) is type(self)

    def __hash__(self):
        return hash(type(self))


@dataclass(frozen=True)
class LinearPath:
    """The prepared algebra of a pair loss for a linear map ``a = A x`` (its fast path).

    Parameters
    ----------
    cost_grad : callable
        ``cost_grad(A, X1, X2, s, lam=0.0, A0=None, **params) -> (J, G)``, stateless.
    objective : callable
        ``objective(X1, X2, s, lam=0.0, A0=None, validated=False, **params) -> f``, prepared
        once per data set, ``f(A) -> (J, G)`` with the batch protocol.
    index_objective : callable
        The same over index pairs, ``index_objective(points, index, s, lam=0.0, A0=None,
        validated=False, **params) -> f``.

    Examples
    --------
    >>> from metricfit.losses import get_loss
    >>> linear = get_loss("triangular").linear
    >>> linear.objective.__module__
    'metricfit.losses.tsml'
    """

    cost_grad: Callable
    objective: Callable
    index_objective: Callable


@dataclass(frozen=True)
class PairLoss:
    """A pair loss on embeddings, declared: its functions, its score and its capabilities.

    Parameters
    ----------
    name : str
        The registry's name (``Siamese(loss=name)``).
    embedding_cost_grad : callable
        ``embedding_cost_grad(a, b, s, **params) -> (J, dJ/da, dJ/db)``: the mean loss over the
        pairs of embeddings ``a``, ``b`` (n, k) as a Python float and its gradients (n, k).
    pair_score : callable
        ``pair_score(a, b, **params) -> (n,)``: how a fitted model scores pairs, higher = more
        similar.
    score_kind : {'cosine', 'distance', 'energy'}
        What ``pair_score`` is: a cosine, minus a squared distance, or minus an energy.
    defaults : mapping, default={}
        The hyper-parameters and their defaults (read-only).
    linear : LinearPath, default=None
        The prepared algebra for a linear map, if the loss has one.
    distance : object, default=None
        The default distance (energy) the loss is built on, for the losses that take one as a
        parameter (:mod:`metricfit.losses.distances`).
    aliases : tuple of str, default=()
        Other names :func:`~metricfit.losses.get_loss` accepts.
    checks_input : bool, default=False
        ``embedding_cost_grad`` validates its input unless called with ``validated=True``
        (the numba losses); the factory passes that flag for data validated upstream.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.losses import get_loss
    >>> loss = get_loss("tsml")
    >>> loss.name, loss.score_kind, loss.linear is not None
    ('triangular', 'cosine', True)
    >>> a, b, s = np.eye(2), np.eye(2)[::-1], np.array([1, -1])
    >>> J, Ga, Gb = loss.cost_grad_on(trusted=True)(a, b, s)
    >>> type(J).__name__, Ga.shape
    ('float', (2, 2))
    """

    name: str
    embedding_cost_grad: Callable
    pair_score: Callable
    score_kind: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    linear: Optional[LinearPath] = None
    distance: Any = None
    aliases: Tuple[str, ...] = ()
    checks_input: bool = False

    def __post_init__(self):
        if self.score_kind not in SCORE_KINDS:
            raise ValueError(f"score_kind must be one of {SCORE_KINDS}, got {self.score_kind!r}.")
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))
        object.__setattr__(self, "aliases", tuple(self.aliases))

    def cost_grad_on(self, params=None, trusted=False):
        """``(a, b, s) -> (J, dJ/da, dJ/db)`` with the hyper-parameters ``params`` bound
        (checked by :func:`~metricfit.losses.loss_params` beforehand); ``trusted=True``: the
        embeddings come from validated data, so a loss that ``checks_input`` skips its scan."""
        params = dict(params or {})
        if trusted and self.checks_input:
            params["validated"] = True
        return functools.partial(self.embedding_cost_grad, **params)

    # The module protocol's names, for callers written against loss modules.
    @property
    def DEFAULTS(self):  # noqa: N802 (the name loss modules exported)
        return self.defaults

    @property
    def SCORE_KIND(self):  # noqa: N802
        return self.score_kind
