"""L-BFGS over an ``f(x) -> (J, G)`` callable (scipy's L-BFGS-B, ``jac=True``)."""

import numpy as np
from scipy.optimize import minimize


def minimize_lbfgs(fun, x0, *, max_iter=200, tol=1e-5, callback=None, random_state=None):
    """Minimise ``fun`` with L-BFGS-B.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (J, G)`` for a flat vector x; J and G may be float32 (they are
        converted: L-BFGS-B works in float64).
    x0 : array-like
        Start point (flattened).
    max_iter : int, default=200
        Maximum number of iterations.
    tol : float, default=1e-5
        Stop when the largest gradient component is below ``tol`` (L-BFGS-B's ``gtol``).
    callback : callable, default=None
        Called after each iteration as ``callback(x, J, n_iter)``.
    random_state : ignored
        L-BFGS is deterministic; accepted so that every solver takes the same options.

    Returns
    -------
    result : scipy.optimize.OptimizeResult
        ``success`` is False when the iteration limit was hit or the line search failed.
    """

    def fun64(x):
        J, G = fun(x)
        return float(J), np.asarray(G, dtype=np.float64).ravel()

    def on_iteration(intermediate_result):
        if callback is not None:
            callback(intermediate_result.x, intermediate_result.fun, on_iteration.n_iter)
        on_iteration.n_iter += 1

    on_iteration.n_iter = 1
    return minimize(
        fun64,
        np.asarray(x0, dtype=np.float64).ravel(),
        method="L-BFGS-B",
        jac=True,
        callback=on_iteration,
        options={"maxiter": max_iter, "gtol": tol},
    )
