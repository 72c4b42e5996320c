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
(d, d) outer products: three (n x n x k) GEMMs instead of O(n^2 d^2).

Memory: blocks of rows
----------------------
:math:`\hat y_i` needs only row i of P, so one pass suffices: for a block B of b rows, one
(b, n) buffer holds in turn ``Z_B Z^T`` (GEMM), the shifted distances, the kernel (a
stabilised softmax: :math:`\exp(\min_l d_{il} - d_{ij})`, the point itself 0), and W;
``W_B Z`` fills rows B of one (n, k) array and ``W_B^T Z_B`` is accumulated into another.
Memory O(b n + n k), never n x n.
"""

import numpy as np

__all__ = ["cost_grad", "cost_grad_embedded", "default_block_rows"]

BLOCK_BYTES = 2 ** 25  # 32 MiB for the (b, n) buffer by default


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
    y = np.asarray(y, dtype=Z.dtype)
    n, k = Z.shape
    b = block_rows or default_block_rows(n, Z.itemsize)
    buffer = np.empty((min(b, n), n), dtype=Z.dtype)
    sq_norms = np.einsum("ij,ij->i", Z, Z)
    WZ = np.empty_like(Z)
    WtZ = np.zeros_like(Z)
    r, c = np.empty(n), np.zeros(n)
    J = 0.0
    for start in range(0, n, b):
        stop = min(start + b, n)
        rows = np.arange(start, stop)
        W = buffer[: stop - start]
        np.matmul(Z[start:stop], Z.T, out=W)  # Gram block
        W *= -2
        W += sq_norms[start:stop, None]
        W += sq_norms[None, :]  # d_ij
        np.maximum(W, 0, out=W)
        W[rows - start, rows] = np.inf  # leave one out
        W -= W.min(axis=1, keepdims=True)
        np.negative(W, out=W)
        with np.errstate(under="ignore"):  # far points weigh 0: that is the softmax
            np.exp(W, out=W)  # k_ij / k_i,nearest, 0 at j = i
        W /= W.sum(axis=1, dtype=np.float64, keepdims=True).astype(Z.dtype)  # p_ij
        y_hat = W @ y  # (b,)
        residual = y_hat - y[start:stop]
        J += float(np.sum(residual.astype(np.float64) ** 2))
        W *= y[None, :] - y_hat[:, None]
        W *= (-2 * residual)[:, None]  # w_ij
        r[start:stop] = W.sum(axis=1, dtype=np.float64)
        c += W.sum(axis=0, dtype=np.float64)
        np.matmul(W, Z, out=WZ[start:stop])
        WtZ += W.T @ Z[start:stop]
    dZ = (r + c).astype(Z.dtype)[:, None] * Z
    dZ -= WZ
    dZ -= WtZ
    dZ *= 2
    return J, dZ


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
