"""numba kernels of MLKR: the leave-one-out kernel regression of a unit of rows (its weights
``w_ij`` from the rows' kernel entries), and the scatter of sparse weights into dJ/dZ (its
row side by units of rows, its column side by units of columns).

Pure, module-level, compiled on first use (``cache=True``); :func:`regression_weights` works
on any unit of a block's rows (rows are independent: the package's threads take fixed units
of them, ``nogil``), its sums in float64 in a fixed order, so results do not depend on the
thread count. The kernel entries come from NCA's kernels and NumPy
(:mod:`metricfit.losses.mlkr`). Their plain-NumPy twin (dense, every entry) is
``cost_grad_embedded_ref`` in tests/test_mlkr.py.
"""

import numpy as np
from numba import njit

from ._nca_kernels import drop_skipped
from ._simd_rows import pair_dot

__all__ = ["DOT_LANES", "lane_dot", "regression_weights", "scatter_rows", "scatter_columns"]

DOT_LANES = 16  # float64 accumulators of lane_dot


@njit(cache=True, nogil=True)
def lane_dot(row, y, lanes):  # pragma: no cover (compiled)
    """``sum_j row[j] y[j]`` in float64 in a fixed order: entry j on accumulator ``j mod
    DOT_LANES`` (``lanes``, (DOT_LANES,)), the accumulators added first to last, then the
    entries left over one after the other. ``row`` of any float dtype (widened exactly),
    ``y`` float64: :func:`metricfit.losses._simd_rows.pair_dot` wants one dtype for both,
    and a float32 copy of the targets would round them."""
    n = row.shape[0]
    stop = n - n % DOT_LANES
    lanes[:] = 0.0
    for j0 in range(0, stop, DOT_LANES):
        for lane in range(DOT_LANES):
            lanes[lane] += np.float64(row[j0 + lane]) * y[j0 + lane]
    total = 0.0
    for lane in range(DOT_LANES):
        total += lanes[lane]
    for j in range(stop, n):
        total += np.float64(row[j]) * y[j]
    return total


@njit(cache=True, nogil=True)
def regression_weights(E, y, start, ones, tiny, r_out, sq_out):  # pragma: no cover (compiled)
    """MLKR's squared leave-one-out errors of a unit of rows (points ``start ..``) and their
    weights ``w_ij = dJ / dd_ij`` (:mod:`metricfit.losses.mlkr`), from the rows' kernel
    entries.

    Parameters
    ----------
    E : ndarray of shape (u, n)
        ``exp(min_l d_il - d_ij)``, the point itself and the exponents under the cutoff
        skipped (:func:`metricfit.losses._nca_kernels.shifted_logits`, then ``exp``; set to 0
        here first, :func:`metricfit.losses._nca_kernels.drop_skipped`); overwritten with
        ``w_ij = -2 (yhat_i - y_i) p_ij (y_j - yhat_i)``, 0 where ``|w_ij|`` is under
        ``tiny``.
    y : ndarray of shape (n,), float64
    start : int
    ones : ndarray of shape (1, n), E's dtype
        For the row sums on vector lanes (:func:`metricfit.losses._simd_rows.pair_dot`).
    tiny : float
        The smallest normal number of E's dtype: no subnormal weight reaches the products.
    r_out : ndarray of shape (u,), float64, out
        The row sums of W as stored.
    sq_out : ndarray of shape (u,), float64, out
        ``(yhat_i - y_i)^2``, each row's term of J.

    Returns
    -------
    nnz : int
        The number of the rows' kernel entries that are not 0.

    Sums in float64 in fixed orders: a row's total and ``r_i`` on vector lanes
    (``pair_dot``), ``sum_j e_ij y_j`` by :func:`lane_dot`.
    """
    u, n = E.shape
    lanes = np.empty(DOT_LANES)
    nnz = 0
    for i in range(u):
        drop_skipped(E, i)
        total = pair_dot(E, i, ones, 0)
        y_hat = lane_dot(E[i], y, lanes) / total
        residual = y_hat - y[start + i]
        sq_out[i] = residual * residual
        scale = -2.0 * residual / total
        for j in range(n):
            e = np.float64(E[i, j])
            nnz += 1 if e != 0.0 else 0
            w = scale * e * (y[j] - y_hat)
            E[i, j] = w if abs(w) >= tiny else 0.0
        r_out[i] = pair_dot(E, i, ones, 0)
    return nnz


@njit(cache=True, nogil=True)
def scatter_rows(W, Z, start, out, lo, hi):  # pragma: no cover (compiled)
    """The sparse path's row side: ``out[i] += 2 w_ij (z_i - z_j)`` for the nonzero ``w_ij`` of
    rows ``lo .. hi - 1`` of W (points ``start + lo ..``), j in order; out float64. O(u n +
    nnz k); the rows are the caller's own (a unit's)."""
    n, k = W.shape[1], Z.shape[1]
    for i in range(lo, hi):
        g = start + i
        for j in range(n):
            w = W[i, j]
            if w != 0.0:
                for c in range(k):
                    out[g, c] += 2.0 * w * (Z[g, c] - Z[j, c])


@njit(cache=True, nogil=True)
def scatter_columns(W, Z, start, rows, out, lo, hi):  # pragma: no cover (compiled)
    """The sparse path's column side: ``out[j] -= 2 w_ij (z_i - z_j)`` for the columns ``lo ..
    hi - 1`` and the nonzero ``w_ij`` of the rows ``rows`` of W (points ``start + rows``), i
    in that order; out float64. Each ``out[j]`` gets its terms in the same order however the
    columns are split."""
    k = Z.shape[1]
    for t in range(rows.shape[0]):
        i = rows[t]
        g = start + i
        for j in range(lo, hi):
            w = W[i, j]
            if w != 0.0:
                for c in range(k):
                    out[j, c] -= 2.0 * w * (Z[g, c] - Z[j, c])
