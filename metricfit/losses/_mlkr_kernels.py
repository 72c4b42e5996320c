"""numba kernel of MLKR: the leave-one-out kernel regression of a block of rows and its
gradient, touching only the kernel entries that do not underflow.

Pure, module-level, compiled on first use (``cache=True``); serial in a fixed order, sums in
float64, so results do not depend on the thread count. Its plain-NumPy twin (dense, every
entry) is ``cost_grad_embedded_ref`` in tests/test_mlkr.py.
"""

import numpy as np
from numba import njit

__all__ = ["regression_block"]


@njit(cache=True)
def regression_block(G, sq_norms, Z, y, start, cutoff, dZ):  # pragma: no cover (compiled)
    """MLKR's squared leave-one-out error of rows ``start .. start + b - 1``, and their part
    of dJ/dZ (:mod:`metricfit.losses.mlkr`).

    Parameters
    ----------
    G : ndarray of shape (b, n)
        The Gram block ``z_i . z_j``; overwritten with the kernel ``exp(min_l d_il - d_ij)``
        (0 for the point itself and where the exponent is below ``cutoff``).
    sq_norms : ndarray of shape (n,)
        ``|z_j|^2`` in float64.
    Z : ndarray of shape (n, k)
    y : ndarray of shape (n,), float64
    start : int
    cutoff : float
        An exponent whose ``exp`` is exactly 0 in G's dtype (-746 for float64, -105 for
        float32): those entries are skipped, the result is the dense one.
    dZ : ndarray of shape (n, k), float64, in/out
        Adds ``2 w_ij (z_i - z_j)`` to row i and subtracts it from row j for every entry,
        ``w_ij = -2 (yhat_i - y_i) p_ij (y_j - yhat_i)``.

    Returns
    -------
    J : float
        ``sum_i (yhat_i - y_i)^2`` over the block, in float64.
    """
    b, n = G.shape
    k = Z.shape[1]
    kept = np.empty(n, dtype=np.int64)  # columns whose kernel entry is not 0
    row = np.empty(k)  # row i's own part of dJ/dZ, summed before it is added
    J = 0.0
    for i in range(b):
        g = start + i
        sq_i = sq_norms[g]
        nearest = np.inf
        for j in range(n):
            d = max(sq_i + sq_norms[j] - 2.0 * G[i, j], 0.0)
            G[i, j] = d
            if j != g and d < nearest:
                nearest = d
        total = 0.0
        weighted = 0.0
        m = 0
        for j in range(n):
            shift = nearest - G[i, j]
            if j == g or shift < cutoff:
                G[i, j] = 0.0
            else:
                e = np.exp(shift)
                G[i, j] = e
                total += e
                weighted += e * y[j]
                kept[m] = j
                m += 1
        y_hat = weighted / total
        residual = y_hat - y[g]
        J += residual * residual
        scale = -2.0 * residual / total
        for c in range(k):
            row[c] = 0.0
        for t in range(m):
            j = kept[t]
            w = scale * G[i, j] * (y[j] - y_hat)  # w_ij = -2 (yhat_i - y_i) p_ij (y_j - yhat_i)
            if w != 0.0:
                for c in range(k):
                    step = 2.0 * w * (Z[g, c] - Z[j, c])
                    row[c] += step
                    dZ[j, c] -= step
        for c in range(k):
            dZ[g, c] += row[c]
    return J
