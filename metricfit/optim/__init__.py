"""Optimizers over any ``f(x) -> (J, G)`` callable on a flat parameter vector.

``minimize(fun, x0, solver=...)`` dispatches by name; every solver returns a
``scipy.optimize.OptimizeResult`` (``x``, ``fun``, ``nit``, ``nfev``, ``success``, ``status``,
``message``). 'lbfgs' is scipy's L-BFGS-B; 'sgd' is momentum SGD with balanced mini-batches
and early stopping on a validation score (seed 004, Algorithm 1, descent sign).
"""

from .lbfgs import minimize_lbfgs
from .sgd import minimize_sgd

SOLVERS = {"lbfgs": minimize_lbfgs, "sgd": minimize_sgd}


def minimize(fun, x0, solver="lbfgs", **options):
    """Minimise ``fun(x) -> (J, G)`` from ``x0`` with the named solver.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.optim import minimize
    >>> result = minimize(lambda x: (((x - 3) ** 2).sum(), 2 * (x - 3)), np.zeros(2))
    >>> np.round(result.x, 6), bool(result.success)
    (array([3., 3.]), True)
    """
    try:
        run = SOLVERS[solver]
    except KeyError:
        raise ValueError(f"unknown solver {solver!r}; choose from {sorted(SOLVERS)}.") from None
    return run(fun, x0, **options)


__all__ = ["minimize", "minimize_lbfgs", "minimize_sgd", "SOLVERS"]
