"""numba kernels of MLKR: the leave-one-out kernel regression of a block of rows (its
weights ``w_ij``), and the scatter of sparse weights into dJ/dZ.

Pure, module-level, compiled on first use (``cache=True``); :func:`regression_block` works
on any range of a block's rows (rows are independent: the package's threads take fixed units
of them, ``nogil``), its sums in float64 in a fixed order, so results do not depend on the
thread count. Their plain-NumPy twin (dense, every entry) is ``cost_grad_embedded_ref`` in
tests/test_mlkr.py.
"""

import numpy as np
from numba import njit

from ._nca_kernels import MIN_LANES, nearest_distance

__all__ = ["regression_block", "scatter_block"]


@njit(cache=True, nogil=True)
def regression_block(G, sq_norms, y, start, cutoff, tiny, r_out, sq_out, lo,
                     hi):  # pragma: no cover (compiled)
    """MLKR's squared leave-one-out errors of rows ``lo .. hi - 1`` of a block (points
    ``start + lo ..``) and their weights ``w_ij = dJ / dd_ij`` (:mod:`metricfit.losses.mlkr`).

    Parameters
    ----------
    G : ndarray of shape (b, n)
        The Gram block ``z_i . z_j``; overwritten with ``w_ij = -2 (yhat_i - y_i) p_ij (y_j -
        yhat_i)`` (0 for the point itself and where the kernel underflows).
    sq_norms : ndarray of shape (n,)
        ``|z_j|^2`` in float64.
    y : ndarray of shape (n,), float64
    start : int
    cutoff : float
        Entries whose exponent is under it are skipped (:data:`metricfit.losses.mlkr.CUTOFF`:
        their ``exp`` would be subnormal in G's dtype).
    tiny : float
        The smallest normal number of G's dtype: a weight under it in absolute value is 0.
    r_out : ndarray of shape (b,), float64, out
        The row sums of W.
    sq_out : ndarray of shape (b,), float64, out
        ``(yhat_i - y_i)^2``, each row's term of J.
    lo, hi : int
        The rows (of the block) to compute.

    Returns
    -------
    nnz : int
        The number of those rows' kernel entries that were kept.
    """
    n = G.shape[1]
    nnz = 0
    lanes, dist = np.empty(MIN_LANES), np.empty(n)
    for i in range(lo, hi):
        g = start + i
        nearest = nearest_distance(G[i], sq_norms[g], sq_norms, g, dist, lanes)  # on lanes
        total = 0.0
        weighted = 0.0
        for j in range(n):
            shift = nearest - G[i, j]
            if j == g or shift < cutoff:
                G[i, j] = 0.0
            else:
                e = np.exp(shift)
                G[i, j] = e
                total += e
                weighted += e * y[j]
                nnz += 1
        y_hat = weighted / total
        residual = y_hat - y[g]
        sq_out[i] = residual * residual
        scale = -2.0 * residual / total
        row = 0.0
        for j in range(n):
            e = G[i, j]
            if e != 0.0:
                w = scale * e * (y[j] - y_hat)
                w = w if abs(w) >= tiny else 0.0
                G[i, j] = w
                row += w
        r_out[i] = row
    return nnz


@njit(cache=True)
def scatter_block(W, Z, start, dZ):  # pragma: no cover (compiled)
    """``dZ[i] += 2 w_ij (z_i - z_j)``, ``dZ[j] -= 2 w_ij (z_i - z_j)`` for the nonzero
    ``w_ij`` of rows ``start ..`` (the sparse path: O(b n + nnz k)); dZ float64."""
    b, n = W.shape
    k = Z.shape[1]
    row = np.empty(k)
    for i in range(b):
        g = start + i
        for c in range(k):
            row[c] = 0.0
        for j in range(n):
            w = W[i, j]
            if w != 0.0:
                for c in range(k):
                    step = 2.0 * w * (Z[g, c] - Z[j, c])
                    row[c] += step
                    dZ[j, c] -= step
        for c in range(k):
            dZ[g, c] += row[c]
