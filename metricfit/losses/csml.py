r"""Cosine Similarity Metric Learning (CSML) cost and gradient.

Nguyen & Bai (ACCV 2010), as written in seed 002 eq. 11. For ``a = A x``, ``b = A y``:

.. math::

    J_i = -s_i \cos(a_i, b_i) = -s_i \frac{a_i^T b_i}{\|a_i\| \|b_i\|}

    \frac{\partial J_i}{\partial a_i}
        = \frac{s_i}{\|a_i\|\|b_i\|}\Big(\frac{a_i^T b_i}{\|a_i\|^2} a_i - b_i\Big),\quad
    \frac{\partial J_i}{\partial b_i}
        = \frac{s_i}{\|a_i\|\|b_i\|}\Big(\frac{a_i^T b_i}{\|b_i\|^2} b_i - a_i\Big)

so that, through ``a = A x``, the gradient is seed 002 eq. 11:
``dJ/dA = 1/n sum_i [(dJ_i/da_i) x_i^T + (dJ_i/db_i) y_i^T] + lam (A - A0)``.

Unlike TSML, the cost does not reduce to fixed sums of the data: every call needs both
embeddings, i.e. four n x d x k GEMMs (two forward, two backward).

Zero embeddings
---------------
The cosine of a zero vector is undefined. Where ``|a_i| |b_i| = 0`` (also when the squares
underflow) the pair contributes ``J_i = 0`` and zero gradient (the convention of
``sklearn.metrics.pairwise.cosine_similarity``), so cost and gradient stay finite. The kernel
uses the normalised form ``dJ_i/da_i = (s_i/|a_i|)(cos a_i/|a_i| - b_i/|b_i|)``, equal to
the above, which avoids the product ``|a_i| |b_i|`` that underflows for tiny embeddings.
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
from ._rows import IndexRows, PairKernel
from ._simd_rows import pair_dot_narrow as pair_dot
from ._spec import LinearPath, PairLoss
from .penalty import add_penalty

__all__ = ["cost_grad", "objective", "index_objective", "embedding_cost_grad", "pair_score",
           "DEFAULTS"]


@njit(cache=True, nogil=True, inline="always")
def _norms_and_cosine(X, i, Y, j):  # pragma: no cover (compiled)
    """``(|a|, |b|, cos(a, b))`` of the rows ``a = X[i]``, ``b = Y[j]`` (cos 0 where a or b
    is 0): the three sums in float64 on vector lanes in a fixed order, each product in the
    rows' dtype (:func:`metricfit.losses._simd_rows.pair_dot_narrow`)."""
    na = np.sqrt(pair_dot(X, i, X, i))
    nb = np.sqrt(pair_dot(Y, j, Y, j))
    if na > 0.0 and nb > 0.0:
        return na, nb, min(max((pair_dot(X, i, Y, j) / na) / nb, -1.0), 1.0)
    return na, nb, 0.0


@njit(cache=True, nogil=True)
def _grad_rows(P1, P2, s, out, lo, hi):  # pragma: no cover (compiled)
    """Rows lo..hi-1: a_i, b_i -> dJ_i/da_i, dJ_i/db_i of J_i = -s_i cos(a_i, b_i) in place,
    ``out[i] = J_i`` (float64)."""
    k = P1.shape[1]
    for i in range(lo, hi):
        na, nb, cos = _norms_and_cosine(P1, i, P2, i)
        if na > 0.0 and nb > 0.0:
            # normalised form (s/|a|)(cos a/|a| - b/|b|): no |a||b| product to underflow
            si = s[i]
            out[i] = -(si * cos)
            inv_a = 1.0 / na
            inv_b = 1.0 / nb
            for j in range(k):
                a_unit = P1[i, j] * inv_a
                b_unit = P2[i, j] * inv_b
                P1[i, j] = si * inv_a * (cos * a_unit - b_unit)
                P2[i, j] = si * inv_b * (cos * b_unit - a_unit)
        else:
            out[i] = 0.0
            for j in range(k):
                P1[i, j] = 0.0
                P2[i, j] = 0.0


@njit(cache=True, nogil=True, parallel=True)
def _grad_rows_parallel(P1, P2, s, out, n_rows, block):  # pragma: no cover
    """:func:`_grad_rows` block by block on numba's threads (``_rows.run_rows``)."""
    for t in prange(-(-n_rows // block)):
        _grad_rows(P1, P2, s, out, t * block, min(n_rows, t * block + block))


@njit(cache=True, nogil=True)
def _index_pair_rows(E, first, second, s, out, W, lo, hi):  # pragma: no cover (compiled)
    """Index pairs lo..hi-1, ``a_i = E[first[i]]``, ``b_i = E[second[i]]`` read in place:
    ``out[i] = J_i`` and ``W[i] = (s_i, cos_i, 1/|a_i|, 1/|b_i|)`` (all 0 where a_i or b_i
    is 0: no gradient), as :func:`_grad_rows` computes them (same bits)."""
    for i in range(lo, hi):
        na, nb, cos = _norms_and_cosine(E, first[i], E, second[i])
        if na > 0.0 and nb > 0.0:
            si = s[i]
            out[i] = -(si * cos)
            W[i, 0], W[i, 1], W[i, 2], W[i, 3] = si, cos, 1.0 / na, 1.0 / nb
        else:
            out[i] = 0.0
            W[i, 0], W[i, 1], W[i, 2], W[i, 3] = 0.0, 0.0, 0.0, 0.0


@njit(cache=True, nogil=True, parallel=True)
def _index_pair_rows_parallel(E, first, second, s, out, W, n_rows, block):  # pragma: no cover
    """:func:`_index_pair_rows` block by block on numba's threads (``_rows.run_rows``)."""
    for t in prange(-(-n_rows // block)):
        _index_pair_rows(E, first, second, s, out, W, t * block, min(n_rows, t * block + block))


@njit(cache=True, nogil=True)
def _index_side_rows(E, first, second, s, W, R, order, lo, hi):  # pragma: no cover (compiled)
    """``R[p_i] += dJ_i/da_i`` (side 2i) and ``R[q_i] += dJ_i/db_i`` (side 2i + 1) for the
    sides ``order[lo:hi]`` in that order: :func:`_grad_rows`'s expressions, rounded to R's
    dtype as its in-place rows were (same bits; a zero row adds +0.0 where it wrote 0)."""
    g = np.empty_like(R[0])
    for t in range(lo, hi):
        e = order[t]
        i = e // 2
        p, q = first[i], second[i]
        si, cos, inv_a, inv_b = W[i, 0], W[i, 1], W[i, 2], W[i, 3]
        r = p if e % 2 == 0 else q
        if inv_a == 0.0:
            for j in range(g.shape[0]):
                g[j] = 0.0
        elif e % 2 == 0:
            for j in range(g.shape[0]):
                a_unit = E[p, j] * inv_a
                b_unit = E[q, j] * inv_b
                g[j] = si * inv_a * (cos * a_unit - b_unit)
        else:
            for j in range(g.shape[0]):
                a_unit = E[p, j] * inv_a
                b_unit = E[q, j] * inv_b
                g[j] = si * inv_b * (cos * b_unit - a_unit)
        for j in range(g.shape[0]):
            R[r, j] += g[j]


@njit(cache=True, nogil=True, parallel=True)
def _index_side_rows_parallel(E, first, second, s, W, R, order, cuts):  # pragma: no cover
    """:func:`_index_side_rows` run by run of sides (``cuts``) on numba's threads."""
    for t in prange(cuts.shape[0] - 1):
        _index_side_rows(E, first, second, s, W, R, order, cuts[t], cuts[t + 1])


# kernel(P1, P2, s) -> sum_i J_i on every core, summed in pair order (metricfit.losses._rows);
# over index pairs, the two passes of metricfit.losses._index (four scalars a pair)
_embedding_grad_inplace = PairKernel(
    _grad_rows, driver=_grad_rows_parallel,
    index=IndexRows(_index_pair_rows, _index_side_rows, 4, _index_pair_rows_parallel,
                    _index_side_rows_parallel))


def embedding_cost_grad(a, b, s, validated=False):
    """Mean CSML loss on embeddings ``(a, b)`` (n, k) and its gradients ``(J, dJ/da, dJ/db)``."""
    return _embedding_cost_grad(_embedding_grad_inplace, a, b, s, validated)


def cost_grad(A, X1, X2, s, lam=0.0, A0=None, chunk_size=CHUNK_SIZE):
    """CSML cost ``mean(-s cos(A x, A y)) + lam/2 ||A - A0||^2`` and its gradient (eq. 11).

    Parameters and returns as :func:`metricfit.losses.tsml.cost_grad`.
    """
    X1, X2, s = check_pair_data(X1, X2, s)
    A, A0 = check_components(A, X1.shape[1], X1.dtype, A0)
    total, G = composed_cost_grad(_embedding_grad_inplace, A, X1, X2, s, chunk_size)
    n = X1.shape[0]
    G /= n
    J, G = add_penalty(total / n, G, A, lam, A0)
    return X1.dtype.type(J), G


class CSMLObjective(PreparedObjective):
    """CSML ``f(A) -> (J, G)``: the data validated and laid out once; four GEMMs per call.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.normal(size=(2, 20, 4))  # 20 pairs of 4-d vectors
    >>> s = np.repeat([1, -1], 10)
    >>> A = rng.normal(size=(2, 4))
    >>> from metricfit.losses import csml
    >>> f = csml.CSMLObjective(X1, X2, s, lam=0.1)
    >>> J, G = f(A)
    >>> def central(f, A, h=1e-6):  # central differences of J, entry by entry
    ...     E = h * np.eye(A.size).reshape((A.size,) + A.shape)
    ...     return np.array([f(A + e)[0] - f(A - e)[0] for e in E]).reshape(A.shape) / (2 * h)
    >>> bool(np.allclose(G, central(f, A), atol=1e-6))
    True
    >>> bool(np.isclose(J, csml.cost_grad(A, X1, X2, s, lam=0.1)[0]))
    True

    Without the regulariser the cost is a mean of ``-s cos``, in [-1, 1]; the cosine of
    a zero embedding counts 0:

    >>> bool(-1 <= csml.CSMLObjective(X1, X2, s)(A)[0] <= 1)
    True
    >>> float(csml.CSMLObjective(X1, X2, s)(np.zeros((2, 4)))[0])
    0.0
    """

    def __init__(self, X1, X2, s, lam=0.0, A0=None, chunk_size=CHUNK_SIZE,
                 validated=False):
        X1, X2, s = check_pair_data(X1, X2, s, validated)
        super().__init__(X1, X2, s, lam, A0, chunk_size)
        self._embedding_kernel = _embedding_grad_inplace


def objective(X1, X2, s, lam=0.0, A0=None, chunk_size=CHUNK_SIZE, validated=False):
    """Prepare the CSML objective once per data set; return ``f(A) -> (J, G)``."""
    return CSMLObjective(X1, X2, s, lam=lam, A0=A0, chunk_size=chunk_size,
                         validated=validated)


def index_objective(points, index, s, lam=0.0, A0=None, chunk_size=CHUNK_SIZE,
                    validated=False):
    """The CSML objective over index pairs into ``points``: the four GEMMs over the pairs
    become two over the points (:mod:`metricfit.losses._index`); ``f(A) -> (J, G)``."""
    return IndexPairObjective(points, index, s, _embedding_grad_inplace, lam=lam, A0=A0,
                              chunk_size=chunk_size, validated=validated)


DEFAULTS = {}


def pair_score(a, b):
    """The cosine of each pair of embeddings (higher = more similar)."""
    return cosine_scores(a, b)


SPEC = PairLoss("cosine", embedding_cost_grad, pair_score, score_kind="cosine",
                defaults=DEFAULTS, linear=LinearPath(cost_grad, objective, index_objective),
                aliases=("csml",), checks_input=True)
