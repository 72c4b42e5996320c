r"""Logistic Discriminant based Metric Learning (LDML) cost and gradient.

Seed 001 (Guillaumin et al., ICCV 2009), section 2.3, eqs. 2-4. Unlike the linear-map losses,
the parameters are a Mahalanobis matrix ``M`` (d, d) and a bias ``b``. For a pair
``(x, y, s)`` with ``delta = x - y`` and the target ``t = (1 + s) / 2`` (1 similar, 0 not):

.. math::

    p_i = \sigma(b - d_M(x_i, y_i)), \qquad d_M = \delta_i^T M \delta_i           (eq. 2)
    \mathcal L = \sum_i t_i \ln p_i + (1 - t_i) \ln(1 - p_i)                      (eq. 3)

and we minimise the mean negative log-likelihood plus a ridge on M:

.. math::

    J(M, b) = -\frac1n \mathcal L + \frac\lambda2 \|M\|_F^2
            = \frac1n \sum_i \operatorname{softplus}(-s_i u_i) + \frac\lambda2 \|M\|_F^2,
    \qquad u_i = b - \delta_i^T M \delta_i,

since ``-ln sigma(u) = softplus(-u)`` and ``-ln(1 - sigma(u)) = softplus(u)`` (``t`` is 0 or 1).

Derivation, and the sign of eq. 4
---------------------------------
``dL/du_i = t_i (1 - p_i) - (1 - t_i) p_i = t_i - p_i``, ``du_i/dM = -delta_i delta_i^T`` and
``du_i/db = 1``, hence

.. math::

    \frac{\partial J}{\partial M} = \frac1n \sum_i (t_i - p_i)\,\delta_i\delta_i^T + \lambda M,
    \qquad
    \frac{\partial J}{\partial b} = \frac1n \sum_i (p_i - t_i).

The paper prints eq. 4 as ``grad L = sum_n (t_n - p_n) X_n`` for ``p_n = sigma(b - W^T X_n)``:
that is the gradient for ``p = sigma(W^T X)``; with the minus sign of eq. 2 the gradient of
L w.r.t. W is ``-sum_n (t_n - p_n) X_n`` (ascending the printed one *lowers* the likelihood).
The finite-difference tests and a descent test decide for the sign above. Per pair the weight
is ``w_i = t_i - p_i = s_i sigma(s_i (delta_i^T M delta_i - b))``.

M need not be symmetric: the distance is taken with M as given, ``delta^T M delta``, which
depends only on the symmetric part of M. ``delta delta^T`` is symmetric, so the data term of
the gradient is symmetric (we return it exactly symmetric); a non-symmetric M only gets
``lam M`` from the regulariser, which shrinks its antisymmetric part to zero.

The prepared objective (LDML's bound)
-------------------------------------
With ``D = X1 - X2`` (n, d) formed once, one call is two (n x d x d) GEMMs: ``DM = D M``, then
the distances ``rowsum(DM * D)`` and weights fused in a numba kernel that overwrites DM with
``w * D``, then ``G_M = (w * D)^T D``. Pairs go in chunks: temporaries are
O(chunk_size * d + d * d). The log-sigmoid and sigmoid are written stably (no overflow for
any ``u``); accumulators are float64 for float32 data.
"""

import numpy as np

from ..pairs import check_points
from ..pairs.checks import float_dtype
from ..pairs.index import IndexPairs, pair_columns, scatter_by_points, score_index_pairs
from ..parallel import get_threads
from ._index import check_index_pair_data, make_passes
from ._ldml_kernels import (
    index_scatter_sides,
    index_scatter_sides_parallel,
    index_weight_rows,
    index_weight_rows_parallel,
    index_weights_scatter,
    ordered_sums2,
    probability,
    weight_rows,
    weight_rows_parallel,
)
from ._linear import CHUNK_SIZE, check_pair_data
from ._rows import run_rows, tiny
from ._scratch import Scratch, add_product, product
from .penalty import add_penalty

__all__ = ["cost_grad", "objective", "index_objective", "pair_probability", "pack", "unpack",
           "metric_embedding", "metric_distances"]


def _weights_inplace(DM, D, s, b):
    """Every row of DM = D M -> w_i delta_i on every core; return (sum_i J_i, sum_i w_i),
    summed in pair order."""
    out = np.empty((D.shape[0], 2))
    run_rows(weight_rows, D.shape[0], D.shape[1], DM, D, s, b, tiny(DM.dtype), out,
             driver=weight_rows_parallel)
    return ordered_sums2(out)


def pack(M, b):
    """The flat parameter vector ``theta = [M.ravel(), b]`` (length d * d + 1)."""
    M = np.asarray(M)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be a square (d, d) matrix, got shape {M.shape}.")
    return np.concatenate([M.ravel(), np.asarray(b, dtype=M.dtype).reshape(1)])


def unpack(theta, d):
    """``(M, b)`` from the flat ``theta`` of length d * d + 1 (M is a view of theta)."""
    theta = np.asarray(theta)
    if theta.ndim != 1 or theta.size != d * d + 1:
        raise ValueError(f"theta must be flat of length d * d + 1 = {d * d + 1}, got shape "
                         f"{theta.shape}.")
    return theta[:-1].reshape(d, d), theta[-1]


def _check_params(M, b, d, dtype):
    M = np.asarray(M)
    if M.ndim != 2 or M.shape != (d, d):
        raise ValueError(f"M must have shape ({d}, {d}) (square, d = n_features), got "
                         f"{M.shape}.")
    b = np.asarray(b)
    if b.size != 1:
        raise ValueError(f"b must be a scalar, got shape {b.shape}.")
    b = float(b.reshape(()))
    if not np.isfinite(b):
        raise ValueError(f"b must be finite, got {b}.")
    return np.ascontiguousarray(M, dtype=dtype), b


def _check_lam(lam):
    lam = float(lam)
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam}.")
    return lam


def _data_cost_grad(M, b, s, chunk_size, D=None, X1=None, X2=None, scratch=None):
    """sum_i J_i, sum_i dJ_i/dM (symmetric) and sum_i w_i; no regulariser, no 1/n.

    From the prepared differences ``D`` (n, d), or else from the pairs X1, X2, forming each
    chunk's differences on the fly. ``scratch``: the products' arrays, kept between calls
    (:mod:`._scratch`).
    """
    total, sum_w = 0.0, 0.0
    GM = None  # (d, d), a new array
    n = s.shape[0]
    for start in range(0, n, chunk_size):
        stop = start + chunk_size
        delta = X1[start:stop] - X2[start:stop] if D is None else D[start:stop]  # (m, d)
        DM = product(delta, M, scratch, "DM")  # (m, d)
        t, w = _weights_inplace(DM, delta, s[start:stop], b)
        total += t
        sum_w += w
        GM = add_product(GM, DM.T, delta, scratch)  # sum_i w_i delta_i delta_i^T
    return total, _symmetrise(np.zeros_like(M) if GM is None else GM), sum_w


def _symmetrise(GM):
    """(GM + GM^T) / 2 in place: the data term is symmetric, this makes it exactly so."""
    GM += GM.T
    GM *= 0.5
    return GM


def _finish(total, GM, sum_w, M, lam, n, dtype):
    """Mean, regulariser; (J, GM, gb) in the data dtype."""
    GM /= n
    J, GM = add_penalty(total / n, GM, M, lam)
    return dtype.type(J), GM, dtype.type(-sum_w / n)


def cost_grad(M, b, X1, X2, s, lam=0.0, chunk_size=CHUNK_SIZE):
    """LDML cost (mean negative log-likelihood of seed 001 eq. 3 plus ``lam/2 ||M||^2``) and
    gradients, stateless.

    Forms ``delta = x - y`` chunk by chunk; :func:`objective` forms ``D = X1 - X2`` once.

    Parameters
    ----------
    M : ndarray of shape (d, d)
        Mahalanobis matrix (need not be symmetric; the distance is ``delta^T M delta``).
    b : float
        Bias (threshold) of eq. 2.
    X1, X2 : ndarray of shape (n_pairs, d)
    s : ndarray of shape (n_pairs,)
        +1 similar, -1 dissimilar ({0, 1} also accepted, 1 = similar).
    lam : float, default=0.0
        Ridge on M (b is not regularised).
    chunk_size : int, default=8192
        Pairs per chunk: temporaries are O(chunk_size * d + d * d).

    Returns
    -------
    J : float (the data dtype)
    GM : ndarray of shape (d, d), symmetric in its data term:
        ``1/n sum_i (t_i - p_i) delta_i delta_i^T + lam M``
    gb : float, ``1/n sum_i (p_i - t_i)``

    References
    ----------
    - Guillaumin, Verbeek and Schmid, "Is that you? Metric Learning Approaches for Face
      Identification", ICCV 2009 (seed 001).
    """
    X1, X2, s = check_pair_data(X1, X2, s)
    lam = _check_lam(lam)
    M, b = _check_params(M, b, X1.shape[1], X1.dtype)
    total, GM, sum_w = _data_cost_grad(M, b, s, int(chunk_size), X1=X1, X2=X2)
    return _finish(total, GM, sum_w, M, lam, X1.shape[0], X1.dtype)


def pair_probability(M, b, X1, X2, chunk_size=CHUNK_SIZE):
    """``p_i = sigma(b - (x_i - y_i)^T M (x_i - y_i))``, the probability that pair i is similar
    (seed 001 eq. 2); an (n_pairs,) array of the data dtype.

    References
    ----------
    - Guillaumin, Verbeek and Schmid, "Is that you? Metric Learning Approaches for Face
      Identification", ICCV 2009 (seed 001).
    """
    dtype = float_dtype(np.asarray(X1), np.asarray(X2))
    X1 = check_points(X1, dtype=dtype, what="X1")
    X2 = check_points(X2, dtype=dtype, what="X2")
    if X1.shape != X2.shape:
        raise ValueError(f"X1 and X2 must be 2-D arrays of the same shape (n_pairs, "
                         f"n_features), got {X1.shape} and {X2.shape}.")
    M, b = _check_params(M, b, X1.shape[1], dtype)
    p = np.empty(X1.shape[0], dtype=dtype)
    for start in range(0, X1.shape[0], int(chunk_size)):
        delta = X1[start:start + chunk_size] - X2[start:start + chunk_size]
        probability(delta @ M, delta, b, p[start:start + chunk_size])
    return p


class LDMLObjective:
    """LDML ``f(theta) -> (J, g)`` on the flat ``theta = [M.ravel(), b]``, ``D = X1 - X2``
    prepared.

    Per call: ``D M`` and ``(w * D)^T D`` (two n x d x d GEMMs) with the fused kernel between.
    ``g`` is ``[dJ/dM ravelled, dJ/db]`` in the data dtype. The batch protocol: ``n_pairs``,
    ``labels`` (n_pairs,) in {-1, +1} and ``batch(theta, indices) -> (J, g)``, the same
    objective (mean cost plus regulariser) over the pairs ``indices`` only.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.losses import ldml
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.normal(size=(2, 20, 4))
    >>> s = np.repeat([1, -1], 10)
    >>> f = ldml.LDMLObjective(X1, X2, s, lam=0.1)
    >>> theta = rng.normal(size=f.n_params)  # [M.ravel(), b]: 4 x 4 + 1
    >>> J, g = f(theta)
    >>> def central(f, x, h=1e-6):  # central differences of J, entry by entry
    ...     E = h * np.eye(x.size).reshape((x.size,) + x.shape)
    ...     return np.array([f(x + e)[0] - f(x - e)[0] for e in E]).reshape(x.shape) / (2 * h)
    >>> bool(np.allclose(g, central(f, theta), atol=1e-6))
    True
    >>> M, b = ldml.unpack(theta, 4)
    >>> bool(np.allclose(g[-1], ldml.cost_grad(M, b, X1, X2, s, lam=0.1)[2]))
    True

    At ``M = 0``, ``b = 0`` every pair is similar with probability 1/2, so ``J = ln 2``:

    >>> bool(np.isclose(f(np.zeros(17))[0], np.log(2)))
    True
    """

    def __init__(self, X1, X2, s, lam=0.0, chunk_size=CHUNK_SIZE):
        X1, X2, s = check_pair_data(X1, X2, s)
        self.lam = _check_lam(lam)
        self.X1, self.X2, self.labels = X1, X2, s
        self.n_pairs, self.n_features, self.dtype = X1.shape[0], X1.shape[1], X1.dtype
        self.n_params = self.n_features ** 2 + 1
        self.chunk_size = int(chunk_size)
        self.D = X1 - X2  # (n, d)
        self._scratch = Scratch()  # the per-call products' arrays, kept between calls

    def __call__(self, theta):
        return self._evaluate(theta, self.D, self.labels)

    def batch(self, theta, indices):
        indices = np.asarray(indices)
        return self._evaluate(theta, self.D[indices], self.labels[indices])

    def _evaluate(self, theta, D, s):
        return self._finish_flat(theta, lambda M, b: _data_cost_grad(
            M, b, s, self.chunk_size, D=D, scratch=self._scratch), s.shape[0])

    def _finish_flat(self, theta, data_cost_grad, n):
        """``(J, g)`` from ``data_cost_grad(M, b) -> (sum_i J_i, sum_i dJ_i/dM, sum_i w_i)``."""
        M, b = unpack(theta, self.n_features)
        M, b = _check_params(M, b, self.n_features, self.dtype)
        total, GM, sum_w = data_cost_grad(M, b)
        J, GM, gb = _finish(total, GM, sum_w, M, self.lam, n, self.dtype)
        return J, np.concatenate([GM.ravel(), np.reshape(gb, 1)])


def objective(X1, X2, s, lam=0.0, chunk_size=CHUNK_SIZE):
    """Prepare the LDML objective once per data set; return ``f(theta) -> (J, g)``.

    ``theta`` is flat, ``[M.ravel(), b]`` (see :func:`pack` / :func:`unpack`); same cost and
    gradient as :func:`cost_grad` (a test ties them).
    """
    return LDMLObjective(X1, X2, s, lam=lam, chunk_size=chunk_size)


def metric_embedding(X_block, M):
    """Pass 1 over index pairs: ``[X M, X]`` (m, 2d) for a block of points, so that the
    difference of two rows is ``[delta M, delta]``."""
    return np.hstack([X_block @ M, X_block])


def _index_pair_block(E, index, s, R, b):
    """Pass 2 over one chunk of index pairs; returns ``(sum_i J_i, sum_i w_i)``.

    ``[delta_i M, delta_i]`` is the difference of two rows of E: O(d) per pair, where the
    pairs of vectors need the O(m d^2) GEMM ``D M``. The weights ``w_i delta_i`` are
    scattered onto R with ``+`` at p_i and ``-`` at q_i, so that ``R^T X = sum_i w_i
    delta_i delta_i^T`` (:func:`index_weight_rows`, :func:`index_scatter_sides`): on every
    core, each row of R receiving its additions in pair order, the sums in pair order.
    """
    first, second = pair_columns(index)
    out = np.empty((first.shape[0], 2))  # (m, 2): J_i, w_i
    if get_threads() == 1:  # one pass, the rows of E read once a pair; the same bits
        index_weights_scatter(E, first, second, s, b, R, out)
        return ordered_sums2(out)
    run_rows(index_weight_rows, first.shape[0], E.shape[1], E, first, second, s, b, out,
             driver=index_weight_rows_parallel)
    scatter_by_points(index_scatter_sides, first, second, R.shape[0], E, first, second, out, R,
                      driver=index_scatter_sides_parallel, chunk=index)
    return ordered_sums2(out)


class LDMLIndexObjective(LDMLObjective):
    """LDML ``f(theta) -> (J, g)`` over index pairs into ``points`` (n_points, d).

    Per call: ``[X M, X]`` over the points (one n_points x d x d GEMM), O(d) per pair for
    the distances and weights, and ``G_M = R^T X`` (one n_points x d x d GEMM) with R the
    scatter of ``w_i delta_i`` (:mod:`metricfit.losses._index`): O(n_points d^2 + n_pairs d)
    instead of O(n_pairs d^2). Same cost and gradient as :class:`LDMLObjective` on the pairs
    ``(points[index[:, 0]], points[index[:, 1]])``; same batch protocol.

    Examples
    --------
    Six pairs over six points give the cost and gradient of the pairs of vectors:

    >>> import numpy as np
    >>> from metricfit.losses import ldml
    >>> rng = np.random.default_rng(0)
    >>> points = rng.normal(size=(6, 4))
    >>> index = np.array([[0, 1], [2, 3], [4, 5], [0, 5], [1, 2], [3, 4]])
    >>> s = np.array([1, 1, 1, -1, -1, -1])
    >>> f = ldml.LDMLIndexObjective(points, index, s, lam=0.1)
    >>> vectors = ldml.LDMLObjective(points[index[:, 0]], points[index[:, 1]], s, lam=0.1)
    >>> theta = rng.normal(size=f.n_params)
    >>> (J, g), (J_vec, g_vec) = f(theta), vectors(theta)
    >>> bool(np.isclose(J, J_vec) and np.allclose(g, g_vec))
    True
    >>> J_batch, g_batch = f.batch(theta, [0, 3])  # a mini-batch of pairs 0 and 3
    >>> bool(np.allclose(g_batch, vectors.batch(theta, [0, 3])[1]))
    True
    """

    def __init__(self, points, index, s, lam=0.0, chunk_size=CHUNK_SIZE):
        points, index, s = check_index_pair_data(points, index, s)
        self.lam = _check_lam(lam)
        self.labels, self.dtype = s, s.dtype
        self.n_pairs, self.n_features = index.shape[0], points.shape[1]
        self.n_params = self.n_features ** 2 + 1
        self.chunk_size = int(chunk_size)
        self.passes = make_passes(points, index, s, self.dtype, self.chunk_size)

    def __call__(self, theta):
        return self._evaluate_passes(theta, self.passes)

    def batch(self, theta, indices):
        return self._evaluate_passes(theta, self.passes.subset(np.asarray(indices)))

    def _evaluate_passes(self, theta, passes):
        def data_cost_grad(M, b):
            (total, sum_w), GM = passes.run(M, metric_embedding, _index_pair_block, (b,),
                                            self.n_features)
            return total, _symmetrise(GM), sum_w

        return self._finish_flat(theta, data_cost_grad, passes.index.shape[0])


def index_objective(points, index, s, lam=0.0, chunk_size=CHUNK_SIZE):
    """Prepare the LDML objective over index pairs into ``points``; return
    ``f(theta) -> (J, g)`` on the flat ``theta = [M.ravel(), b]`` (see
    :class:`LDMLIndexObjective`)."""
    return LDMLIndexObjective(points, index, s, lam=lam, chunk_size=chunk_size)


def metric_distances(M, pairs):
    """``d_M(x_i, y_i) = delta_i^T M delta_i`` (n_pairs,) for validated vector pairs or
    :class:`~metricfit.pairs.IndexPairs`: the prepared form of each, as for the objective
    (:func:`objective` / :func:`index_objective`). Vector pairs: ``rowsum((D M) * D)`` with
    ``D = X1 - X2``; index pairs: from the rows ``[x M, x]`` of the points
    (:func:`metric_embedding`), O(d) per pair after one GEMM over the points."""
    if isinstance(pairs, IndexPairs):
        d = M.shape[0]

        def rowwise(first, second):
            diff = first - second  # (m, 2d): [delta M, delta]
            return np.einsum("ij,ij->i", diff[:, :d], diff[:, d:])

        return score_index_pairs(
            lambda X: metric_embedding(X, M.astype(X.dtype)), rowwise, pairs)
    D = pairs[:, 0] - pairs[:, 1]
    return np.einsum("ij,ij->i", D @ M.astype(D.dtype), D)
