r"""Projected gradient descent over an ``f(x) -> (J, G)`` callable and a projection.

The method of Bertsekas (1976), "On the Goldstein-Levitin-Polyak gradient projection
method" (seed 001 ref. [3]; LDML's constrained fit, seed 001 section 2.3). For a closed
convex set C with Euclidean projection P, each iteration searches along the *projection
arc*

.. math::

    x(\alpha) = P(x_k - \alpha g_k), \qquad g_k = \nabla f(x_k),

and accepts the first step of ``alpha, beta alpha, beta^2 alpha, ...`` satisfying the
Armijo condition along the arc

.. math::

    f(x(\alpha)) \le f(x_k) + \sigma\, g_k^T (x(\alpha) - x_k).

For convex C, ``g_k^T (x(alpha) - x_k) <= -||x(alpha) - x_k||^2 / alpha <= 0``, so an
accepted step never increases f: the costs of the iterates are non-increasing. Near the
solution the decrease falls below the rounding level of f (``64 eps (1 + |f|)`` in the
dtype f is computed in): there the change ``f(x(alpha)) - f(x_k)`` is estimated from the
gradients by the trapezoidal rule, ``(g_k + g(alpha))^T (x(alpha) - x_k) / 2`` (exact for a
quadratic; the approximate Armijo test of Hager & Zhang 2005), so the run can reach a small
``tol``; monotonicity then holds up to that rounding level. The step
accepted at iteration k, times ``grow``, is the first one tried at iteration k + 1 (the step
is carried over and allowed to grow back). The run stops when the projected-gradient
residual ``||x_k - P(x_k - g_k)||`` (zero exactly at the constrained stationary points) is
below ``tol``.
"""

import numpy as np
from scipy.optimize import OptimizeResult

__all__ = ["minimize_projected", "project_psd", "project_diagonal", "ScaledObjective"]

_MESSAGES = {
    0: "projected gradient residual below tol",
    1: "maximum number of iterations reached",
    2: "line search along the projection arc found no decrease (precision limit)",
    3: "non-finite cost or gradient at the start point",
}


def _evaluate(fun, x):
    """(J, G) in float64 and the rounding level of J (in the dtype fun computes it in)."""
    J, G = fun(x)
    kind = np.result_type(J)
    eps = np.finfo(kind).eps if np.issubdtype(kind, np.floating) else np.finfo(float).eps
    J = float(J)
    return J, np.asarray(G, dtype=np.float64).ravel(), 64 * eps * (1.0 + abs(J))


def _sufficient_decrease(J, G, J_new, G_new, step, sigma, noise):
    """Armijo along the arc; below the rounding level of J, the change of f is taken from
    the gradients by the trapezoidal rule (exact for quadratics; Hager & Zhang 2005)."""
    if not (np.isfinite(J_new) and np.isfinite(G_new).all()):
        return False
    slope = float(G @ step)
    if abs(J_new - J) <= noise:  # the difference of the costs is rounding error
        return 0.5 * float((G + G_new) @ step) <= sigma * slope
    return J_new <= J + sigma * slope


def minimize_projected(fun, x0, project, *, max_iter=200, tol=1e-6, callback=None,
                       random_state=None, step_size=1.0, sigma=1e-4, beta=0.5, grow=2.0,
                       max_backtrack=60):
    r"""Minimise ``fun`` over the convex set onto which ``project`` projects.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (J, G)`` for a flat vector x (float32 J, G accepted; the solver works
        in float64).
    x0 : array-like
        Start point (flattened, copied to float64, then projected).
    project : callable
        ``project(x) -> x'``, the Euclidean projection onto a closed convex set (a flat
        float64 vector in, one of the same size out; it must not modify its input).
    max_iter : int, default=200
        Maximum number of iterations (accepted steps).
    tol : float, default=1e-6
        Stop when ``||x - P(x - G(x))||_2 < tol``.
    callback : callable, default=None
        ``callback(x, J, n_iter)`` after each accepted step.
    random_state : ignored
        Deterministic; accepted so that every solver takes the same options.
    step_size : float, default=1.0
        First step tried at the first iteration.
    sigma : float, default=1e-4
        Armijo sufficient-decrease constant, in (0, 1).
    beta : float, default=0.5
        Backtracking factor, in (0, 1).
    grow : float, default=2.0
        The accepted step times ``grow`` is tried first at the next iteration (>= 1).
    max_backtrack : int, default=60
        Backtracking steps before the line search is declared failed.

    Returns
    -------
    result : scipy.optimize.OptimizeResult
        ``x``, ``fun``, ``jac`` (the gradient at x), ``nit``, ``nfev``, ``status`` (0
        converged, 1 ``max_iter`` reached, 2 line search failed, 3 non-finite start),
        ``success`` (``status == 0``), ``message``, ``residual`` (the final
        ``||x - P(x - G)||``) and ``step`` (the last accepted step size; NaN if none).
    """
    if not (0 < sigma < 1 and 0 < beta < 1 and grow >= 1 and step_size > 0):
        raise ValueError("need 0 < sigma < 1, 0 < beta < 1, grow >= 1 and step_size > 0; got "
                         f"sigma={sigma}, beta={beta}, grow={grow}, step_size={step_size}.")
    if int(max_iter) != max_iter or max_iter < 0:
        raise ValueError(f"max_iter must be an int >= 0, got {max_iter}.")
    x0 = np.array(x0, dtype=np.float64).ravel()
    if not np.isfinite(x0).all():
        raise ValueError("x0 contains NaN or infinity.")

    def proj(v):
        return np.asarray(project(v), dtype=np.float64).ravel()

    x = proj(x0)
    J, G, noise = _evaluate(fun, x)
    nfev, nit, alpha, status, accepted = 1, 0, float(step_size), 1, np.nan
    if not (np.isfinite(J) and np.isfinite(G).all()):
        status = 3
    while status == 1:
        residual = np.linalg.norm(x - proj(x - G))
        if residual < tol:
            status = 0
            break
        if nit >= max_iter:
            break
        for _ in range(max_backtrack + 1):
            x_new = proj(x - alpha * G)
            J_new, G_new, noise_new = _evaluate(fun, x_new)
            nfev += 1
            if _sufficient_decrease(J, G, J_new, G_new, x_new - x, sigma, noise):
                break
            alpha *= beta
        else:
            status = 2
        if status == 2 or np.array_equal(x_new, x):  # no step left that moves x
            status = 2
            break
        x, J, G, noise, nit, accepted = x_new, J_new, G_new, noise_new, nit + 1, alpha
        if callback is not None:
            callback(x, J, nit)
        alpha *= grow
    residual = np.linalg.norm(x - proj(x - G)) if np.isfinite(G).all() else np.inf
    return OptimizeResult(x=x, fun=J, jac=G, nit=nit, nfev=nfev, status=status,
                          success=status == 0, message=_MESSAGES[status],
                          residual=float(residual), step=accepted)


def project_psd(M):
    """Nearest symmetric PSD matrix to a square M (Frobenius): symmetrise, clip the negative
    eigenvalues of ``(M + M^T) / 2`` to 0."""
    w, V = np.linalg.eigh(0.5 * (M + M.T))
    return (V * np.clip(w, 0, None)) @ V.T


def project_diagonal(M):
    """Nearest diagonal matrix to a square M (Frobenius): zero the off-diagonal."""
    return np.diag(np.diag(M))


class ScaledObjective:
    """``f(x') = fun(scale * x')`` with gradient ``scale * G``: a diagonal change of variables
    ``x = scale * x'`` (a preconditioner; the minimisers correspond, and a set invariant under
    the scaling, e.g. the PSD or the diagonal matrices under ``M -> S M S``, maps onto
    itself). Keeps the batch protocol (``n_pairs``, ``labels``, ``batch``) if ``fun`` has it.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.optim.projected import ScaledObjective
    >>> def half_square(x):  # J = |x|^2 / 2, G = x
    ...     return 0.5 * float(x @ x), x
    >>> f = ScaledObjective(half_square, [1.0, 10.0])
    >>> J, G = f(np.array([1.0, 1.0]))  # at x = (1, 10): J = 101 / 2, G = (1, 10) * scale
    >>> J, G
    (50.5, array([  1., 100.]))
    """

    def __init__(self, fun, scale):
        self.fun, self.scale = fun, np.asarray(scale, dtype=np.float64)
        if hasattr(fun, "batch"):
            self.n_pairs, self.labels = fun.n_pairs, fun.labels

    def __call__(self, x):
        J, G = self.fun(self.scale * x)
        return J, self.scale * np.asarray(G, dtype=np.float64)

    def batch(self, x, indices):
        J, G = self.fun.batch(self.scale * x, indices)
        return J, self.scale * np.asarray(G, dtype=np.float64)
