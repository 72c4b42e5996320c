"""The optimizer seam: L-BFGS over any (f, g) callable, float32 objectives, callbacks."""

import numpy as np
import pytest
from scipy.optimize import rosen, rosen_der

from metricfit._validation import Interval, StrOptions, validate_params
from metricfit.optim import minimize


def rosenbrock(x):
    return rosen(x), rosen_der(x)


def test_lbfgs_minimises_rosenbrock_and_reports_iterations():
    seen = []
    result = minimize(rosenbrock, np.zeros(5), max_iter=500, tol=1e-8,
                      callback=lambda x, J, it: seen.append((J, it)))
    assert result.success
    np.testing.assert_allclose(result.x, np.ones(5), atol=1e-5)
    assert [it for _, it in seen] == list(range(1, result.nit + 1))
    assert seen[-1][0] == pytest.approx(result.fun)


def test_float32_objective_is_accepted():
    def f(x):
        x32 = x.astype(np.float32)
        return np.float32(np.sum((x32 - 3) ** 2)), (2 * (x32 - 3)).astype(np.float32)

    result = minimize(f, np.zeros(4))
    np.testing.assert_allclose(result.x, 3, atol=1e-4)


def test_iteration_limit_is_reported():
    result = minimize(rosenbrock, np.zeros(5), max_iter=2)
    assert not result.success and result.nit == 2


def test_unknown_solver():
    with pytest.raises(ValueError, match="unknown solver 'newton'"):
        minimize(rosenbrock, np.zeros(2), solver="newton")


def test_validate_params_messages():
    from numbers import Integral, Real

    from sklearn.base import BaseEstimator

    class Toy(BaseEstimator):
        _parameter_constraints = {"k": [Interval(Integral, 1, None), None],
                                  "lam": [Interval(Real, 0, 1, closed="left")],
                                  "mode": [StrOptions({"a", "b"})], "seed": ["random_state"]}

        def __init__(self, k=None, lam=0.0, mode="a", seed=None):
            self.k, self.lam, self.mode, self.seed = k, lam, mode, seed

    validate_params(Toy(k=3, lam=0.5, mode="b", seed=np.random.RandomState(0)))
    for params, message in [({"k": 0}, r"'k' parameter of Toy must be an int in the range"),
                            ({"k": 2.0}, "'k' parameter"), ({"lam": 1.0}, r"\[0, 1\)"),
                            ({"lam": float("nan")}, "'lam'"), ({"mode": "c"}, "'a', 'b'"),
                            ({"seed": True}, "RandomState"), ({"k": True}, "'k'")]:
        with pytest.raises(ValueError, match=message):
            validate_params(Toy(**params))
