"""LDML's compiled kernels (:mod:`metricfit.losses.ldml`): the per-pair cost and weight, the
prepared objective's fused weighting of ``D M`` (serial over rows, and its numba-parallel driver),
the index pairs' two passes, and the probabilities. Pure ``nogil`` numba functions, compiled on
first use; float64 accumulators for float32 data.
"""

import math

import numpy as np
from numba import njit, prange

from ._rows import CHECKED_WEIGHT, row_dot
from ._simd_rows import pair_halves

__all__ = ["pair_cost_weight", "weight_rows", "weight_rows_parallel", "ordered_sums2",
           "index_distance", "index_weight_rows", "index_weights_scatter", "index_scatter_sides",
           "probability"]


@njit(cache=True)
def pair_cost_weight(dist, si, b):  # pragma: no cover (compiled)
    """(J_i, w_i) of one pair from its distance delta^T M delta, stably:
    J_i = softplus(-s_i u_i), u_i = b - dist, and w_i = t_i - p_i = s_i sigma(-s_i u_i)."""
    v = si * (dist - b)  # = -s_i u_i
    e = math.exp(-abs(v))  # in (0, 1]
    J = max(v, 0.0) + math.log1p(e)  # softplus(v) = -ln p_i or -ln(1 - p_i)
    return J, si * (1.0 / (1.0 + e) if v >= 0.0 else e / (1.0 + e))


@njit(cache=True, nogil=True)
def weight_rows(DM, D, s, b, tiny, out, lo, hi):  # pragma: no cover (compiled)
    """Rows lo..hi-1 of DM = D M -> w_i delta_i in place (w_i = t_i - p_i), ``out[i] =
    (J_i, w_i)`` with J_i = softplus(-s_i u_i), u_i = b - delta_i^T M delta_i.

    Entries below ``tiny`` in magnitude are written as 0: a weight deep in the sigmoid's
    tail would otherwise put float32 subnormals into the GEMM ``(w D)^T D`` (the cause of
    LDML float32 at 3x its bound on a Xeon; :mod:`metricfit.losses._rows`).
    """
    d = D.shape[1]
    for i in range(lo, hi):
        dist = row_dot(DM, D, i)  # float64, vector lanes in a fixed order
        J, w = pair_cost_weight(dist, np.float64(s[i]), b)
        out[i, 0] = J
        out[i, 1] = w
        for j in range(d):
            g = w * D[i, j]
            DM[i, j] = g if abs(g) >= tiny else 0.0


@njit(cache=True, nogil=True, parallel=True)
def weight_rows_parallel(DM, D, s, b, tiny, out, n_rows, block):  # pragma: no cover
    """:func:`weight_rows` block by block on numba's threads (``_rows.run_rows``)."""
    for t in prange(-(-n_rows // block)):
        weight_rows(DM, D, s, b, tiny, out, t * block, min(n_rows, t * block + block))


@njit(cache=True, nogil=True)
def ordered_sums2(out):  # pragma: no cover (compiled)
    """(sum_i out[i, 0], sum_i out[i, 1]), each in row order."""
    total = 0.0
    sum_w = 0.0
    for i in range(out.shape[0]):
        total += out[i, 0]
        sum_w += out[i, 1]
    return total, sum_w


@njit(cache=True, nogil=True, inline="always")
def index_distance(E, p, q, d):  # pragma: no cover (compiled)
    """``(E[p] - E[q])[:d] . (E[p] - E[q])[d:] = delta^T M delta`` for rows of E = [X M, X]
    (d = E.shape[1] / 2), in float64 on vector lanes in a fixed order
    (:func:`metricfit.losses._simd_rows.pair_halves`)."""
    return pair_halves(E, p, E, q)


@njit(cache=True, nogil=True)
def index_weight_rows(E, first, second, s, b, out, lo, hi):  # pragma: no cover (compiled)
    """For the pairs lo..hi-1 (p_i, q_i) of rows of E = [X M, X] (n_points, 2d): the distance
    ``(E[p] - E[q])[:d] . (E[p] - E[q])[d:] = delta_i^T M delta_i`` and ``out[i] = (J_i,
    w_i)``. Two row reads of E per pair, no temporaries."""
    d = E.shape[1] // 2
    for i in range(lo, hi):
        p, q = first[i], second[i]
        dist = index_distance(E, p, q, d)
        J, w = pair_cost_weight(dist, np.float64(s[i]), b)
        out[i, 0] = J
        out[i, 1] = w


@njit(cache=True, nogil=True, parallel=True)
def index_weight_rows_parallel(E, first, second, s, b, out, n_rows, block):  # pragma: no cover
    """:func:`index_weight_rows` block by block on numba's threads (``_rows.run_rows``)."""
    for t in prange(-(-n_rows // block)):
        index_weight_rows(E, first, second, s, b, out, t * block, min(n_rows, t * block + block))


@njit(cache=True, nogil=True)
def index_weights_scatter(E, first, second, s, b, R, out):  # pragma: no cover (compiled)
    """Pass 2 on one thread: for each pair in order, the distance, ``out[i] = (J_i, w_i)``,
    ``R[p_i] += w_i delta_i`` and ``R[q_i] -= w_i delta_i``; two row reads of E. The same
    additions in the same order as :func:`index_weight_rows` then :func:`index_scatter_sides`
    (same bits). Terms ``w_i delta_ij`` below the smallest normal number of R's dtype in
    magnitude are added as 0, as :func:`weight_rows` writes them: a point whose pairs all lie
    deep in the sigmoid's tail would otherwise get a row of float32 subnormals, which slow
    the GEMM ``R^T X`` after this pass (a float32 evaluation 22x on the 2-core Xeon). Only a
    pair whose weight is under :data:`._rows.CHECKED_WEIGHT` has its terms checked."""
    m, d = first.shape[0], R.shape[1]
    tiny = np.finfo(R.dtype).tiny
    for i in range(m):
        p, q = first[i], second[i]
        dist = index_distance(E, p, q, d)
        J, w = pair_cost_weight(dist, np.float64(s[i]), b)
        out[i, 0] = J
        out[i, 1] = w
        checked = 0.0 < abs(w) < CHECKED_WEIGHT
        for j in range(d):
            g = w * (np.float64(E[p, d + j]) - np.float64(E[q, d + j]))
            if checked and abs(g) < tiny:
                g = 0.0
            R[p, j] += g
            R[q, j] -= g


@njit(cache=True, nogil=True)
def index_scatter_sides(E, first, second, out, R, order, lo, hi):  # pragma: no cover
    """``R[p_i] += w_i delta_i`` (side 2i) and ``R[q_i] -= w_i delta_i`` (side 2i + 1) for the
    sides ``order[lo:hi]``, in that order; ``delta_i = (E[p_i] - E[q_i])[d:]`` (through a
    float64 buffer, the same values: the in-place form did not vectorise), subnormal terms
    as 0 (:func:`index_weights_scatter`)."""
    d, g = R.shape[1], np.empty(R.shape[1])
    tiny = np.finfo(R.dtype).tiny
    for t in range(lo, hi):
        e = order[t]
        i = e // 2
        p, q, w = first[i], second[i], out[i, 1]
        for j in range(d):
            g[j] = w * (np.float64(E[p, d + j]) - np.float64(E[q, d + j]))
        if 0.0 < abs(w) < CHECKED_WEIGHT:  # a term may be subnormal
            for j in range(d):
                if abs(g[j]) < tiny:
                    g[j] = 0.0
        if e % 2 == 0:
            for j in range(d):
                R[p, j] += g[j]
        else:
            for j in range(d):
                R[q, j] -= g[j]


@njit(cache=True, nogil=True, parallel=True)
def index_scatter_sides_parallel(E, first, second, out, R, order, cuts):  # pragma: no cover
    """:func:`index_scatter_sides` run by run of sides (``cuts``) on numba's threads."""
    for t in prange(cuts.shape[0] - 1):
        index_scatter_sides(E, first, second, out, R, order, cuts[t], cuts[t + 1])


@njit(cache=True)
def probability(DM, D, b, out):  # pragma: no cover (compiled)
    """out_i = sigma(b - rowsum(DM * D)_i), stably."""
    n, d = D.shape
    for i in range(n):
        dist = 0.0
        for j in range(d):
            dist += np.float64(DM[i, j]) * np.float64(D[i, j])
        u = b - dist
        e = math.exp(-abs(u))
        out[i] = 1.0 / (1.0 + e) if u >= 0.0 else e / (1.0 + e)
