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

Memory and work: blocks of rows, units of rows
----------------------------------------------
:math:`\hat y_i` needs only row i of P, so one pass suffices, block of rows after block of
rows, each block in fixed units of :data:`UNIT_ROWS` rows. One (b, n) buffer holds a unit's
Gram rows ``Z_u Z^T``, then their shifted exponents :math:`\min_l d_{il} - d_{ij}` (NCA's
kernel, the point itself skipped), NumPy's SIMD ``exp`` of them, then the weights
:math:`w_{ij}` (:func:`metricfit.losses._mlkr_kernels.regression_weights`). Entries whose
exponent lies under ``log`` of the dtype's smallest normal number, plus 1 (-707.4 in float64,
-86.3 in float32: :data:`CUTOFF`), are skipped, and a weight under that number is 0: no
subnormal number reaches the GEMMs, whose subnormal operands cost many times a normal one
(float32 MLKR on digits, 30 iterations: 136 ms an iteration against float64's 51 before the
rule). Such an entry weighs less than the float64 row sums (at least 1, the nearest point)
can hold. With real data most entries are skipped (95 % on digits-30). A unit with at least
``SPARSE_SHARE`` of its entries nonzero takes, while its rows are in its core's cache, the
GEMM ``W_u Z`` (or ``W_u X``) and its column sums; ``W^T Z`` follows over the runs of such
units. A sparser unit adds ``2 w_ij (z_i - z_j)`` to rows i and j of dJ/dZ instead
(:func:`metricfit.losses._mlkr_kernels.scatter_rows` in the unit, then
:func:`metricfit.losses._mlkr_kernels.scatter_columns` by units of columns; O(nnz k)). Either
way the result is that of the dense formula with those entries 0. The linear map with ``d <
2k`` takes NCA's algebra (:func:`cost_grad`): two (n x n) GEMMs an evaluation, not three.
Memory O(b n + n k), never n x n.

Threads: the units of rows, and of columns, run on :func:`metricfit.get_threads` threads
(BLAS on one thread inside them); the rows' squared errors are added in row order, the units'
column sums in unit order. J and dJ/dZ do not depend on the package's thread count (bit for
bit, ``tests/test_mlkr.py``).
"""

import numpy as np

from ..parallel import map_blocks
from . import _rows
from ._mlkr_kernels import regression_weights, scatter_columns, scatter_rows
from ._nca_kernels import add_column_sums, logit_floor, shifted_logits
from .nca import (
    add_transposed_product,
    add_unit_parts,
    linear_gradient,
    single_blas,
    unit_transposed,
)

__all__ = ["cost_grad", "cost_grad_embedded", "default_block_rows"]

BLOCK_BYTES = 2 ** 25  # 32 MiB for the (b, n) buffer by default
#: exponents under which an entry is skipped: exp would be subnormal in the dtype
#: (NCA's floor, :func:`metricfit.losses._nca_kernels.logit_floor`)
CUTOFF = {np.dtype(t): logit_floor(t) for t in (np.float64, np.float32)}
#: below this share of nonzero kernel entries a unit's gradient is scattered (O(nnz k)),
#: above it computed by GEMMs (O(u n k) at BLAS speed)
SPARSE_SHARE = 0.1
UNIT_ROWS = 128  # rows per work unit (fixed: not the thread count)
UNIT_COLUMNS = 512  # columns per work unit of the scatter's column side


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
    n, k = Z.shape
    WZ = np.zeros((n, k), dtype=Z.dtype)  # rows of W Z (the dense units' rows)
    WtZ = np.zeros((n, k), dtype=Z.dtype)  # W^T Z over the dense units' rows
    sums = _RowSums(n)
    scattered = np.zeros((n, k))  # the sparse units' part of dJ/dZ, float64
    with single_blas():  # nested in cost_grad's: a no-op there
        for start, W, dense, _ in _weight_blocks(Z, y, block_rows, sums, Z, WZ, scattered,
                                                 WtZ):
            _scatter_columns(W, Z, start, dense, scattered)
    dZ = 2.0 * ((sums.r + sums.c)[:, None] * Z - WZ - WtZ) + scattered  # float64
    return sums.cost(), dZ.astype(Z.dtype)


def cost_grad(A, X, y, block_rows=None):
    r"""Linear MLKR: J(A) and dJ/dA (k, d) for ``Z = X A^T``.

    Where ``d < 2k`` (the default full-rank map among them), NCA's cheaper algebra
    (:func:`metricfit.losses.nca.cost_grad`): with ``M = X^T W X`` summed block by block as
    ``X_B^T (W_B X)``,

    .. math::

        \frac{\partial J}{\partial A} = 2 A \big(X^T \operatorname{diag}(r + c) X - M -
        M^T\big) + S^T X,

    two (n x n) GEMMs an evaluation (the Gram rows and ``W_B X``) where ``(dJ/dZ)^T X`` needs
    three; ``S`` is the sparse units' scattered part of dJ/dZ (0 where every unit is dense).
    Otherwise ``(dJ/dZ)^T X`` from :func:`cost_grad_embedded`.
    """
    with single_blas():
        Z = X @ A.T  # (n, k)
        if A.shape[1] < 2 * A.shape[0]:
            return _cost_grad_narrow(A, X, Z, y, block_rows)
        J, dZ = cost_grad_embedded(Z, y, block_rows)
        return J, dZ.T @ X


def _cost_grad_narrow(A, X, Z, y, block_rows):
    """:func:`cost_grad` where ``d < 2k``: NCA's algebra, plus the sparse units' ``S^T X``."""
    n, d = X.shape
    k = A.shape[0]
    MT = np.zeros((d, d), dtype=X.dtype)  # M^T = sum_B (W_B X)^T X_B
    WX = np.zeros((min(block_rows or n, n), d), dtype=X.dtype)  # W_B X, a block at a time
    sums = _RowSums(n)
    scattered, any_sparse = np.zeros((n, k)), False
    for start, W, dense, WX_B in _weight_blocks(Z, y, block_rows, sums, X, WX, scattered):
        add_transposed_product(MT, WX_B, X[start:start + W.shape[0]])  # (d, d)
        any_sparse |= _scatter_columns(W, Z, start, dense, scattered)
    G = linear_gradient(A, X, sums.r + sums.c, MT)  # (k, d)
    if any_sparse:
        G = (G + scattered.T @ X).astype(X.dtype)
    return sums.cost(), G


class _RowSums:
    """Per point: ``r`` (W's row sums, 0 on the sparse units' rows), ``c`` (the dense units'
    column sums) and the squared errors, whose sum in row order is J."""

    def __init__(self, n):
        self.r, self.c, self.squares = np.zeros(n), np.zeros(n), np.empty(n)

    def cost(self):
        return _rows.ordered_sum(self.squares)


def _weight_blocks(Z, y, block_rows, sums, right, product, scattered, transposed=None):
    """Yield ``(start, W_B, dense, P_B)`` for each block of rows B = start.., W_B (b, n) the
    weights in a reused buffer, ``dense`` the units' choice (:func:`_block_weights`) and
    ``P_B = W_B right`` (b, m; 0 on the sparse units' rows) the rows start.. of ``product``
    where it has n rows, else its first b rows; with ``transposed`` (n, m), the dense units'
    ``W_u^T right_u`` added into it (by the units where their parts fit,
    :func:`metricfit.losses.nca.unit_transposed`, else by runs of dense units)."""
    n = Z.shape[0]
    b = block_rows or default_block_rows(n, Z.itemsize)
    y = np.asarray(y, dtype=np.float64)
    sq_norms = np.einsum("ij,ij->i", Z, Z).astype(np.float64)
    buffer = np.empty((min(b, n), n), dtype=Z.dtype)
    for start in range(0, n, b):
        stop = min(start + b, n)
        W = buffer[: stop - start]
        P = product[start:stop] if product.shape[0] == n else product[: stop - start]
        dense, folded = _block_weights(W, Z, sq_norms, y, start, sums, right, P, scattered,
                                       transposed)
        if transposed is not None and not folded:
            _add_dense_transposed(transposed, W, right[start:stop], dense)
        yield start, W, dense, P


def _block_weights(W, Z, sq_norms, y, start, sums, right, product, scattered,
                   transposed=None):
    """One block of rows B = start.. (W its (b, n) buffer): on :func:`metricfit.get_threads`
    threads over fixed units of :data:`UNIT_ROWS` rows, each unit's Gram rows ``Z_u Z^T``
    (BLAS on one thread where the pool runs), the shifted exponents ``min_l d_il - d_ij``
    (NCA's :func:`._nca_kernels.shifted_logits`, the cutoff as its floor), NumPy's ``exp``
    (SIMD: 2.1 ms for 1,797^2 float64 entries where numba's scalar ``exp`` took 17.7, one
    thread) and the weights (:func:`._mlkr_kernels.regression_weights`, ``r`` and the rows'
    squared errors). A unit with at least :data:`SPARSE_SHARE` of its entries nonzero then
    takes, while its rows of W are in its core's cache, ``W_u right`` into its rows of
    ``product`` and its column sums (float64, row order; the units' sums added into ``c`` in
    unit order); a sparser one has its ``r`` and its product rows set to 0 and its entries'
    row side scattered into ``scattered`` (:func:`._mlkr_kernels.scatter_rows`, O(nnz k)),
    the column side following by units of columns (:func:`_scatter_columns`). With
    ``transposed``, a dense unit also makes its ``W_u^T right_u``, added into it in unit
    order, where the parts fit (:func:`metricfit.losses.nca.unit_transposed`). Returns the
    units' choice (True: dense), which depends on the unit's entries alone, so the numbers
    do not depend on the thread count, and whether ``transposed`` was filled."""
    cutoff, tiny = CUTOFF[np.dtype(W.dtype)], _rows.tiny(W.dtype)
    ones = np.ones((1, W.shape[1]), dtype=W.dtype)
    n_units = -(-W.shape[0] // UNIT_ROWS)
    dense, partial = np.zeros(n_units, dtype=bool), np.zeros((n_units, W.shape[1]))
    parts = unit_transposed(n_units, transposed)

    def unit(rows):
        part, first, stop = W[rows], start + rows.start, start + rows.stop
        np.matmul(Z[first:stop], Z.T, out=part)  # Gram rows (u, n)
        shifted_logits(part, sq_norms, first, cutoff)
        np.exp(part, out=part)  # nothing underflows: skipped exponents are finite
        nnz = regression_weights(part, y, first, ones, tiny, sums.r[first:stop],
                                 sums.squares[first:stop])
        u = rows.start // UNIT_ROWS
        dense[u] = nnz >= SPARSE_SHARE * part.size
        if dense[u]:
            np.matmul(part, right, out=product[rows])  # (u, m) rows of W right
            add_column_sums(part, partial[u])
            if parts is not None:  # (n, m): W_u^T right_u
                np.matmul(part.T, right[first:stop], out=parts[u])
        else:  # the scatter adds the whole of these rows' terms
            sums.r[first:stop] = 0.0
            product[rows] = 0.0
            scatter_rows(part, Z, first, scattered, 0, part.shape[0])

    map_blocks(unit, W.shape[0], UNIT_ROWS)
    for unit_sums in partial[dense]:  # the dense units' column sums, in unit order
        sums.c += unit_sums
    if parts is None:
        return dense, False
    add_unit_parts(transposed, parts, np.flatnonzero(dense))
    return dense, True


def _add_dense_transposed(acc, W, Z_B, dense):
    """``acc += W_u^T Z_u`` for each run of consecutive dense units (by fixed units of
    columns on the pool: :func:`metricfit.losses.nca.add_transposed_product`)."""
    bounds = np.flatnonzero(np.diff(np.concatenate([[False], dense, [False]]).astype(np.int8)))
    for lo, hi in zip(bounds[::2] * UNIT_ROWS, bounds[1::2] * UNIT_ROWS, strict=True):
        add_transposed_product(acc, W[lo:hi], Z_B[lo:hi])


def _scatter_columns(W, Z, start, dense, scattered):
    """The column side of the sparse units' scatter: ``scattered[j] -= 2 w_ij (z_i - z_j)``
    over their rows i in order (:func:`._mlkr_kernels.scatter_columns`), by fixed units of
    :data:`UNIT_COLUMNS` columns on the pool; returns whether there was a sparse unit."""
    if dense.all():
        return False
    rows = np.concatenate([np.arange(u * UNIT_ROWS, min((u + 1) * UNIT_ROWS, W.shape[0]))
                           for u in np.flatnonzero(~dense)])
    map_blocks(lambda cols: scatter_columns(W, Z, start, rows, scattered, cols.start,
                                            cols.stop), W.shape[1], UNIT_COLUMNS)
    return True


def objective(X, y, n_components, block_rows=None):
    """``f(theta) -> (J, dJ/dtheta)`` on the flat A (n_components * n_features), computed in
    X's dtype (float32 kept)."""
    d = X.shape[1]

    def f(theta):
        A = np.asarray(theta, dtype=X.dtype).reshape(n_components, d)
        J, G = cost_grad(A, X, y, block_rows)
        return J, G.ravel()

    return f
