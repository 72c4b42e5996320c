r"""MLKR's cost and gradient (Weinberger and Tesauro 2007, AISTATS, eqs. 2-4), a block of rows
at a time.

With ``z_i = A x_i``, :math:`d_{ij} = \|z_i - z_j\|^2` and the Gaussian kernel
:math:`k_{ij} = \exp(-d_{ij})`, the leave-one-out kernel regression estimate of target
:math:`y_i` is (eq. 2)

.. math::

    \hat y_i = \sum_{j \ne i} p_{ij} y_j, \qquad
    p_{ij} = \frac{k_{ij}}{\sum_{l \ne i} k_{il}},

and MLKR minimises the squared leave-one-out error (eq. 3)
:math:`J(A) = \sum_i (\hat y_i - y_i)^2` (metric-learn's objective, unnormalised).

The gradient, derived by hand
-----------------------------
From :math:`\partial p_{il} / \partial d_{ij} = -p_{il} (\delta_{lj} - p_{ij})`,

.. math::

    \frac{\partial \hat y_i}{\partial d_{ij}} = -p_{ij} (y_j - \hat y_i), \qquad
    w_{ij} := \frac{\partial J}{\partial d_{ij}} = -2 (\hat y_i - y_i)\, p_{ij} (y_j - \hat y_i).

With :math:`\partial d_{ij} / \partial z_i = 2 (z_i - z_j) = -\partial d_{ij} / \partial
z_j`, the row sums ``r = W 1`` and column sums ``c = W^T 1``,

.. math::

    \frac{\partial J}{\partial Z} = 2 \big(\operatorname{diag}(r + c) Z - W Z - W^T Z\big),
    \qquad \frac{\partial J}{\partial A} = \Big(\frac{\partial J}{\partial Z}\Big)^T X,

which is eq. 4, :math:`\partial J / \partial A = 4 A \sum_{ij} (\hat y_i - y_i)\, p_{ij}
(\hat y_i - y_j)\, x_{ij} x_{ij}^T` (:math:`x_{ij} = x_i - x_j`), evaluated without its
(d, d) outer products: one (n x n x k) Gram GEMM and a scatter, not O(n^2 d^2).

Memory and work: blocks of rows
-------------------------------
:math:`\hat y_i` needs only row i of P, so one pass suffices: for a block B of b rows, one
(b, n) buffer holds the Gram block ``Z_B Z^T`` (GEMMs by units of rows), then the weights
:math:`w_{ij}` (:func:`metricfit.losses._mlkr_kernels.regression_block`: the stabilised softmax
:math:`\exp(\min_l d_{il} - d_{ij})`, the point itself 0). Entries whose exponent lies
under ``log`` of the dtype's smallest normal number, plus 1 (-707.4 in float64, -86.3 in
float32: :data:`CUTOFF`), are skipped, and a weight under that number is 0: no subnormal
number reaches the GEMMs, whose subnormal operands cost many times a normal one (float32
MLKR on digits, 30 iterations: 136 ms an iteration against float64's 51 before the rule).
Such an entry weighs less than the float64 row sums (at least 1, the nearest point) can
hold. With real data most entries are skipped (95 % on digits-30). Where fewer than
``SPARSE_SHARE`` of a block's entries are nonzero, each adds ``2 w_ij (z_i - z_j)`` to rows
i and j of dJ/dZ (:func:`metricfit.losses._mlkr_kernels.scatter_block`, O(nnz k));
otherwise the GEMMs ``W_B Z`` and ``W_B^T Z_B`` do it. Either way the result is that of the
dense formula with those entries 0.
Memory O(b n + n k), never n x n.

Threads: a block's rows go through the kernel on :func:`metricfit.get_threads` threads in
fixed units of :data:`UNIT_ROWS` rows, each unit making its own Gram rows first (BLAS on one
thread inside the units; rows are independent; their squared errors are added in row order
afterwards), the gradient's GEMMs on BLAS's threads; the scatter path is serial. J and
dJ/dZ do not depend on the package's thread count (BLAS's own rounding aside).
"""

import numpy as np

from ..parallel import blas_threads, get_threads, map_blocks
from . import _rows
from ._mlkr_kernels import regression_block, scatter_block
from ._nca_kernels import logit_floor

__all__ = ["cost_grad", "cost_grad_embedded", "default_block_rows"]

BLOCK_BYTES = 2 ** 25  # 32 MiB for the (b, n) buffer by default
#: exponents under which the kernel skips an entry: exp would be subnormal in the dtype
#: (NCA's floor, :func:`metricfit.losses._nca_kernels.logit_floor`)
CUTOFF = {np.dtype(t): logit_floor(t) for t in (np.float64, np.float32)}
#: below this share of nonzero kernel entries a block's gradient is scattered (O(nnz k)),
#: above it computed by GEMMs (O(b n k) at BLAS speed)
SPARSE_SHARE = 0.1
UNIT_ROWS = 128  # rows per work unit of regression_block (fixed: not the thread count)


def default_block_rows(n_samples, itemsize):
    """Rows per block: a (b, n) buffer of about 32 MiB, at least 16 rows, at most n."""
    return int(min(n_samples, max(16, BLOCK_BYTES // (n_samples * itemsize))))


def cost_grad_embedded(Z, y, block_rows=None):
    """MLKR's J and dJ/dZ from embeddings Z (n, k) and real targets y (n,).

    Parameters
    ----------
    Z : ndarray of shape (n_samples, n_components), float32 or float64
    y : ndarray of shape (n_samples,)
        Real targets (in Z's dtype).
    block_rows : int, default=None
        Rows per block (None: :func:`default_block_rows`).

    Returns
    -------
    J : float
    dZ : ndarray of shape (n_samples, n_components), dtype of Z
    """
    Z = np.ascontiguousarray(Z)
    y = np.asarray(y, dtype=np.float64)
    n, k = Z.shape
    b = block_rows or default_block_rows(n, Z.itemsize)
    buffer = np.empty((min(b, n), n), dtype=Z.dtype)
    sq_norms = np.einsum("ij,ij->i", Z, Z).astype(np.float64)
    cutoff, tiny = CUTOFF[np.dtype(Z.dtype)], _rows.tiny(Z.dtype)
    dZ = np.zeros((n, k))  # float64 accumulator
    WtZ, c, dense = np.zeros((n, k)), np.zeros(n), False
    r = np.empty(n)
    J = 0.0
    for start in range(0, n, b):
        stop = min(start + b, n)
        W = buffer[: stop - start]  # the Gram block, overwritten with the weights
        J_block, nnz = _regression(W, Z, sq_norms, y, start, cutoff, tiny, r[start:stop])
        J += J_block
        if nnz < SPARSE_SHARE * W.size:  # few kernel entries: scatter them
            scatter_block(W, Z, start, dZ)
        else:  # the GEMMs of 2 (diag(r + c) Z - W Z - W^T Z)
            dense = True
            dZ[start:stop] += 2 * (r[start:stop, None] * Z[start:stop] - W @ Z)
            c += W.sum(axis=0, dtype=np.float64)
            WtZ += W.T @ Z[start:stop]
    if dense:
        dZ += 2 * (c[:, None] * Z - WtZ)
    return J, dZ.astype(Z.dtype)


def _regression(W, Z, sq_norms, y, start, cutoff, tiny, r):
    """``(J_block, nnz)`` of a block's rows: on fixed units of :data:`UNIT_ROWS` rows on the
    package's threads (rows are independent), the unit's Gram rows ``W[rows] = Z_rows Z^T``
    (BLAS on one thread where the pool runs) and :func:`._mlkr_kernels.regression_block` on
    them while they are in the core's cache; then the rows' squared errors added in row order
    (``cumsum``, sequential): the number the serial kernel summed, on any thread count.

    The Gram rows by units, not the block in one GEMM: OpenBLAS wrote digits' 1,797 x 1,797
    Gram block (k = 30) in 8.5 ms, and in 4.3 ms as 128-row products on one thread
    (docs/results/timing.md). Its products by units round a little differently in float64
    (J and dJ/dZ within 8e-16 of the one GEMM's on digits), the same bits in float32."""
    squares = np.empty(W.shape[0])

    def unit(rows):
        np.matmul(Z[start + rows.start:start + rows.stop], Z.T, out=W[rows])
        return regression_block(W, sq_norms, y, start, cutoff, tiny, r, squares, rows.start,
                                rows.stop)

    with blas_threads(1 if get_threads() > 1 else None):
        counts = map_blocks(unit, W.shape[0], UNIT_ROWS)
    return (float(np.cumsum(squares)[-1]) if squares.size else 0.0), sum(counts)


def cost_grad(A, X, y, block_rows=None):
    """Linear MLKR: J(A) and dJ/dA (k, d) for ``Z = X A^T`` (``(dJ/dZ)^T X``)."""
    J, dZ = cost_grad_embedded(X @ A.T, y, block_rows)
    return J, dZ.T @ X


def objective(X, y, n_components, block_rows=None):
    """``f(theta) -> (J, dJ/dtheta)`` on the flat A (n_components * n_features), computed in
    X's dtype (float32 kept)."""
    d = X.shape[1]

    def f(theta):
        A = np.asarray(theta, dtype=X.dtype).reshape(n_components, d)
        J, G = cost_grad(A, X, y, block_rows)
        return J, G.ravel()

    return f
