"""Slow plain-NumPy twins of the compiled kernels: one pair at a time, straight from the
papers' equations. The kernels must match them."""

import numpy as np


def _regulariser(A, A0, lam):
    A0 = np.zeros_like(A) if A0 is None else A0
    return 0.5 * lam * np.sum((A - A0) ** 2), lam * (A - A0)


def tsml_cost_grad_ref(A, X1, X2, s, lam=0.0, A0=None):
    """Seed 002 eqs. 9-10, pair by pair."""
    J, G = 0.0, np.zeros_like(A)
    for x, y, si in zip(X1, X2, s):
        a, b = A @ x, A @ y
        c = a + si * b
        nc = np.linalg.norm(c)
        unit = c / nc if nc > 0 else np.zeros_like(c)
        J += 0.5 * a @ a + 0.5 * b @ b - nc + 1
        G += np.outer(a - unit, x) + np.outer(b - si * unit, y)
    R, dR = _regulariser(A, A0, lam)
    n = len(s)
    return J / n + R, G / n + dR


def csml_cost_grad_ref(A, X1, X2, s, lam=0.0, A0=None):
    """J = mean(-s cos(Ax, Ay)); gradient seed 002 eq. 11, pair by pair."""
    J, G = 0.0, np.zeros_like(A)
    for x, y, si in zip(X1, X2, s):
        a, b = A @ x, A @ y
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        if na * nb == 0:
            continue
        J += -si * (a @ b) / (na * nb)
        scale = si / (na * nb)
        G += scale * (np.outer((a @ b) / na**2 * a - b, x) + np.outer((a @ b) / nb**2 * b - a, y))
    R, dR = _regulariser(A, A0, lam)
    n = len(s)
    return J / n + R, G / n + dR


def central_differences(f, A, eps=1e-6):
    """Numerical gradient of the scalar f at A by central differences."""
    num = np.zeros_like(A, dtype=np.float64)
    for idx in np.ndindex(A.shape):
        Ap, Am = A.copy(), A.copy()
        Ap[idx] += eps
        Am[idx] -= eps
        num[idx] = (f(Ap) - f(Am)) / (2 * eps)
    return num


def relative_error(G, num):
    """||G - num|| / ||num||, floored at 1e-8 where the true gradient is 0 (CSML with k = 1)."""
    return np.linalg.norm(np.ravel(G) - np.ravel(num)) / max(np.linalg.norm(num), 1e-8)


def nca_cost_grad_ref(A, X, y):
    """Seed 003's NCA slides, point by point: ``p_ij`` by the softmax over ``k != i``,
    ``J = -sum_i sum_{j in C_i} p_ij`` and ``dJ/dA = -2A sum_i (p_i sum_k p_ik x_ik x_ik^T
    - sum_{j in C_i} p_ij x_ij x_ij^T)`` (minus the slide's gradient of f)."""
    n = X.shape[0]
    J, S = 0.0, np.zeros((X.shape[1], X.shape[1]))
    for i in range(n):
        others = [k for k in range(n) if k != i]
        logits = np.array([-np.sum((A @ (X[i] - X[k])) ** 2) for k in others])
        p = np.exp(logits - logits.max())
        p /= p.sum()
        p_i = sum(p_ik for k, p_ik in zip(others, p) if y[k] == y[i])
        J -= p_i
        for k, p_ik in zip(others, p):
            x_ik = X[i] - X[k]
            S += p_i * p_ik * np.outer(x_ik, x_ik)
            if y[k] == y[i]:
                S -= p_ik * np.outer(x_ik, x_ik)
    return J, -2 * A @ S
