r"""The siamese objective: any pair loss on embeddings composed with any mapping.

Two copies of one mapping ``f(., theta)`` turn each pair into ``a_i = f(x_i)``,
``b_i = f(y_i)``; the loss's ``embedding_cost_grad(a, b, s) -> (J, dJ/da, dJ/db)`` scores them
and the mapping's ``backward`` carries dJ/da and dJ/db back to theta (seed 004 eqs. 8, 12):

.. math::

    J(\theta) = \frac1n \sum_i J_i(f(x_i), f(y_i), s_i)
        + \frac\lambda2 \|\theta - \theta_0\|^2,

    \nabla J = \frac1n \sum_i \Big[\frac{\partial f(x_i)}{\partial\theta}^T
        \frac{\partial J_i}{\partial a_i}
        + \frac{\partial f(y_i)}{\partial\theta}^T \frac{\partial J_i}{\partial b_i}\Big]
        + \lambda (\theta - \theta_0).

The weights are shared, so the two branches' gradients add: each chunk of pairs goes through
``forward`` twice (``X1`` and ``X2`` rows, both contiguous, so the loss gets contiguous ``a``
and ``b`` without copies) and ``backward`` twice, and the two ``dtheta`` are summed.

The regulariser covers *every* entry of theta, biases included (weight decay towards theta0;
seed 004 fits without one, so lam = 0 by default). For ``Linear``, theta is ``A.ravel()`` and
the term is the losses' ``lam/2 ||A - A0||_F^2``: the generic and the fast path agree.
"""

from numbers import Integral

import numpy as np

from .._deprecation import deprecated_aliases
from ..losses.penalty import add_penalty
from ..pairs import check_pair_labels
from ..pairs.checks import float_dtype
from ..pairs.index import CHUNK_SIZE, check_index_pair_data, scatter_add_rows
from ..pairs.passes import make_passes
from ..pairs.rows import l2_normalize

__all__ = ["MappedObjective", "IndexMappedObjective", "l2_normalize"]


def _check_pairs(X1, X2, s, n_features):
    X1, X2 = np.asarray(X1), np.asarray(X2)
    if X1.ndim != 2 or X1.shape != X2.shape:
        raise ValueError(
            f"X1 and X2 must be 2-D arrays of the same shape (n_pairs, n_features), got "
            f"{X1.shape} and {X2.shape}."
        )
    if X1.shape[0] == 0:
        raise ValueError("no pairs given (n_pairs = 0).")
    if X1.shape[1] != n_features:
        raise ValueError(f"X1, X2 have {X1.shape[1]} features; the mapping takes {n_features}.")
    dtype = float_dtype(X1, X2)
    X1 = np.ascontiguousarray(X1, dtype=dtype)
    X2 = np.ascontiguousarray(X2, dtype=dtype)
    if not (np.isfinite(X1).all() and np.isfinite(X2).all()):
        raise ValueError("X1 or X2 contains NaN or infinity.")
    s = check_pair_labels(s, X1.shape[0], require_both=False).astype(dtype)
    return X1, X2, s


def _trusted_pairs(X1, X2, s):
    """The layout of :func:`_check_pairs` (C-contiguous, float dtype, s in it), no checks."""
    dtype = float_dtype(X1, X2)
    return (np.ascontiguousarray(X1, dtype=dtype), np.ascontiguousarray(X2, dtype=dtype),
            np.asarray(s).astype(dtype))


class MappedObjective:
    """``f(theta) -> (J, G)``: mean pair loss of the mapped pairs plus ``lam/2 |theta - theta0|^2``.

    Parameters
    ----------
    embedding_cost_grad : callable
        ``(a, b, s) -> (J_mean, dJ/da, dJ/db)`` with the gradients of the *mean* loss over the
        given pairs, e.g. ``metricfit.losses.tsml.embedding_cost_grad`` (bind extra
        hyper-parameters with ``functools.partial``).
    mapping : Mapping
        E.g. ``Linear(d, k)``, ``Tanh(d, k)``, ``MLP(d, m, k)``.
    X1, X2 : array-like of shape (n_pairs, n_features)
        First and second vector of each pair. Float32 is kept, anything else becomes float64.
    s : array-like of shape (n_pairs,)
        +1 similar, -1 dissimilar ({0, 1} also accepted, 1 = similar).
    lam : float, default=0.0
        Weight decay on all parameters (weights and biases).
    theta0 : array-like of shape (n_params,), default=None (zeros)
    chunk_size : int, default=8192
        Pairs per chunk: temporaries are O(chunk_size * (n_hidden + k)).

    Notes
    -----
    ``theta`` may have any shape with ``mapping.n_params`` entries (e.g. (k, d) for
    ``Linear``); it is cast to the data dtype and G comes back in its shape. J and G have the
    data dtype. The loss returns gradients of its mean over a chunk of m pairs; each chunk's
    contribution is rescaled by m / n, so the result is the mean over all n pairs whatever
    the chunking. Batch protocol: ``n_pairs``, ``labels``, ``batch(theta, indices)``.

    Examples
    --------
    The TSML loss through a tanh layer (seed 004's TSML-Nonlin); the gradient agrees with
    central differences:

    >>> import numpy as np
    >>> from metricfit.losses import tsml
    >>> from metricfit.mappings import Linear, MappedObjective, Tanh
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.normal(size=(2, 20, 4))  # 20 pairs of 4-d vectors
    >>> s = np.repeat([1, -1], 10)
    >>> mapping = Tanh(4, 2)
    >>> f = MappedObjective(tsml.embedding_cost_grad, mapping, X1, X2, s, lam=0.1)
    >>> theta = mapping.init(random_state=0)  # W (2, 4) and h (2,), flat
    >>> J, G = f(theta)
    >>> def central(f, x, h=1e-6):  # central differences of J, entry by entry
    ...     E = h * np.eye(x.size)
    ...     return np.array([f(x + e)[0] - f(x - e)[0] for e in E]) / (2 * h)
    >>> theta.shape, bool(np.allclose(G, central(f, theta), atol=1e-6))
    ((10,), True)

    Through a :class:`~metricfit.mappings.Linear` map it is the loss's own objective:

    >>> A = rng.normal(size=(2, 4))
    >>> linear = MappedObjective(tsml.embedding_cost_grad, Linear(4, 2), X1, X2, s, lam=0.1)
    >>> bool(np.allclose(linear(A)[1], tsml.objective(X1, X2, s, lam=0.1)(A)[1]))
    True

    References
    ----------
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """

    def __init__(self, embedding_cost_grad, mapping, X1, X2, s, lam=0.0, theta0=None,
                 chunk_size=CHUNK_SIZE, validated=False):
        if validated:  # checked at the estimator's edge: layout and dtype only
            self.X1, self.X2, s = _trusted_pairs(X1, X2, s)
        else:
            self.X1, self.X2, s = _check_pairs(X1, X2, s, mapping.n_features)
        self._init_common(embedding_cost_grad, mapping, s, lam, theta0, chunk_size)

    def _init_common(self, embedding_cost_grad, mapping, s, lam, theta0, chunk_size):
        """Loss, mapping, labels (in the data dtype), lam, theta0 and the chunk size."""
        if not callable(embedding_cost_grad):
            raise ValueError("embedding_cost_grad must be a callable (a, b, s) -> (J, Ga, Gb).")
        self.embedding_cost_grad, self.mapping, self.labels = embedding_cost_grad, mapping, s
        self.n_pairs, self.n_features = s.shape[0], mapping.n_features
        self.dtype, self.n_params = s.dtype, mapping.n_params
        self.lam = float(lam)
        if not self.lam >= 0:
            raise ValueError(f"lam must be >= 0, got {lam}.")
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, Integral) or chunk_size < 1:
            raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}.")
        self.chunk_size = int(chunk_size)
        if theta0 is None:
            self.theta0 = np.zeros(self.n_params, dtype=self.dtype)
        else:
            self.theta0 = np.asarray(theta0, dtype=self.dtype).reshape(-1)
            if self.theta0.size != self.n_params:
                raise ValueError(f"theta0 has {self.theta0.size} entries; the mapping has "
                                 f"n_params = {self.n_params}.")

    def __call__(self, theta):
        return self._evaluate(theta, self.X1, self.X2, self.labels)

    def batch(self, theta, indices):
        """The same objective (mean loss plus regulariser) over the pairs ``indices`` only."""
        indices = np.asarray(indices)
        if indices.ndim != 1 or indices.size == 0 or indices.dtype.kind not in "iu":
            raise ValueError(f"indices must be a non-empty 1-D integer array, got {indices!r}.")
        return self._evaluate(theta, self.X1[indices], self.X2[indices], self.labels[indices])

    def _evaluate(self, theta, X1, X2, s):
        def data_cost_grad(theta):
            n, forward, backward = X1.shape[0], self.mapping.forward, self.mapping.backward
            total, G = 0.0, np.zeros(self.n_params, dtype=self.dtype)
            for start in range(0, n, self.chunk_size):
                stop = start + self.chunk_size
                a, cache_a = forward(theta, X1[start:stop])  # (m, k): the first branch
                b, cache_b = forward(theta, X2[start:stop])  # (m, k): the second, same theta
                J, dJda, dJdb = self.embedding_cost_grad(a, b, s[start:stop])  # mean over m
                dtheta = backward(theta, cache_a, dJda)  # (n_params,)
                dtheta += backward(theta, cache_b, dJdb)  # shared weights: the branches add
                m = a.shape[0]
                dtheta *= m  # the loss averaged over the m pairs of the chunk: back to sums
                total += float(J) * m
                G += dtheta
            return total, G

        return self._finish(theta, data_cost_grad, X1.shape[0])

    def _finish(self, theta, data_cost_grad, n):
        """Mean over the n pairs plus the regulariser, from ``data_cost_grad(theta) ->
        (sum_i J_i, sum_i dJ_i/dtheta)``; J and G in the data dtype, G in theta's shape."""
        theta = np.asarray(theta)
        if theta.size != self.n_params:
            raise ValueError(f"theta has {theta.size} entries; the mapping has "
                             f"n_params = {self.n_params}.")
        shape, theta = theta.shape, np.ascontiguousarray(theta.reshape(-1), dtype=self.dtype)
        total, G = data_cost_grad(theta)
        G = np.asarray(G, dtype=self.dtype) / n
        J, G = add_penalty(total / n, G, theta, self.lam, self.theta0)
        return self.dtype.type(J), G.reshape(shape)


def _mapped_pair_block(E, index, s, R, embedding_cost_grad):
    """Pass 2 over one chunk of index pairs: the loss on the gathered embeddings, its
    per-pair gradients (times m: the loss returns those of its mean over the chunk)
    scatter-added onto R; returns ``(sum_i J_i,)``."""
    first, second = np.ascontiguousarray(index[:, 0]), np.ascontiguousarray(index[:, 1])
    m = index.shape[0]
    J, dJda, dJdb = embedding_cost_grad(E.take(first, axis=0), E.take(second, axis=0), s)
    scatter_add_rows(R, first, np.ascontiguousarray(dJda, dtype=R.dtype), float(m))
    scatter_add_rows(R, second, np.ascontiguousarray(dJdb, dtype=R.dtype), float(m))
    return (float(J) * m,)


class _MappingPasses:
    """Pass 1 and pass 3 of a mapping: ``f(X_block)`` and its backward for a block of R
    (the block is forwarded again: no cache of the whole point set is kept)."""

    def __init__(self, mapping):
        self.mapping = mapping

    def embed(self, X_block, theta):
        return self.mapping.transform(theta, X_block)  # (m, k)

    def back(self, R_block, X_block, theta):
        _, cache = self.mapping.forward(theta, X_block)
        return self.mapping.backward(theta, cache, R_block)  # (n_params,)


class IndexMappedObjective(MappedObjective):
    """:class:`MappedObjective` over index pairs into ``points`` (n_points, d).

    The mapping runs on the points, not on the pairs: pass 1 embeds every point once, pass 2
    scores the gathered embeddings of each chunk of pairs and scatter-adds dJ/da, dJ/db onto
    the points (R, n_points x k), pass 3 back-propagates R through the mapping block by block
    of points (:mod:`metricfit.pairs.index`). Per call: two forwards and one backward over
    the points plus O(k) per pair, instead of two forwards and two backwards per pair. Same
    cost and gradient as :class:`MappedObjective` on ``(points[index[:, 0]],
    points[index[:, 1]])``; same batch protocol.

    Examples
    --------
    The contrastive loss through an MLP, six index pairs over six points:

    >>> import numpy as np
    >>> from metricfit.losses import contrastive
    >>> from metricfit.mappings import MLP
    >>> from metricfit.mappings.objective import IndexMappedObjective, MappedObjective
    >>> rng = np.random.default_rng(0)
    >>> points = rng.normal(size=(6, 4))
    >>> index = np.array([[0, 1], [2, 3], [4, 5], [0, 5], [1, 2], [3, 4]])
    >>> s = np.array([1, 1, 1, -1, -1, -1])
    >>> mlp = MLP(4, 3, 2)
    >>> loss = contrastive.embedding_cost_grad
    >>> f = IndexMappedObjective(loss, mlp, points, index, s)
    >>> vectors = MappedObjective(loss, mlp, points[index[:, 0]], points[index[:, 1]], s)
    >>> theta = mlp.init(random_state=0)
    >>> (J, G), (J_vec, G_vec) = f(theta), vectors(theta)
    >>> bool(np.isclose(J, J_vec) and np.allclose(G, G_vec))
    True
    """

    def __init__(self, embedding_cost_grad, mapping, points, index, s, lam=0.0, theta0=None,
                 chunk_size=CHUNK_SIZE, validated=False):
        points, index, s = check_index_pair_data(points, index, s, validated)
        if points.shape[1] != mapping.n_features:
            raise ValueError(f"points have {points.shape[1]} features; the mapping takes "
                             f"{mapping.n_features}.")
        self._init_common(embedding_cost_grad, mapping, s, lam, theta0, chunk_size)
        self.passes = make_passes(points, index, s, self.dtype, self.chunk_size)
        self._mapping_passes = _MappingPasses(mapping)

    def __call__(self, theta):
        return self._evaluate_passes(theta, self.passes)

    def batch(self, theta, indices):
        return self._evaluate_passes(theta, self.passes.subset(np.asarray(indices)))

    def _evaluate_passes(self, theta, passes):
        def data_cost_grad(theta):
            (total,), G = passes.run(theta, self._mapping_passes.embed, _mapped_pair_block,
                                     (self.embedding_cost_grad,), self.mapping.n_components,
                                     back=self._mapping_passes.back)
            return total, G

        return self._finish(theta, data_cost_grad, passes.index.shape[0])


__getattr__ = deprecated_aliases(__name__, {"l2_normalise": ("l2_normalize", l2_normalize)})
