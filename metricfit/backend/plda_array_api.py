"""PLDA on any array-API namespace (torch, CuPy, array_api_strict): the statistics, the EM and
the LLR computed where the points live (issue 30); NumPy input keeps :mod:`.plda`'s path.

Statistics: the labels stay NumPy on the host, where the rows are ordered by (class count,
class) with a counting sort; one ``take`` puts the points in that order on the device, and the
classes that share a count n are then one (c_n, n, d) reshape: their sums are one reduction
(float64), their offsets one broadcast subtraction and the offset scatter one GEMM in the
points' dtype (accumulated in float64), a chunk of at most ``CHUNK_ROWS`` rows at a time.
EM: every count is a batched group of :mod:`.plda_em` (d x d products on the device, float64);
the host receives only the d x d results and one float per iteration (the log-likelihood).
"""

import numpy as np

from .plda import _check_n_classes, _symmetric, converged
from .plda_em import EMGroups, grouped_terms, within_log_likelihood

__all__ = ["device_class_statistics", "device_fit_two_covariance", "device_pair_llr",
           "CHUNK_ROWS"]

#: Rows per chunk of the statistics on the device (bounds the float64 temporaries).
CHUNK_ROWS = 1 << 19


def _order_by_count(codes):
    """Host: counts (C,), the distinct counts, the classes of each count, and the rows
    ordered by (count, class, row)."""
    counts = np.bincount(codes)
    classes = np.argsort(counts, kind="stable")  # by count, then by class
    rank = np.empty_like(classes)
    rank[classes] = np.arange(classes.size)
    rows = np.argsort(rank[codes], kind="stable")
    return counts, classes, rows


def device_class_statistics(xp, X, codes, device=None):
    """Counts (NumPy, C), the mean of the class means mu (d,), the batched groups
    ``[(n, c_n, M_n)]`` of the centred means and the offset scatter S_off (d, d), the last
    three float64 arrays on X's device; X (n, d) in ``xp``, codes (n,) NumPy in 0..C-1."""
    counts, classes, rows = _order_by_count(codes)
    d = X.shape[1]
    X = xp.take(X, xp.asarray(rows, device=device), axis=0)  # rows by (count, class)
    sizes, starts = np.unique(counts[classes], return_index=True)
    scatter = xp.zeros((d, d), dtype=xp.float64, device=device)
    group_means = []
    row = 0
    for n, first, last in zip(sizes, starts, np.r_[starts[1:], classes.size], strict=True):
        n, c = int(n), int(last - first)
        per_chunk = max(1, CHUNK_ROWS // n)
        means = []
        for start in range(0, c, per_chunk):
            k = min(per_chunk, c - start)
            block = xp.reshape(X[row:row + k * n, :], (k, n, d))
            row += k * n
            m = xp.sum(block, axis=1, dtype=xp.float64) / n  # (k, d)
            offsets = xp.reshape(block - xp.expand_dims(xp.astype(m, X.dtype), axis=1),
                                 (k * n, d))
            scatter = scatter + xp.astype(offsets.T @ offsets, xp.float64)
            means.append(m)
        group_means.append((float(n), c, xp.concat(means, axis=0) if len(means) > 1
                            else means[0]))
    mu = sum(xp.sum(m, axis=0) for _, _, m in group_means) / counts.size
    groups = []
    for n, c, m in group_means:
        centred = m - mu
        groups.append((n, c, centred.T @ centred))
    return counts.astype(np.float64), mu, groups, scatter


def device_fit_two_covariance(xp, counts, groups, scatter, n_iter, callback=None, device=None,
                              tol=None):
    """EM for the two-covariance model on the device (:mod:`.plda_em`, every count batched):
    ``(B, W)`` float64 arrays of ``xp``; ``callback(iteration, log_likelihood)`` and ``tol``
    as in :func:`metricfit.backend.plda.fit_two_covariance`."""
    d = scatter.shape[0]
    _check_n_classes(counts, d)
    eye = xp.eye(d, dtype=xp.float64, device=device)
    stats = EMGroups(groups, float(counts.sum()), counts.size, scatter, eye)
    B, W = eye, eye
    history = []
    for it in range(1, n_iter + 1):
        between, within, ll = grouped_terms(xp, B, W, stats)
        if callback or tol is not None:
            history.append(float(ll + within_log_likelihood(xp, W, stats)))
        if callback:
            callback(it - 1, history[-1])
        if converged(history, stats.N, tol):
            return B, W
        B = _symmetric(between) / stats.C
        W = _symmetric(scatter + within) / stats.N
    if callback:
        ll = grouped_terms(xp, B, W, stats, terms=False)[2]
        callback(n_iter, float(ll + within_log_likelihood(xp, W, stats)))
    return B, W


def device_pair_llr(xp, pairs, mean, components, psi, device=None):
    """The LLR (float64, shape (n_pairs,)) of vector pairs (n_pairs, 2, d) in ``xp`` under the
    fitted model: the embedding ``(x - mean) T^T`` in the pairs' dtype, then
    :func:`metricfit.backend.plda.llr` with one sample a side, in float64."""
    dtype = pairs.dtype
    T = xp.asarray(components, dtype=dtype, device=device)
    mu = xp.asarray(mean, dtype=dtype, device=device)
    a = xp.astype((pairs[:, 0, :] - mu) @ T.T, xp.float64)
    b = xp.astype((pairs[:, 1, :] - mu) @ T.T, xp.float64)
    p = xp.asarray(psi, dtype=xp.float64, device=device)
    s = p + 1.0
    D = s * s - p * p
    quad = (s * a * a - 2 * p * a * b + s * b * b) / D - a * a / s - b * b / s
    return -0.5 * xp.sum(xp.log(D / (s * s)) + quad, axis=1)
