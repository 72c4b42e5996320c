r"""Triangular Similarity Metric Learning (TSML) cost and gradient.

Seed 002 (Zheng et al., FG 2015) eqs. 4-10; seed 004 eqs. 1-4. For a pair ``(x, y, s)``,
``a = A x``, ``b = A y`` and the diagonal ``c = a + s b``:

.. math::

    J_i = \tfrac12 \|a\|^2 + \tfrac12 \|b\|^2 - \|c\| + 1                        (eq. 4)
    \partial J_i/\partial a = a - c/\|c\|,  \quad
    \partial J_i/\partial b = b - s\,c/\|c\|                                      (eq. 6)

and over n pairs with the regulariser (eqs. 9-10)

.. math::

    J = \frac1n \sum_i J_i + \frac\lambda2 \|A - A_0\|_F^2, \qquad
    \frac{\partial J}{\partial A} = \frac1n \sum_i \big[(a_i - \hat c_i) x_i^T
          + (b_i - s_i \hat c_i) y_i^T\big] + \lambda (A - A_0).

The prepared objective (why the gradient is written by hand)
------------------------------------------------------------
Since ``c_i = A (x_i + s_i y_i) = A u_i`` and
``sum_i (|a_i|^2 + |b_i|^2) = tr(A S A^T)`` with the Gram sum ``S = sum_i x_i x_i^T + y_i y_i^T``,

.. math::

    J = \frac1n\Big[\tfrac12 \operatorname{tr}(A S A^T) - \sum_i \|A u_i\|\Big] + 1 + \ldots,
    \qquad
    \frac{\partial J}{\partial A} = \frac1n\Big[A S - \sum_i \hat c_i u_i^T\Big] + \ldots

``U = X1 + s Y`` and ``S`` do not change during a fit, so one iteration costs two (n x d x k)
GEMMs (``C = U A^T`` and ``C_hat^T U``) plus one small (k x d x d) product ``A S``: half the
matrix products of the naive gradient (``cost_grad``) and of autograd, which need four.

Zero diagonals
--------------
``|c|`` is not differentiable at ``c = 0`` (e.g. ``A u_i = 0``). There we take ``c/|c| := 0``,
the minimum-norm subgradient, so cost and gradient stay finite: the pair then contributes
``1/2 |a|^2 + 1/2 |b|^2 + 1`` and gradient ``a x^T + b y^T``.
"""

import numpy as np
from numba import njit, prange

from ._index import IndexPairObjective
from ._linear import (
    CHUNK_SIZE,
    PreparedObjective,
    check_components,
    check_pair_data,
    composed_cost_grad,
    cosine_scores,
)
from ._linear import embedding_cost_grad as _embedding_cost_grad
from ._rows import IndexRows, PairKernel, ordered_sum, row_sumsq, run_rows
from ._scratch import product
from ._simd_rows import pair_dot_narrow, pair_sumsq_narrow
from ._spec import LinearPath, PairLoss
from .penalty import add_penalty

__all__ = ["cost_grad", "objective", "index_objective", "embedding_cost_grad", "pair_score",
           "DEFAULTS"]


@njit(cache=True, nogil=True, inline="always")
def _cost_and_inverse(X, i, Y, j, si):  # pragma: no cover (compiled)
    """``(J, 1/|c|)`` of one pair from its rows ``a = X[i]``, ``b = Y[j]`` (eq. 4, ``c = a + s
    b``; 1/|c| := 0 at c = 0): the three sums in float64 on vector lanes in a fixed order,
    each term in the rows' dtype (:mod:`metricfit.losses._simd_rows`)."""
    aa = pair_dot_narrow(X, i, X, i)
    bb = pair_dot_narrow(Y, j, Y, j)
    norm_c = np.sqrt(pair_sumsq_narrow(X, i, Y, j, si))
    return 0.5 * aa + 0.5 * bb - norm_c + 1.0, (1.0 / norm_c if norm_c > 0.0 else 0.0)


@njit(cache=True, nogil=True)
def _grad_rows(P1, P2, s, out, lo, hi):  # pragma: no cover (compiled)
    """Rows lo..hi-1: a_i -> a_i - c_i/|c_i|, b_i -> b_i - s_i c_i/|c_i| in place and
    ``out[i] = J_i`` (eq. 4), in float64."""
    k = P1.shape[1]
    for i in range(lo, hi):
        si = s[i]
        out[i], inv = _cost_and_inverse(P1, i, P2, i, si)
        for j in range(k):
            a = P1[i, j]
            b = P2[i, j]
            unit = (a + si * b) * inv
            P1[i, j] = a - unit
            P2[i, j] = b - si * unit


@njit(cache=True, nogil=True, parallel=True)
def _grad_rows_parallel(P1, P2, s, out, n_rows, block):  # pragma: no cover
    """:func:`_grad_rows` block by block on numba's threads (``_rows.run_rows``)."""
    for t in prange(-(-n_rows // block)):
        _grad_rows(P1, P2, s, out, t * block, min(n_rows, t * block + block))


@njit(cache=True, nogil=True)
def _normalise_rows(C, out, lo, hi):  # pragma: no cover (compiled)
    """Rows lo..hi-1 of C: c_i -> c_i/|c_i| in place (0 where c_i = 0), ``out[i] = |c_i|``
    (|c_i|^2 summed in float64 on vector lanes, :func:`metricfit.losses._rows.row_sumsq`)."""
    k = C.shape[1]
    for i in range(lo, hi):
        norm_c = np.sqrt(row_sumsq(C, i))  # float64, vector lanes in a fixed order
        out[i] = norm_c
        inv = 1.0 / norm_c if norm_c > 0.0 else 0.0
        for j in range(k):
            C[i, j] *= inv


@njit(cache=True, nogil=True, parallel=True)
def _normalise_rows_parallel(C, out, n_rows, block):  # pragma: no cover
    """:func:`_normalise_rows` block by block on numba's threads (``_rows.run_rows``)."""
    for t in prange(-(-n_rows // block)):
        _normalise_rows(C, out, t * block, min(n_rows, t * block + block))


@njit(cache=True, nogil=True)
def _index_pair_rows(E, first, second, s, out, W, lo, hi):  # pragma: no cover (compiled)
    """Index pairs lo..hi-1, ``a_i = E[first[i]]``, ``b_i = E[second[i]]`` read in place:
    ``out[i] = J_i`` and ``W[i, 0] = 1/|c_i|``, as :func:`_grad_rows` computes them (same
    bits)."""
    for i in range(lo, hi):
        out[i], W[i, 0] = _cost_and_inverse(E, first[i], E, second[i], s[i])


@njit(cache=True, nogil=True, parallel=True)
def _index_pair_rows_parallel(E, first, second, s, out, W, n_rows, block):  # pragma: no cover
    """:func:`_index_pair_rows` block by block on numba's threads (``_rows.run_rows``)."""
    for t in prange(-(-n_rows // block)):
        _index_pair_rows(E, first, second, s, out, W, t * block, min(n_rows, t * block + block))


@njit(cache=True, nogil=True)
def _index_side_rows(E, first, second, s, W, R, order, lo, hi):  # pragma: no cover (compiled)
    """``R[p_i] += a_i - c_i/|c_i|`` (side 2i) and ``R[q_i] += b_i - s_i c_i/|c_i|`` (side 2i
    + 1) for the sides ``order[lo:hi]`` in that order: :func:`_grad_rows`'s expressions,
    rounded to R's dtype as its in-place rows were (same bits)."""
    g = np.empty_like(R[0])
    for t in range(lo, hi):
        e = order[t]
        i = e // 2
        p, q, si, inv = first[i], second[i], s[i], W[i, 0]
        if e % 2 == 0:
            for j in range(g.shape[0]):
                a = E[p, j]
                g[j] = a - (a + si * E[q, j]) * inv
            for j in range(g.shape[0]):
                R[p, j] += g[j]
        else:
            for j in range(g.shape[0]):
                b = E[q, j]
                g[j] = b - si * ((E[p, j] + si * b) * inv)
            for j in range(g.shape[0]):
                R[q, j] += g[j]


@njit(cache=True, nogil=True, parallel=True)
def _index_side_rows_parallel(E, first, second, s, W, R, order, cuts):  # pragma: no cover
    """:func:`_index_side_rows` run by run of sides (``cuts``) on numba's threads."""
    for t in prange(cuts.shape[0] - 1):
        _index_side_rows(E, first, second, s, W, R, order, cuts[t], cuts[t + 1])


# kernel(P1, P2, s) -> sum_i J_i on every core, summed in pair order (metricfit.losses._rows);
# over index pairs, the two passes of metricfit.losses._index (one scalar a pair: 1/|c_i|)
_embedding_grad_inplace = PairKernel(
    _grad_rows, driver=_grad_rows_parallel,
    index=IndexRows(_index_pair_rows, _index_side_rows, 1, _index_pair_rows_parallel,
                    _index_side_rows_parallel))


def _normalise_rows_inplace(C):
    """Every row c_i of C -> c_i/|c_i| on every core; return sum_i |c_i| (in row order)."""
    out = np.empty(C.shape[0])
    run_rows(_normalise_rows, C.shape[0], C.shape[1], C, out, driver=_normalise_rows_parallel)
    return ordered_sum(out)


def embedding_cost_grad(a, b, s, validated=False):
    """Mean TSML loss on embeddings ``(a, b)`` (n, k) and its gradients ``(J, dJ/da, dJ/db)``.

    Eq. 4 and 6 of seed 002, averaged over the pairs (no regulariser, no mapping).

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """
    return _embedding_cost_grad(_embedding_grad_inplace, a, b, s, validated)


def cost_grad(A, X1, X2, s, lam=0.0, A0=None, chunk_size=CHUNK_SIZE):
    """TSML cost and gradient (seed 002 eqs. 9-10), stateless.

    Computed by the generic composition (four GEMMs per chunk of pairs); use
    :func:`objective` inside a fit, which prepares the data once and needs two.

    Parameters
    ----------
    A : ndarray of shape (k, d)
    X1, X2 : ndarray of shape (n_pairs, d)
        First and second vector of each pair.
    s : ndarray of shape (n_pairs,)
        +1 similar, -1 dissimilar ({0, 1} also accepted, 1 = similar).
    lam : float, default=0.0
    A0 : ndarray of shape (k, d), default=None (zeros)
    chunk_size : int, default=8192
        Pairs per chunk: temporaries are O(chunk_size * k + k * d).

    Returns
    -------
    J : float (the data dtype)
    G : ndarray of shape (k, d), the data dtype

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """
    X1, X2, s = check_pair_data(X1, X2, s)
    A, A0 = check_components(A, X1.shape[1], X1.dtype, A0)
    total, G = composed_cost_grad(_embedding_grad_inplace, A, X1, X2, s, chunk_size)
    n = X1.shape[0]
    G /= n
    J, G = add_penalty(total / n, G, A, lam, A0)
    return X1.dtype.type(J), G


class TSMLObjective(PreparedObjective):
    """TSML ``f(A) -> (J, G)`` with ``U = X1 + s X2`` and ``S = X1^T X1 + X2^T X2`` prepared.

    Per call: ``C = U A^T`` and ``C_hat^T U`` (two n x d x k GEMMs) and ``A S`` (k x d x d).
    Holds U (n, d) and S (d, d); temporaries are O(chunk_size * k + k * d).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.normal(size=(2, 20, 4))  # 20 pairs of 4-d vectors
    >>> s = np.repeat([1, -1], 10)
    >>> A = rng.normal(size=(2, 4))
    >>> from metricfit.losses import tsml
    >>> f = tsml.TSMLObjective(X1, X2, s, lam=0.1)
    >>> J, G = f(A)
    >>> def central(f, A, h=1e-6):  # central differences of J, entry by entry
    ...     E = h * np.eye(A.size).reshape((A.size,) + A.shape)
    ...     return np.array([f(A + e)[0] - f(A - e)[0] for e in E]).reshape(A.shape) / (2 * h)
    >>> bool(np.allclose(G, central(f, A), atol=1e-6))
    True
    >>> bool(np.allclose(G, tsml.cost_grad(A, X1, X2, s, lam=0.1)[1]))  # the naive gradient
    True

    At ``A = 0`` every pair costs 1 (eq. 4 with ``a = b = c = 0``):

    >>> float(f(np.zeros((2, 4)))[0])
    1.0
    """

    def __init__(self, X1, X2, s, lam=0.0, A0=None, chunk_size=CHUNK_SIZE,
                 validated=False):
        X1, X2, s = check_pair_data(X1, X2, s, validated)
        super().__init__(X1, X2, s, lam, A0, chunk_size)
        self._embedding_kernel = _embedding_grad_inplace
        self.U = X1 + s[:, None] * X2  # (n, d)
        self.S = np.zeros((self.n_features, self.n_features), dtype=self.dtype)  # (d, d)
        for start in range(0, self.n_pairs, self.chunk_size):
            x1 = X1[start:start + self.chunk_size]
            x2 = X2[start:start + self.chunk_size]
            self.S += x1.T @ x1
            self.S += x2.T @ x2

    def _data_cost_grad(self, A):
        G = A @ self.S  # (k, d): sum_i a_i x_i^T + b_i y_i^T
        half_trace = 0.5 * float(np.vdot(A, G))  # 1/2 sum_i |a_i|^2 + |b_i|^2
        sum_norms = 0.0
        for start in range(0, self.n_pairs, self.chunk_size):
            u = self.U[start:start + self.chunk_size]  # (m, d)
            C = product(u, A.T, self._scratch, "C")  # (m, k), kept between calls
            sum_norms += _normalise_rows_inplace(C)
            G -= product(C.T, u, self._scratch, "sum")
        return half_trace - sum_norms + self.n_pairs, G  # + n: the "+1" of eq. 4 per pair


def objective(X1, X2, s, lam=0.0, A0=None, chunk_size=CHUNK_SIZE, validated=False):
    """Prepare the TSML objective once per data set; return ``f(A) -> (J, G)``.

    Same cost and gradient as :func:`cost_grad` (a test ties them), with half the matrix
    products per call. ``f`` accepts ``A`` as (k, d) or flat, as scipy's ``jac=True`` needs.
    """
    return TSMLObjective(X1, X2, s, lam=lam, A0=A0, chunk_size=chunk_size,
                         validated=validated)


def index_objective(points, index, s, lam=0.0, A0=None, chunk_size=CHUNK_SIZE,
                    validated=False):
    """The TSML objective over index pairs into ``points``; return ``f(A) -> (J, G)``.

    Pair i is ``(points[index[i, 0]], points[index[i, 1]])``; same cost and gradient as
    :func:`objective` on those pairs, in O(n_points k d + n_pairs k) per call: the points are
    projected once, eq. 6's per-pair gradients are scattered back onto them
    (:mod:`metricfit.losses._index`). ``points`` may be a memmap (read in blocks) or a Dask
    array (map-reduce over its chunks).
    """
    return IndexPairObjective(points, index, s, _embedding_grad_inplace, lam=lam, A0=A0,
                              chunk_size=chunk_size, validated=validated)


DEFAULTS = {}


def pair_score(a, b):
    """The cosine of each pair of embeddings (seed 002 eq. 2; higher = more similar).

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """
    return cosine_scores(a, b)


SPEC = PairLoss("triangular", embedding_cost_grad, pair_score, score_kind="cosine",
                defaults=DEFAULTS, linear=LinearPath(cost_grad, objective, index_objective),
                aliases=("tsml",), checks_input=True)
