r"""LMNN's cost and gradient (Weinberger and Saul 2009, JMLR 10, eqs. 11-14), a block of
anchors at a time.

With ``z_i = L x_i``, squared distances :math:`d_{ij} = \|z_i - z_j\|^2`, the k *target
neighbours* :math:`T_i` of each point (same class, nearest in the input space, fixed before
the fit) and :math:`[u]_+ = \max(u, 0)`, the loss is

.. math::

    J(L) = \frac{1}{n}\Big[\mu \sum_i \sum_{j \in T_i} d_{ij}
        + (1 - \mu) \sum_i \sum_{j \in T_i} \sum_{l:\, y_l \ne y_i} [1 + d_{ij} - d_{il}]_+\Big]

(the paper's eq. 14 weighs *push* by its :math:`\mu`; metric-learn's ``regularization``,
the :math:`\mu` here, weighs *pull*: with the default 0.5 the two agree). The factor
:math:`1/n` leaves the minimiser alone and keeps L-BFGS's gradient tolerance scale-free.

The gradient, derived by hand
-----------------------------
A triple (i, j, l) is *active* when :math:`1 + d_{ij} - d_{il} > 0`. On the active set the
hinge is linear, so (away from its kinks, a set of measure zero)

.. math::

    \frac{\partial J}{\partial d_{ij}} = \frac{1}{n}\big(\mu + (1 - \mu)\, c_{ij}\big)
        \ (j \in T_i), \qquad
    \frac{\partial J}{\partial d_{il}} = -\frac{1}{n}(1 - \mu)\, w_{il}
        \ (y_l \ne y_i),

with :math:`c_{ij}` the number of active impostors l of (i, j) and :math:`w_{il}` the number
of targets j for which l is active. For any weights :math:`v_{pq} = \partial J /
\partial d_{pq}`, :math:`\partial d_{pq} / \partial z_p = 2 (z_p - z_q) = -\partial d_{pq} /
\partial z_q`, so

.. math::

    \frac{\partial J}{\partial z_p} = 2 \sum_q v_{pq} (z_p - z_q) - 2 \sum_q v_{qp} (z_q - z_p),
    \qquad \frac{\partial J}{\partial L} = \Big(\frac{\partial J}{\partial Z}\Big)^T X,

which is the paper's eq. 13 (:math:`G = \partial J / \partial M` pulled back through
:math:`M = L^T L`: :math:`\partial J / \partial L = 2 L G`) evaluated without forming any
outer product: the target part is a scatter over the n k target pairs, the impostor part a
scatter over the active impostor pairs.

Memory: blocks of anchors
-------------------------
For a block B of b anchors one (b, n) buffer holds the Gram block ``Z_B Z^T`` (GEMM);
:func:`metricfit.losses._lmnn_kernels.impostor_rows` scans it for active triples, and
:func:`~metricfit.losses._lmnn_kernels.impostor_steps` adds each active pair's ``2 v_il (z_i -
z_l)`` to dZ directly (O(k) per active pair: no (n x n x k) GEMM of a mostly-zero weight
matrix). Memory O(b n + n k), never n x n (the scan's lists of active impostors: a (b, n)
integer array): the impostor search is this blocked scan, redone at every evaluation (the
active set follows L).

Threads: the scan runs on fixed units of anchors, side by side on several package threads
(:func:`~metricfit.losses._lmnn_kernels.impostor_rows`), each anchor's active impostors kept in
its row of the Gram block, and their steps are then added to dZ anchor after anchor
(:func:`~metricfit.losses._lmnn_kernels.impostor_steps`, serial: an impostor's row is shared
between anchors). The hinge is summed per anchor then over all anchors in order (whatever the
blocks), so J and dZ are the same bit for bit on any thread count (BLAS's Gram block aside:
held to one thread, as in the tests). Adding the steps by ranges of points on every core (the
index pairs' scatter) was tried: its sort of the sides cost more than the steps where most pairs
are active (docs/results/timing.md).
"""

import numpy as np

from ._lmnn_kernels import (
    impostor_rows,
    impostor_rows_parallel,
    impostor_steps,
    target_distances,
    target_steps,
)
from ._rows import ordered_sum, run_rows

__all__ = ["cost_grad", "cost_grad_embedded", "default_block_rows"]

BLOCK_BYTES = 2 ** 25  # 32 MiB for the (b, n) buffer by default
#: At most this many anchors a block: the Gram block is written by the GEMM and then scanned,
#: so a block of all n rows of digits (1,797 x 1,797 float64, 26 MB) left the cache between
#: the two. One evaluation on digits-30 on the 2-core machine, one thread: 14.4 -> 9.7 ms
#: (float64), 11.5 -> 7.9 (float32); at n = 5,000 and 20,000 no change (docs/results/timing.md).
#: 512 until the scan was screened on vector registers (_lmnn_kernels): then blocks of 1,024
#: took 3.59 instead of 3.88 ms at 2 threads on digits-30 (two blocks instead of four: each
#: hand-over between the GEMM's threads and the scan's costs), 5.54 against 5.58 on one; at n =
#: 5,000, 838 rows (the 32 MiB) 21.6 against 22.9 ms at 2 threads, 38.5 against 38.3 on one.
MAX_BLOCK_ROWS = 1024


def default_block_rows(n_samples, itemsize):
    """Rows per block: a (b, n) buffer of about 32 MiB, at least 16 rows, at most
    :data:`MAX_BLOCK_ROWS` and n."""
    return int(min(n_samples, MAX_BLOCK_ROWS,
                   max(16, BLOCK_BYTES // (n_samples * itemsize))))


def cost_grad_embedded(Z, codes, targets, regularization=0.5, block_rows=None):
    """LMNN's J and dJ/dZ from embeddings Z (n, k) (module docstring).

    Parameters
    ----------
    Z : ndarray of shape (n_samples, n_components), float32 or float64
    codes : ndarray of shape (n_samples,), int64
        Class codes.
    targets : ndarray of shape (n_samples, n_neighbors), int64
        Target neighbours of each point (rows into Z); -1 for none (a class too small).
    regularization : float, default=0.5
        mu, the weight of the pull term (1 - mu weighs the push term).
    block_rows : int, default=None
        Anchors per block (None: :func:`default_block_rows`).

    Returns
    -------
    J : float
    dZ : ndarray of shape (n_samples, n_components), dtype of Z
    n_active : int
        The number of active triples (i, j, l).
    """
    Z = np.ascontiguousarray(Z)
    n, k = Z.shape
    mu, push = float(regularization), 1.0 - float(regularization)
    has = targets >= 0
    target_d = np.empty(targets.shape)
    target_distances(Z, targets, target_d)  # -inf where no target: never active
    counts = np.zeros(target_d.shape)
    b = block_rows or default_block_rows(n, Z.itemsize)
    buffer = np.empty((min(b, n), n), dtype=Z.dtype)
    sq_norms = np.einsum("ij,ij->i", Z, Z).astype(np.float64)
    dZ = np.zeros((n, k))  # float64 accumulator
    hinge = np.empty(n)  # each anchor's sum of active margins, summed in order at the end
    for start in range(0, n, b):
        stop = min(start + b, n)
        G = buffer[: stop - start]
        np.matmul(Z[start:stop], Z.T, out=G)  # Gram block
        _impostors(G, sq_norms, Z, codes, start, target_d[start:stop], counts[start:stop],
                   push / n, dZ, hinge[start:stop])
    target_steps(Z, targets, (mu + push * counts) / n, dZ)  # the target weights v_ij
    pull = float(np.sum(np.where(has, target_d, 0.0)))
    J = (mu * pull + push * ordered_sum(hinge)) / n
    return J, dZ.astype(Z.dtype), int(counts.sum())


def _impostors(G, sq_norms, Z, codes, start, target_d, counts, scale, dZ, hinge=None):
    """The hinge ``sum [1 + d_ij - d_il]_+`` over a block of anchors, summed per anchor then
    over the anchors in order, and its impostor part of dJ/dZ: the scan by fixed units of
    anchors on the package's threads (:func:`~metricfit.losses._lmnn_kernels.impostor_rows`),
    then the steps on one thread (:func:`~metricfit.losses._lmnn_kernels.impostor_steps`);
    the same numbers on any thread count (module docstring).

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
    hinge : ndarray of shape (b,), float64, out, optional
        Each anchor's sum of active margins (allocated where None).

    Returns
    -------
    loss : float
        ``sum_{i, j, l active} (1 + d_ij - d_il)`` in float64.
    """
    b, n = G.shape
    hinge = np.empty(b) if hinge is None else hinge
    n_active = np.empty(b, dtype=np.int64)
    active = np.empty((b, n), dtype=np.int32 if n < 2 ** 31 else np.int64)
    run_rows(impostor_rows, b, n, G, sq_norms, codes, start, target_d, counts, hinge, active,
             n_active, driver=impostor_rows_parallel)
    impostor_steps(G, active, n_active, start, scale, Z, dZ)
    return ordered_sum(hinge)


def cost_grad(L, X, codes, targets, regularization=0.5, block_rows=None):
    """Linear LMNN: J(L) and dJ/dL (k, d) for ``Z = X L^T`` (``(dJ/dZ)^T X``).

    Parameters
    ----------
    L : ndarray of shape (n_components, n_features)
    X : ndarray of shape (n_samples, n_features)
    codes, targets, regularization, block_rows
        As :func:`cost_grad_embedded`.

    Returns
    -------
    J : float
    G : ndarray of shape (n_components, n_features)
    """
    J, dZ, _ = cost_grad_embedded(X @ L.T, codes, targets, regularization, block_rows)
    return J, dZ.T @ X


def objective(X, codes, targets, n_components, regularization=0.5, block_rows=None):
    """``f(theta) -> (J, dJ/dtheta)`` on the flat L (n_components * n_features), computed in
    X's dtype (float32 kept)."""
    d = X.shape[1]

    def f(theta):
        L = np.asarray(theta, dtype=X.dtype).reshape(n_components, d)
        J, G = cost_grad(L, X, codes, targets, regularization, block_rows)
        return J, G.ravel()

    return f
