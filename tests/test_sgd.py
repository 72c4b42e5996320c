"""Momentum SGD: descent sign, balanced mini-batches, reproducibility, early stopping, failures."""

import numpy as np
import pytest
from scipy.optimize import rosen, rosen_der

from metricfit.losses import tsml
from metricfit.optim import SOLVERS, minimize
from metricfit.optim.sgd import minimize_sgd


def rosenbrock(x):
    return rosen(x), rosen_der(x)


def quadratic(H, c):
    """f(x) = 1/2 (x - c)^T H (x - c), strongly convex for H positive definite."""

    def f(x):
        r = x - c
        return 0.5 * float(r @ H @ r), H @ r

    return f


class PairLeastSquares:
    """A fake objective with the batch protocol: 1/m sum_i 1/2 (z_i . x - t_i)^2 over pairs."""

    def __init__(self, labels, n_features=3, seed=0):
        rng = np.random.default_rng(seed)
        self.labels = np.asarray(labels)
        self.n_pairs = self.labels.shape[0]
        self.Z = rng.standard_normal((self.n_pairs, n_features))  # (n, d)
        self.t = self.Z @ np.arange(1.0, n_features + 1) + 0.1 * rng.standard_normal(self.n_pairs)
        self.seen = []

    def batch(self, x, indices):
        indices = np.asarray(indices)
        self.seen.append(indices.copy())
        r = self.Z[indices] @ x - self.t[indices]  # (m,)
        return 0.5 * float(r @ r) / indices.size, self.Z[indices].T @ r / indices.size

    def __call__(self, x):
        return self.batch(x, np.arange(self.n_pairs))


def mixed_labels(n=40):
    return np.where(np.arange(n) % 3 == 0, 1, -1)  # 14 similar, 26 dissimilar


def test_registered_and_dispatched():
    assert SOLVERS["sgd"] is minimize_sgd
    f = quadratic(np.eye(2), np.array([1.0, -2.0]))
    result = minimize(f, np.zeros(2), solver="sgd", max_iter=50, learning_rate=0.1,
                      momentum=0.5)
    assert result.nit == 50 and result.status == 1 and not result.success
    assert result.fun < f(np.zeros(2))[0]


def test_strongly_convex_quadratic_reaches_minimiser():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((4, 4))
    H, c = M @ M.T + np.eye(4), rng.standard_normal(4)
    result = minimize_sgd(quadratic(H, c), np.zeros(4), max_iter=3000, learning_rate=1e-2,
                          momentum=0.9)
    np.testing.assert_allclose(result.x, c, atol=1e-8)
    assert result.fun < 1e-15 and result.x.dtype == np.float64


def test_rosenbrock_goes_down():
    x0 = np.zeros(5)
    result = minimize_sgd(rosenbrock, x0, max_iter=2000, learning_rate=1e-4, momentum=0.9)
    assert np.isfinite(result.x).all()
    assert result.fun < 0.1 * rosen(x0)


def test_descent_sign_matches_momentum_recursion():
    """v = m v + g; x = x - lr v (Algorithm 1 prints +, which would ascend)."""
    c = np.array([1.0, 2.0, -1.0])
    f = quadratic(np.diag([1.0, 2.0, 3.0]), c)
    lr, m = 0.05, 0.9
    x, v, costs = np.zeros(3), np.zeros(3), []
    for _ in range(5):
        J, g = f(x)
        costs.append(J)
        v = m * v + g
        x = x - lr * v
    result = minimize_sgd(f, np.zeros(3), max_iter=5, learning_rate=lr, momentum=m)
    np.testing.assert_array_equal(result.x, x)
    assert np.all(np.diff(costs) < 0) and result.fun < costs[-1]


@pytest.mark.parametrize("batch_size", [2, 4, 6])
def test_batches_are_balanced(batch_size):
    fake = PairLeastSquares(mixed_labels())
    minimize_sgd(fake, np.zeros(3), max_iter=30, learning_rate=1e-2, batch_size=batch_size,
                 random_state=0)
    batches = fake.seen[:-1]  # the last call is the full objective at the returned x
    assert len(batches) == 30
    for idx in batches:
        assert idx.size == batch_size
        assert np.sum(fake.labels[idx] == 1) == batch_size // 2
        assert np.sum(fake.labels[idx] == -1) == batch_size // 2
        assert np.unique(idx).size == batch_size  # no repeats within a batch
    assert fake.seen[-1].size == fake.n_pairs


def test_similar_only_labels():
    fake = PairLeastSquares(np.ones(10, dtype=int))
    result = minimize_sgd(fake, np.zeros(3), max_iter=20, learning_rate=1e-2, batch_size=4,
                          random_state=1)
    assert all(idx.size == 4 for idx in fake.seen[:-1])
    assert np.isfinite(result.x).all() and result.nit == 20


def test_float_labels_and_prepared_objective_go_down():
    rng = np.random.default_rng(0)
    X1 = rng.standard_normal((60, 5))
    s = np.where(np.arange(60) < 30, 1, -1)
    X2 = np.where(s[:, None] == 1, X1 + 0.3 * rng.standard_normal((60, 5)),
                  rng.standard_normal((60, 5)))
    f = tsml.objective(X1, X2, s, lam=1e-3)  # labels stored as floats
    A0 = np.eye(5)
    result = minimize_sgd(f, A0, max_iter=500, learning_rate=1e-2, batch_size=10,
                          random_state=0)
    assert result.x.shape == (25,) and result.fun < f(A0.ravel())[0]


def test_fixed_seed_is_bit_for_bit_reproducible():
    def run(seed):
        fake = PairLeastSquares(mixed_labels())

        def val(x):
            return -float(np.linalg.norm(x - 1))

        return minimize_sgd(fake, np.zeros(3), max_iter=300, learning_rate=1e-2, momentum=0.9,
                            batch_size=4, random_state=seed, validation=val, check_every=10,
                            train_score=lambda x: float(x.sum()), n_iter_no_change=None)

    a, b, other = run(7), run(7), run(8)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.curves.keys() == b.curves.keys()
    for key in a.curves:
        assert np.array_equal(a.curves[key], b.curves[key])
    assert a.best_step == b.best_step and a.fun == b.fun
    assert not np.array_equal(a.x, other.x)
    assert not np.array_equal(a.curves["train"], other.curves["train"])


def test_generator_random_state_is_accepted():
    def run():
        fake = PairLeastSquares(mixed_labels())
        return minimize_sgd(fake, np.zeros(3), max_iter=50, learning_rate=1e-2,
                            random_state=np.random.default_rng(3))

    np.testing.assert_array_equal(run().x, run().x)


def test_early_stopping_returns_best_validation_model():
    scores = [1.0, 3.0, 2.0, 5.0, 4.0, 4.5, 5.0, 9.0]  # checks at steps 0, 10, ...: best at 30
    seen = []

    def validation(x):
        seen.append(x.copy())
        return scores[len(seen) - 1]

    f = quadratic(np.eye(2), np.array([1.0, 1.0]))
    result = minimize_sgd(f, np.zeros(2), max_iter=10_000, learning_rate=1e-3, momentum=0.9,
                          validation=validation, check_every=10, n_iter_no_change=3)
    assert result.status == 0 and result.success
    assert len(seen) == 7 and result.nit == 60
    np.testing.assert_array_equal(result.x, seen[3])
    assert result.best_step == 30
    assert result.curves["step"] == [0, 10, 20, 30, 40, 50, 60]
    assert result.curves["validation"] == scores[:7]
    assert result.curves["train"] == []


def test_restore_best_false_returns_the_last_iterate_with_the_same_run():
    """Same draws, same curve; only the returned iterate differs (the last, not the best)."""
    validation = lambda x: -float(np.linalg.norm(x - 0.3))  # noqa: E731, peaks mid-run
    f = quadratic(np.eye(2), np.array([1.0, 1.0]))
    runs = {keep: minimize_sgd(f, np.zeros(2), max_iter=300, learning_rate=1e-2, momentum=0.5,
                               validation=validation, check_every=10, n_iter_no_change=None,
                               restore_best=keep)
            for keep in (True, False)}
    best, last = runs[True], runs[False]
    assert best.curves == last.curves and best.nit == last.nit == 300
    assert best.best_step < 300 and last.best_step == 300
    assert validation(best.x) == max(best.curves["validation"])
    assert validation(last.x) == best.curves["validation"][-1] < validation(best.x)


def test_validation_distance_peaks_when_iterate_passes_target():
    target = np.array([0.5, 0.5])
    f = quadratic(np.eye(2), np.array([1.0, 1.0]))
    result = minimize_sgd(f, np.zeros(2), max_iter=5000, learning_rate=1e-3, momentum=0.0,
                          validation=lambda x: -float(np.linalg.norm(x - target)),
                          check_every=50, n_iter_no_change=5)
    assert result.status == 0 and result.nit < 5000
    best = int(np.argmax(result.curves["validation"]))
    assert result.best_step == result.curves["step"][best]
    assert len(result.curves["step"]) - 1 - best == 5
    np.testing.assert_allclose(result.x, target, atol=0.05)


def test_max_iter_checks_at_the_end_and_callback_at_checks():
    calls = []
    f = quadratic(np.eye(2), np.ones(2))
    result = minimize_sgd(f, np.zeros(2), max_iter=250, learning_rate=1e-2, momentum=0.0,
                          check_every=100,
                          validation=lambda x: -float(np.linalg.norm(x - 1)),
                          train_score=lambda x: -f(x)[0],
                          callback=lambda x, J, it: calls.append((it, J, x.copy())))
    assert result.status == 1 and not result.success and result.nit == 250
    assert [it for it, _, _ in calls] == [100, 200, 250]  # callbacks follow steps
    assert result.curves["step"] == [0, 100, 200, 250]  # the start is checked too
    assert len(result.curves["train"]) == 4
    assert result.best_step == 250
    np.testing.assert_array_equal(calls[-1][2], result.x)
    assert np.isfinite([J for _, J, _ in calls]).all()


def test_nan_gradient_stops_with_finite_best_model():
    f0 = quadratic(np.eye(2), np.ones(2))
    count = [0]

    def f(x):
        count[0] += 1
        J, G = f0(x)
        return (J, np.full_like(G, np.nan)) if count[0] > 35 else (J, G)

    result = minimize_sgd(f, np.zeros(2), max_iter=1000, learning_rate=1e-2, momentum=0.0,
                          check_every=10, validation=lambda x: float(x.sum()))
    assert result.status == 2 and not result.success and "non-finite" in result.message
    assert result.nit == 35 and np.isfinite(result.x).all()
    # no final check of the iterate before the failure: the best checked model is returned
    assert result.curves["step"] == [0, 10, 20, 30] and result.best_step == 30


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_divergence_stops_without_nan_parameters():
    f = quadratic(np.eye(2), np.ones(2))
    result = minimize_sgd(f, np.zeros(2), max_iter=100_000, learning_rate=10.0)
    assert result.status == 2 and np.isfinite(result.x).all() and result.nit < 100_000


def test_tol_stops_on_small_gradient():
    f = quadratic(np.eye(3), np.ones(3))
    result = minimize_sgd(f, np.zeros(3), max_iter=10_000, tol=1e-6, learning_rate=0.5,
                          momentum=0.0)
    assert result.status == 0 and result.success and result.nit < 100
    assert np.linalg.norm(result.jac) < 1e-6


@pytest.mark.parametrize("options, match", [
    ({"learning_rate": 0.0}, "learning_rate"), ({"momentum": 1.0}, "momentum"),
    ({"batch_size": 0}, "batch_size"), ({"check_every": 2.5}, "check_every"),
    ({"n_iter_no_change": 0}, "n_iter_no_change"), ({"max_iter": -1}, "max_iter"),
])
def test_invalid_options(options, match):
    with pytest.raises(ValueError, match=match):
        minimize_sgd(rosenbrock, np.zeros(2), **options)


def test_start_is_a_candidate_so_sgd_never_returns_worse():
    """Every step makes the validation score worse: the start (step 0) must come back."""
    f = quadratic(np.eye(2), np.ones(2))
    result = minimize_sgd(f, np.zeros(2), max_iter=500, learning_rate=1e-2, momentum=0.0,
                          validation=lambda x: -float(np.linalg.norm(x)), check_every=10,
                          n_iter_no_change=3)
    np.testing.assert_array_equal(result.x, np.zeros(2))
    assert result.best_step == 0 and result.curves["step"] == [0, 10, 20, 30]
