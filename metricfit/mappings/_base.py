r"""What every mapping shares: the flat parameter layout, Glorot-uniform draws, tanh passes
(those of the convnet's dense layers, :mod:`metricfit.cnn.activations`).

A mapping ``f(., theta)`` turns inputs X (n, d) into embeddings Z (n, k). Its parameters live
in one flat vector ``theta`` (what the optimizers move); the mapping names the blocks
(``W``, ``h``, ...) and their shapes, in order, and ``unpack`` / ``pack`` convert between the
two. Every method is a pure function of ``theta``: the mapping object holds only sizes.
"""

from numbers import Integral

import numpy as np
from sklearn.utils import check_random_state

from ..cnn.activations import tanh_backward, tanh_forward  # noqa: F401 (the mappings' tanh)
from ..pairs.checks import float_dtype

__all__ = ["Mapping", "glorot_bound", "glorot_uniform", "tanh_forward", "tanh_backward"]


def _check_size(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    return int(value)


def _rng(random_state):
    """A ``RandomState`` from None / int / RandomState (sklearn's rule), or a ``Generator``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return check_random_state(random_state)


def glorot_bound(n_in, n_out):
    r"""Half-width of seed 004 eq. 13: :math:`\sqrt6 / \sqrt{n_j + n_{j+1}}`."""
    return np.sqrt(6.0) / np.sqrt(n_in + n_out)


def glorot_uniform(rng, n_in, n_out, shape):
    r"""Draw from :math:`U[-\sqrt6/\sqrt{n_j + n_{j+1}}, +\sqrt6/\sqrt{n_j + n_{j+1}}]`
    (seed 004 eq. 13, the normalised initialisation of Glorot & Bengio) in float64."""
    bound = glorot_bound(n_in, n_out)
    return rng.uniform(-bound, bound, size=shape)


class Mapping:
    """Base class: sizes, the flat layout of theta, ``pack``/``unpack``/``transform``.

    Subclasses set ``n_features`` and ``n_components``, define ``shapes`` (an ordered dict
    ``name -> shape`` giving the layout of theta) and implement ``init``, ``forward`` and
    ``backward``.

    Examples
    --------
    A mapping that scales each feature by its own weight, ``Z = X * w``:

    >>> import numpy as np
    >>> from metricfit.mappings import Mapping, MappedObjective
    >>> class Diagonal(Mapping):
    ...     def __init__(self, n_features):
    ...         self.n_features = self.n_components = n_features
    ...     @property
    ...     def shapes(self):
    ...         return {"w": (self.n_features,)}
    ...     def init(self, random_state=None):
    ...         return np.ones(self.n_features)
    ...     def forward(self, theta, X):  # (Z, cache)
    ...         X = self._check_input(X)
    ...         return X * self.unpack(theta)["w"], X
    ...     def backward(self, theta, X, dZ):  # dL/dtheta from dL/dZ
    ...         return self.pack(w=np.sum(dZ * X, axis=0))
    >>> f = Diagonal(3)
    >>> f, f.n_params
    (Diagonal(n_features=3, n_components=3), 3)
    >>> theta = f.pack(w=np.array([1.0, 2.0, 3.0]))
    >>> f.transform(theta, np.ones((2, 3)))
    array([[1., 2., 3.],
           [1., 2., 3.]])

    Any pair loss trains it through :class:`~metricfit.mappings.MappedObjective`; its
    gradient agrees with central differences:

    >>> from metricfit.losses import tsml
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.normal(size=(2, 20, 3))
    >>> objective = MappedObjective(tsml.embedding_cost_grad, f, X1, X2, np.repeat([1, -1], 10))
    >>> def central(f, x, h=1e-6):  # central differences of J, entry by entry
    ...     E = h * np.eye(x.size)
    ...     return np.array([f(x + e)[0] - f(x - e)[0] for e in E]) / (2 * h)
    >>> bool(np.allclose(objective(theta)[1], central(objective, theta), atol=1e-6))
    True
    """

    n_features = n_components = None
    #: the estimator attribute that holds the fitted parameters (:meth:`as_attribute`)
    fitted_attribute = "params_"
    #: whether the weight penalty pulls towards the start (seed 002 eq. 9) or towards 0
    regularise_towards_init = False
    #: whether theta is a (n_components, n_features) matrix (identity / WCCN / array starts)
    is_matrix = False
    #: whether the map is ``x -> W x`` with ``theta = W.ravel()``: the losses' prepared linear
    #: algebra (``PairLoss.linear``, NCA's ``cost_grad``) then computes its objective
    is_linear = False

    def as_attribute(self, theta):
        """The fitted parameters as the estimator exposes them: the flat theta."""
        return theta

    def __eq__(self, other):
        return type(self) is type(other) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))

    @property
    def shapes(self):
        """Ordered ``{name: shape}`` of the parameter blocks, in their order within theta."""
        raise NotImplementedError

    @property
    def n_params(self):
        """Length of the flat parameter vector theta."""
        return sum(int(np.prod(shape)) for shape in self.shapes.values())

    def __repr__(self):
        sizes = ", ".join(f"{k}={v}" for k, v in self._sizes().items())
        return f"{type(self).__name__}({sizes})"

    def _sizes(self):
        return {"n_features": self.n_features, "n_components": self.n_components}

    def unpack(self, theta):
        """Split the flat ``theta`` (n_params,) into ``{name: array}``, views into theta."""
        theta = np.asarray(theta)
        if theta.size != self.n_params:
            raise ValueError(
                f"theta has {theta.size} entries; {self!r} has n_params = {self.n_params}."
            )
        flat, blocks, start = theta.reshape(-1), {}, 0
        for name, shape in self.shapes.items():
            stop = start + int(np.prod(shape))
            blocks[name] = flat[start:stop].reshape(shape)
            start = stop
        return blocks

    def pack(self, **arrays):
        """Concatenate the named blocks (shapes as in ``shapes``) into a flat theta.

        The dtype is that of the blocks (float32 kept, anything else float64).
        """
        if set(arrays) != set(self.shapes):
            raise ValueError(
                f"{type(self).__name__}.pack needs exactly {list(self.shapes)}, got "
                f"{sorted(arrays)}."
            )
        parts = [np.asarray(arrays[name]) for name in self.shapes]
        for part, (name, shape) in zip(parts, self.shapes.items(), strict=True):
            if part.shape != shape:
                raise ValueError(f"{name} must have shape {shape}, got {part.shape}.")
        return np.concatenate([p.ravel() for p in parts]).astype(float_dtype(*parts), copy=False)

    def _check_input(self, X):
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(
                f"X must have shape (n, {self.n_features}) for {self!r}, got {X.shape}."
            )
        return X

    def init(self, random_state=None):
        raise NotImplementedError

    def forward(self, theta, X):
        raise NotImplementedError

    def backward(self, theta, cache, dZ):
        raise NotImplementedError

    def transform(self, theta, X):
        """The embeddings ``Z = f(X, theta)`` (n, n_components), without the cache."""
        return self.forward(theta, X)[0]
