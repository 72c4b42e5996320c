r"""ITML: Information-Theoretic Metric Learning by Bregman projections (Davis, Kulis, Jain, Sra
and Dhillon, ICML 2007, Algorithm 1).

The problem (eq. 4 with slack, section 3.2): find a positive definite M close to a prior
:math:`M_0` in LogDet divergence,

.. math::

    \min_{M \succ 0, \xi} D_{\ell d}(M, M_0) + \gamma D_{\ell d}(\operatorname{diag}(\xi),
        \operatorname{diag}(\xi_0))
    \quad \text{s.t.}\quad \delta_c\, v_c^T M v_c \le \delta_c\, \xi_c,

with :math:`v_c = x_i - x_j` the difference of constraint c's pair, :math:`\delta_c = +1`
for a similar pair (:math:`d_M \le u`) and :math:`-1` for a dissimilar one
(:math:`d_M \ge \ell`), and the targets :math:`\xi_0` = u or :math:`\ell`.

Algorithm 1 projects cyclically onto one constraint at a time (a Bregman projection, exact in
closed form for a rank-one constraint). For constraint c, with :math:`p = v^T M v` and its dual
variable :math:`\lambda_c \ge 0`:

.. math::

    \alpha &= \min\Big(\lambda_c,\ \frac{\delta}{2}\Big(\frac{1}{p} - \frac{\gamma}{\xi_c}
        \Big)\Big) \quad\text{(the code's } \tfrac{\gamma}{\gamma + 1}
        (\tfrac{1}{p} - \tfrac{1}{\xi_c}) \text{ form, as in the authors' release)},\\
    \beta &= \delta \alpha / (1 - \delta \alpha p), \qquad
    \xi_c \leftarrow \gamma \xi_c / (\gamma + \delta \alpha \xi_c), \qquad
    \lambda_c \leftarrow \lambda_c - \alpha, \\
    M &\leftarrow M + \beta\, M v v^T M .

The update is a symmetric rank-one change, O(d^2) per constraint, and each projection reads
the M the previous one wrote: the sweep over the constraints is sequential by nature (the
only parallel work, the O(d^2) inner products, is too small to split across threads). The
kernel :func:`bregman_sweep` writes it so that every O(d^2) loop is an element-wise
``axpy`` over a contiguous row (which the compiler vectorises without ``fastmath``):
``M v = sum_j v_j M[j, :]`` (M symmetric) and ``M[j, :] += beta (Mv)_j (Mv)``. A constraint
that is satisfied with a zero dual variable gives ``alpha = 0`` and skips the rank-one update.
Pairs with ``v = 0`` never change M and are dropped before the sweeps (their dissimilar form
would divide by ``p = 0``).

Convergence (as the authors' release and metric-learn): after each sweep,
``sum |lambda - lambda_old| / (||lambda|| + ||lambda_old||) < tol``.
"""

import numpy as np
from numba import njit

__all__ = ["bregman_sweep", "fit_itml", "distance_bounds_of"]


@njit(cache=True)
def bregman_sweep(M, V, delta, lam, xi, gamma_proj, inv_gamma):  # pragma: no cover - numba
    """One cyclic sweep of Algorithm 1 over the constraints, in place on M, lam and xi.

    Parameters
    ----------
    M : ndarray (d, d), float64, symmetric positive definite (updated)
    V : ndarray (n, d), float64, the pair differences
    delta : ndarray (n,), float64, +1 similar / -1 dissimilar
    lam, xi : ndarray (n,), float64, dual variables and slack targets (updated)
    gamma_proj : float, ``gamma / (gamma + 1)`` (1 for gamma = inf)
    inv_gamma : float, ``1 / gamma`` (0 for gamma = inf)
    """
    n, d = V.shape
    Mv = np.empty(d)
    for c in range(n):
        for k in range(d):
            Mv[k] = 0.0
        for j in range(d):
            vj = V[c, j]
            if vj != 0.0:
                for k in range(d):
                    Mv[k] += vj * M[j, k]
        p = 0.0
        for k in range(d):
            p += V[c, k] * Mv[k]
        if not p > 0.0:
            continue
        s = delta[c]
        alpha = min(lam[c], s * gamma_proj * (1.0 / p - 1.0 / xi[c]))
        if alpha == 0.0:
            continue
        lam[c] -= alpha
        beta = s * alpha / (1.0 - s * alpha * p)
        xi[c] = 1.0 / (1.0 / xi[c] + s * alpha * inv_gamma)
        for j in range(d):
            b = beta * Mv[j]
            for k in range(d):
                M[j, k] += b * Mv[k]


def distance_bounds_of(diff, M0, percentiles=(5, 95), squared=False):
    """The targets (u, l) from the differences ``diff`` (n, d) of random pairs of points:
    the 5th and 95th percentiles of their distances ``sqrt(v^T M0 v)`` (metric-learn's
    convention, used as targets of the *squared* distance), or with ``squared=True`` of
    the squared distances (the authors' ``ComputeDistanceExtremes``). Never the n x n
    distance matrix. Zero bounds become 1e-9.
    """
    if diff.shape[0] == 0:
        raise ValueError("ITML needs at least two distinct points to set its bounds.")
    sq = np.einsum("ij,ij->i", diff @ M0, diff)
    u, lo = np.percentile(sq if squared else np.sqrt(np.maximum(sq, 0)), percentiles)
    return np.array([max(float(u), 1e-9), max(float(lo), 1e-9)])


def fit_itml(V, delta, M0, bounds, gamma=1.0, max_iter=1000, tol=1e-3, sweep=bregman_sweep,
             callback=None):
    """Algorithm 1: sweeps of Bregman projections until the duals settle.

    Parameters
    ----------
    V : ndarray (n, d), the pair differences (any float; computed in float64)
    delta : ndarray (n,), +1 similar / -1 dissimilar
    M0 : ndarray (d, d), symmetric positive definite prior
    bounds : (u, l), the targets of similar and dissimilar pairs
    gamma : float, slack trade-off (inf: hard constraints)
    max_iter, tol : sweeps at most; the relative change of the duals to stop at
    sweep : the kernel (:func:`bregman_sweep` or its NumPy twin)
    callback : callable(M, n_iter) or None

    Returns
    -------
    M : ndarray (d, d) float64, n_iter : int, converged : bool
    """
    V = np.ascontiguousarray(V, dtype=np.float64)
    delta = np.asarray(delta, dtype=np.float64)
    keep = np.any(V != 0, axis=1)
    V, delta = np.ascontiguousarray(V[keep]), np.ascontiguousarray(delta[keep])
    M = np.array(M0, dtype=np.float64, order="C")
    lam = np.zeros(V.shape[0])
    xi = np.where(delta > 0, bounds[0], bounds[1]).astype(np.float64)
    gamma_proj = 1.0 if np.isinf(gamma) else gamma / (gamma + 1.0)
    inv_gamma = 0.0 if np.isinf(gamma) else 1.0 / gamma
    n_iter, converged = 0, V.shape[0] == 0
    for n_iter in range(1, max_iter + 1):
        if converged:
            break
        old = lam.copy()
        sweep(M, V, delta, lam, xi, gamma_proj, inv_gamma)
        if callback is not None:
            callback(M, n_iter)
        norm = np.linalg.norm(lam) + np.linalg.norm(old)
        if norm == 0 or np.abs(lam - old).sum() / norm < tol:
            converged = True
            break
    if not np.isfinite(M).all():
        raise ValueError("ITML: the Bregman projections diverged (non-finite metric); rescale "
                         "the pairs (e.g. StandardScaler) or raise gamma.")
    return 0.5 * (M + M.T), n_iter, converged
