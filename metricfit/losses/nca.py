r"""Neighbourhood Components Analysis (NCA) cost and gradient, a block of rows at a time.

Seed 003 (LeCun, *Learning Similarity Metrics*, slides "Neighborhood Component Analysis",
after Goldberger, Roweis, Hinton & Salakhutdinov, NIPS 2004). With embeddings
``z_i = f(x_i)`` (linear: ``z_i = A x_i``) and squared distances
``d_ij = ||z_i - z_j||^2``, point i picks j as its neighbour with the softmax

.. math::

    p_{ij} = \frac{\exp(-d_{ij})}{\sum_{l \ne i} \exp(-d_{il})}, \qquad p_{ii} = 0,

and the objective is the expected number of points whose picked neighbour has their identity,
:math:`f = \sum_i p_i` with :math:`p_i = \sum_{j \in C_i} p_{ij}` (C_i: the other points of
i's identity). We *minimise* ``J = -f`` (scikit-learn's ``NeighborhoodComponentsAnalysis``
minimises the same ``-f``, unnormalised, so the two agree number for number).

The gradient, derived by hand
-----------------------------
Write :math:`m_{ij} = [c_i = c_j]` (0 on the diagonal). From
:math:`\partial \log p_{il} / \partial d_{ij} = -\delta_{lj} + p_{ij}`,

.. math::

    \frac{\partial p_i}{\partial d_{ij}} = \sum_l m_{il} p_{il} (p_{ij} - \delta_{lj})
        = -p_{ij} (m_{ij} - p_i),
    \qquad
    w_{ij} := \frac{\partial J}{\partial d_{ij}} = p_{ij} (m_{ij} - p_i).

Each row of W sums to zero (:math:`\sum_j w_{ij} = p_i - p_i \sum_j p_{ij} = 0`), which the
code does not rely on. Since :math:`\partial d_{ij} / \partial z_i = 2 (z_i - z_j)` and
:math:`\partial d_{ij} / \partial z_j = -2 (z_i - z_j)`,

.. math::

    \frac{\partial J}{\partial z_i} = 2 \sum_j (w_{ij} + w_{ji}) (z_i - z_j), \qquad
    \frac{\partial J}{\partial Z} = 2 \big(\operatorname{diag}(r + c) Z - W Z - W^T Z\big),

with the row sums ``r = W 1`` and column sums ``c = W^T 1``. For the linear map,
:math:`\partial J / \partial A = (\partial J / \partial Z)^T X`, i.e.

.. math::

    \frac{\partial J}{\partial A} = 2 A \sum_i \Big(\sum_j p_{ij} x_{ij} x_{ij}^T \, m_{ij}
        - p_i \sum_k p_{ik} x_{ik} x_{ik}^T\Big), \qquad x_{ij} = x_i - x_j,

which is minus the slide's equation
:math:`\partial f / \partial A = 2A \sum_i (p_i \sum_k p_{ik} x_{ik} x_{ik}^T -
\sum_{j \in C_i} p_{ij} x_{ij} x_{ij}^T)` (the slide gives the gradient of f, which NCA
maximises; the sign checks out against central differences in ``tests/test_nca.py``). The
slide's form costs O(n^2 d^2); the form through ``dJ/dZ`` costs O(n^2 k + n k d).

Memory: blocks of rows
----------------------
For a block B of b rows, one (b, n) buffer holds in turn the Gram block ``Z_B Z^T`` (GEMM),
the shifted logits ``min_l d_il - d_ij`` (numba), their ``exp`` (NumPy: SIMD in float32;
in float64 only on AVX-512 hosts) and the weights
``w_ij`` (numba); then ``W_B Z`` (GEMM) fills rows B of one (n, k) array and ``W_B^T Z_B`` is
accumulated into another. Memory is O(b n + n k), never n x n (and the units' parts of
``W_B^T Z_B``, at most :data:`FOLD_ENTRIES`); per evaluation: three (n x n x k) GEMMs. The
linear map has a cheaper algebra when d < 2k: ``dJ/dA = 2 A (X^T diag(r + c) X - M -
M^T)`` with ``M = X^T W X`` summed as ``X_B^T (W_B X)``, two (n x n) GEMMs in all
(:func:`cost_grad`), as many as scikit-learn's n x n computation.
The softmax is shifted by the row's smallest distance, so ``exp`` never overflows; sums are
accumulated in float64 also for float32 data, a row's total and its sum of weights on vector
lanes in a fixed order (:func:`metricfit.losses._simd_rows.pair_dot`), so that they vectorise
and give the same bits on every CPU and thread count.

Threads: a block's work runs on :func:`metricfit.get_threads` threads over fixed units of
``UNIT_ROWS`` rows (the rows of W are independent): each unit computes its Gram rows, the
numba kernels and ``exp``, then, while its rows of W are in its core's cache, their product
with X (or Z) and their column sums (float64, in row order); the units' column sums are then
added in unit order. ``W^T Z``: each unit's ``W_u^T Z_u`` too, the parts added in unit order
(:func:`unit_transposed`), else over each block by fixed units of columns, as ``X_B^T (W_B
X)``.
BLAS runs on one thread inside the units. The result does not depend on the thread count
(bit for bit, ``tests/test_threads_plda_nca.py``) and equals the serial computation's.
"""

import math

import numpy as np

from ..parallel import blas_threads, get_threads, map_blocks
from . import _rows
from ._nca_kernels import (
    add_column_sums,
    identity_members,
    logit_floor,
    neighbour_weights,
    shifted_logits,
)

__all__ = ["cost_grad_embedded", "cost_grad", "objective", "default_block_rows"]

BLOCK_BYTES = 2 ** 25  # 32 MiB for the (b, n) buffer by default
MIN_BLOCK_ROWS = 64  # fewer rows make W_B^T Z_B a thin, memory-bound update of all of Z
UNIT_ROWS = 128  # rows per work unit of the numba kernels (fixed: not the thread count)
UNIT_COLUMNS = 512  # columns per work unit of W^T Z / X_B^T (W_B X)
#: the most entries of the units' own ``W_u^T Z_u`` (n_units x n x k) that a block keeps: up
#: to it the units make them while their rows are in cache (:func:`unit_transposed`)
FOLD_ENTRIES = 2 ** 22


def default_block_rows(n_samples, itemsize):
    """Rows per block: a (b, n) buffer of about 32 MiB, at least 64 rows, at most n."""
    return int(min(n_samples, max(MIN_BLOCK_ROWS, BLOCK_BYTES // (n_samples * itemsize))))


def _block_to_weights(Z, S, sq_norms, codes, weight_args, start, p, r, c, right, product,
                      transposed=None):
    """One block of rows B = start.., the Gram block S = Z_B Z^T (b, n) -> logits -> exp ->
    weights W_B, with ``p``, ``r`` (b,), ``product = W_B right`` (b, m) and W_B's column
    sums added into ``c`` (n,), on :func:`metricfit.parallel.get_threads` threads over fixed
    units of ``UNIT_ROWS`` rows: each unit's Gram rows, W, ``p``, ``r``, product rows and
    column sums (rows are independent; the unit's rows of W are read again while they are in
    its core's cache), then the units' column sums added into ``c`` in unit order. With
    ``transposed`` (n, m), the units' ``W_u^T right_u`` too, added into it
    (:func:`unit_transposed`); returns whether they were (False: too many entries, the
    caller adds ``W_B^T right_B``). The numbers do not depend on the thread count.
    """
    floor, tiny = logit_floor(S.dtype), _rows.tiny(S.dtype)
    n_units = -(-S.shape[0] // UNIT_ROWS)
    parts = unit_transposed(n_units, transposed)

    def unit(rows):
        part = S[rows]
        first = start + rows.start
        np.matmul(Z[first:start + rows.stop], Z.T, out=part)  # Gram rows (u, n)
        shifted_logits(part, sq_norms, first, floor)
        np.exp(part, out=part)  # NumPy's SIMD exp: 2-3x a numba loop in float32
        neighbour_weights(part, codes, first, *weight_args, tiny, p[rows], r[rows])
        np.matmul(part, right, out=product[rows])  # (u, m) rows of W_B right
        add_column_sums(part, partial[rows.start // UNIT_ROWS])
        if parts is not None:  # (n, m): W_u^T right_u, the unit's share of W_B^T right_B
            np.matmul(part.T, right[first:start + rows.stop], out=parts[rows.start // UNIT_ROWS])

    partial = np.zeros((n_units, S.shape[1]))  # per unit, float64
    map_blocks(unit, S.shape[0], UNIT_ROWS)
    for unit_sums in partial:  # the units' column sums, added in unit order
        c += unit_sums
    if parts is None:
        return False
    add_unit_parts(transposed, parts, range(n_units))
    return True


def unit_transposed(n_units, transposed):
    """A (n_units, n, m) buffer for the units' own ``W_u^T right_u`` where ``transposed``
    (n, m) is given and they hold at most :data:`FOLD_ENTRIES` entries, else None. Made by
    the units while their rows of W are in cache, they spare ``W_B^T right_B`` a second pass
    over the whole (b, n) block from memory: NCA on digits to 2-d, 13.5 -> 10.9 ms an
    evaluation on one thread (8.7 -> 7.0 on two); to 30-d no change, the parts' products
    costing what the pass did (docs/results/timing.md)."""
    if transposed is None or n_units * transposed.size > FOLD_ENTRIES:
        return None
    return np.empty((n_units, *transposed.shape), dtype=transposed.dtype)


def add_unit_parts(acc, parts, units):
    """``acc += parts[u]`` for the units ``u`` in order, by fixed units of
    :data:`UNIT_COLUMNS` rows of acc on the pool (each entry's additions in unit order)."""
    units = list(units)

    def rows(block):
        for u in units:
            acc[block] += parts[u, block]
    map_blocks(rows, acc.shape[0], UNIT_COLUMNS)


def _weight_blocks(Z, codes, block_rows, p, r, c, right, product, transposed=None):
    """Yield ``(start, stop, W_B, P_B)`` for each block of rows, W_B (b, n) the weights
    ``w_ij = p_ij (m_ij - p_i)`` in a reused buffer and ``P_B = W_B right`` (b, m) the rows
    of ``product`` (n, m), or of a reused buffer when ``product`` has fewer rows than Z; fills
    p, r (n,) and adds into c (n,), and ``W_B^T right_B`` into ``transposed`` (n, m) where it
    is given (by the units where their parts fit, :func:`unit_transposed`, else by units of
    columns)."""
    n = Z.shape[0]
    b = block_rows or default_block_rows(n, Z.itemsize)
    sq_norms = np.einsum("ij,ij->i", Z, Z)  # (n,)
    # neighbour_weights' identity members and its row of ones (for pair_dot)
    weight_args = (*identity_members(codes), np.ones((1, n), dtype=Z.dtype))
    buffer = np.empty((min(b, n), n), dtype=Z.dtype)
    for start in range(0, n, b):
        stop = min(start + b, n)
        S = buffer[: stop - start]
        P = product[start:stop] if product.shape[0] == n else product[: stop - start]
        folded = _block_to_weights(Z, S, sq_norms, codes, weight_args, start, p[start:stop],
                                   r[start:stop], c, right, P, transposed)
        if transposed is not None and not folded:
            add_transposed_product(transposed, S, right[start:stop])
        yield start, stop, S, P


def add_transposed_product(acc, W, Y):
    """``acc += W^T Y`` (n, m) by fixed units of W's columns (= acc's rows), in the pool."""
    def unit(cols):
        acc[cols] += W[:, cols].T @ Y
    map_blocks(unit, W.shape[1], UNIT_COLUMNS)


def single_blas():
    """BLAS on one thread while the pool does the work (no spinning BLAS workers fighting
    the pool's threads for the cores); left alone on one metricfit thread."""
    return blas_threads(1 if get_threads() > 1 else None)


def cost_grad_embedded(Z, codes, block_rows=None):
    r"""NCA's ``J = -sum_i p_i`` and ``dJ/dZ = 2 (diag(r + c) Z - W Z - W^T Z)`` from
    embeddings (module docstring): three (n x n x k) GEMMs, a block of rows at a time.

    Parameters
    ----------
    Z : ndarray of shape (n_samples, n_components), float32 or float64
        The embedded points.
    codes : ndarray of shape (n_samples,), int64
        Identity codes (equal codes = same identity).
    block_rows : int, default=None
        Rows per block (None: :func:`default_block_rows`). Memory is O(block_rows x n).

    Returns
    -------
    J : float
    dZ : ndarray of shape (n_samples, n_components), dtype of Z
    """
    Z = np.ascontiguousarray(Z)
    n, k = Z.shape
    WZ = np.empty_like(Z)  # rows of W Z, (n, k)
    WtZ = np.zeros((n, k), dtype=Z.dtype)  # W^T Z, accumulated (n, k)
    p, r, c = np.empty(n), np.empty(n), np.zeros(n)
    with single_blas():  # nested in cost_grad's: a no-op there
        for _ in _weight_blocks(Z, codes, block_rows, p, r, c, Z, WZ, WtZ):
            pass  # W Z's rows and W^T Z came with W
    dZ = (r + c).astype(Z.dtype)[:, None] * Z
    dZ -= WZ
    dZ -= WtZ
    dZ *= 2
    return -math.fsum(p), dZ


def cost_grad(A, X, codes, block_rows=None):
    r"""Linear NCA: ``J(A)`` and ``dJ/dA`` (k, d) for ``Z = X A^T``.

    With ``M = X^T W X`` (d, d), the gradient is the slide's shape,

    .. math::

        \frac{\partial J}{\partial A} = (\partial J / \partial Z)^T X
            = 2 A \big(X^T \operatorname{diag}(r + c) X - M - M^T\big),

    as :math:`Z^T W X = A M` and :math:`Z^T W^T X = A M^T`. ``M`` is summed block by block
    (``X_B^T (W_B X)``): two (n x n) GEMMs per evaluation (the Gram block, ``W_B X``) where
    :func:`cost_grad_embedded` needs three. Taken when ``d < 2k``; otherwise the product
    ``W_B X`` (n^2 d) would cost more than ``W Z`` and ``W^T Z`` (2 n^2 k), and the gradient
    goes through ``dJ/dZ``.

    Parameters
    ----------
    A : ndarray of shape (n_components, n_features)
    X : ndarray of shape (n_samples, n_features)
    codes : ndarray of shape (n_samples,), int64
    block_rows : int, default=None

    Returns
    -------
    J : float
    G : ndarray of shape (n_components, n_features)
    """
    with single_blas():
        return _cost_grad(A, X, codes, block_rows)


def _cost_grad(A, X, codes, block_rows):
    Z = X @ A.T  # (n, k)
    k, d = A.shape
    if d >= 2 * k:
        J, dZ = cost_grad_embedded(Z, codes, block_rows)
        return J, dZ.T @ X  # (k, d)
    n = X.shape[0]
    MT = np.zeros((d, d), dtype=Z.dtype)  # M^T = sum_B (W_B X)^T X_B
    WX = np.empty((min(block_rows or n, n), d), dtype=Z.dtype)  # W_B X, a block at a time
    p, r, c = np.empty(n), np.empty(n), np.zeros(n)
    for start, stop, _, rows in _weight_blocks(Z, codes, block_rows, p, r, c, X, WX):
        add_transposed_product(MT, rows, X[start:stop])  # (d, d)
    return -math.fsum(p), linear_gradient(A, X, r + c, MT)


def linear_gradient(A, X, row_and_column_sums, MT):
    """``2 A (X^T diag(r + c) X - M - M^T)`` (k, d) from ``r + c`` (n,) and ``M^T = sum_B
    (W_B X)^T X_B`` (d, d): the gradient of a loss ``f(W)`` with ``dJ/dZ = 2 (diag(r + c) Z -
    W Z - W^T Z)`` through ``Z = X A^T`` (NCA's, and MLKR's dense part)."""
    M = MT.T
    D = (X.T * row_and_column_sums.astype(X.dtype)) @ X  # X^T diag(r + c) X, (d, d)
    D -= M
    D -= M.T
    return 2 * (A @ D)  # (k, d)


def objective(mapping, X, codes, block_rows=None):
    """``f(theta) -> (J, dJ/dtheta)`` for NCA through any mapping (``forward`` / ``backward``
    on a flat theta), computed in X's dtype. A mapping that declares ``is_linear``
    (``x -> A x``, ``theta = A.ravel()``: :class:`metricfit.mappings.Linear`) takes
    :func:`cost_grad` (the ``2 A (...)`` form when it is cheaper).

    Parameters
    ----------
    mapping : metricfit.mappings.Mapping
    X : ndarray of shape (n_samples, n_features), float32 or float64
    codes : ndarray of shape (n_samples,), int64
    block_rows : int, default=None

    Returns
    -------
    f : callable
    """
    if mapping.is_linear:
        shape = (mapping.n_components, mapping.n_features)

        def f_linear(theta):
            J, G = cost_grad(np.asarray(theta, dtype=X.dtype).reshape(shape), X, codes,
                             block_rows)
            return J, G.ravel()

        return f_linear

    def f(theta):
        theta = np.asarray(theta, dtype=X.dtype)
        Z, cache = mapping.forward(theta, X)
        J, dZ = cost_grad_embedded(Z, codes, block_rows)
        return J, mapping.backward(theta, cache, dZ)

    return f
