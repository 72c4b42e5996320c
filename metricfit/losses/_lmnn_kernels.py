"""numba kernel of LMNN's push term: the active impostor triples of a block of anchors.

Pure, module-level, compiled on first use (``cache=True``); serial over the block in a fixed
order, sums in float64, so results do not depend on the thread count. Its plain-NumPy twin is
``impostor_block_ref`` in tests/test_lmnn.py.
"""

import numpy as np
from numba import njit

__all__ = ["impostor_block"]


@njit(cache=True)
def impostor_block(G, sq_norms, Z, codes, start, target_d, counts, scale,
                   dZ):  # pragma: no cover (compiled)
    """The hinge ``sum [1 + d_ij - d_il]_+`` over a block of anchors, and its impostor part
    of dJ/dZ.

    Parameters
    ----------
    G : ndarray of shape (b, n)
        The Gram block ``z_i . z_l`` of anchors ``start .. start + b - 1`` with every point:
        ``d_il = max(|z_i|^2 + |z_l|^2 - 2 z_i . z_l, 0)``.
    sq_norms : ndarray of shape (n,)
        ``|z_l|^2``.
    Z : ndarray of shape (n, k)
        The embedded points.
    codes : ndarray of shape (n,), int64
        Class codes.
    start : int
        The first anchor's row.
    target_d : ndarray of shape (b, K)
        Squared distances ``d_ij`` of each anchor to its K target neighbours (-inf for a
        missing neighbour: never active).
    counts : ndarray of shape (b, K), float64, out
        Overwritten with the number of active impostors l of each (i, j).
    scale : float
        ``dJ/dd_il = -scale * w_il``, ``w_il`` the number of targets j for which l is active
        (another class and ``d_il < 1 + d_ij``).
    dZ : ndarray of shape (n, k), float64, in/out
        Adds ``2 v (z_i - z_l)`` to row i and subtracts it from row l for every active
        ``(i, l)``, ``v = -scale * w_il``.

    Returns
    -------
    loss : float
        ``sum_{i, j, l active} (1 + d_ij - d_il)`` in float64.
    """
    b, n = G.shape
    K = target_d.shape[1]
    k = Z.shape[1]
    loss = 0.0
    for i in range(b):
        g = start + i
        code = codes[g]
        sq_i = sq_norms[g]
        radius = -np.inf  # the largest 1 + d_ij: no impostor beyond it
        for t in range(K):
            counts[i, t] = 0.0
            if 1.0 + target_d[i, t] > radius:
                radius = 1.0 + target_d[i, t]
        for l in range(n):  # noqa: E741 (the paper's index)
            if codes[l] == code:
                continue
            d_il = max(sq_i + sq_norms[l] - 2.0 * G[i, l], 0.0)
            if d_il >= radius:
                continue
            w = 0.0
            for t in range(K):
                margin = 1.0 + target_d[i, t] - d_il
                if margin > 0.0:
                    loss += margin
                    counts[i, t] += 1.0
                    w += 1.0
            if w > 0.0:
                v = -2.0 * scale * w
                for c in range(k):
                    step = v * (Z[g, c] - Z[l, c])
                    dZ[g, c] += step
                    dZ[l, c] -= step
    return loss
