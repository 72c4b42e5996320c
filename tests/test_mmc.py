"""MMC (Xing et al. 2002): the hand-derived gradient against central differences (full and
diagonal), the fitted metric's constraint, the scale-freeness, the supervised form, errors."""

import numpy as np
import pytest

from metricfit import MMC, MMC_Supervised
from metricfit.losses.mmc import MMCObjective, metric_from_params, sum_similar_distances


def central_differences(f, theta, eps=1e-6):
    g = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = eps
        g[i] = (f(theta + e)[0] - f(theta - e)[0]) / (2 * eps)
    return g


@pytest.mark.parametrize("diagonal", [False, True])
def test_gradient_matches_central_differences(diagonal):
    rng = np.random.default_rng(0)
    f = MMCObjective(rng.normal(size=(20, 5)), rng.normal(size=(30, 5)), diagonal)
    theta = rng.normal(size=5 if diagonal else 25)
    np.testing.assert_allclose(f(theta)[1], central_differences(f, theta), rtol=1e-6,
                               atol=1e-8)


def test_objective_is_the_papers_ratio():
    """J = -log sum_D sqrt(d_A) + 1/2 log sum_S d_A, with A = L^T L."""
    rng = np.random.default_rng(1)
    S, D = rng.normal(size=(10, 4)), rng.normal(size=(12, 4))
    L = rng.normal(size=(4, 4))
    A = metric_from_params(L.ravel(), 4, False)
    expected = (-np.log(np.sqrt(np.einsum("ij,jk,ik->i", D, A, D)).sum())
                + 0.5 * np.log(sum_similar_distances(A, S)))
    assert MMCObjective(S, D)(L.ravel())[0] == pytest.approx(expected, rel=1e-12)


def _pairs(n=80, d=5, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n, 2, d))
    P[: n // 2, 1] = P[: n // 2, 0] + 0.3 * rng.normal(size=(n // 2, d))
    return P, np.r_[np.ones(n // 2), -np.ones(n - n // 2)]


@pytest.mark.parametrize("diagonal", [False, True])
def test_fit_meets_the_constraint_and_improves_the_objective(diagonal):
    P, y = _pairs()
    est = MMC(diagonal=diagonal).fit(P, y)
    A = est.get_mahalanobis_matrix()
    V = P[:, 0] - P[:, 1]
    assert sum_similar_distances(A, V[y == 1]) == pytest.approx(1.0, rel=1e-8)
    f = MMCObjective(V[y == 1], V[y == -1], diagonal=False)
    start = f(np.eye(5).ravel())[0]
    assert f(np.linalg.cholesky(A + 1e-300 * np.eye(5)).T.ravel())[0] < start
    if diagonal:
        np.testing.assert_allclose(A, np.diag(np.diag(A)), atol=1e-12)
    assert est.score(P, y) > 0.9


def test_scale_free():
    P, y = _pairs()
    base = MMC().fit(P, y)
    scaled = MMC().fit(P * 2.0 ** 50, y)
    np.testing.assert_allclose(scaled.components_ * 2.0 ** 50, base.components_, rtol=1e-9)


def test_supervised_learns_the_classes():
    from sklearn.datasets import load_wine
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import StandardScaler
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    for diagonal in (False, True):
        Z = MMC_Supervised(diagonal=diagonal, random_state=0).fit(X, y).transform(X)
        assert KNeighborsClassifier(3).fit(Z[::2], y[::2]).score(Z[1::2], y[1::2]) > 0.85


@pytest.mark.parametrize("make, match", [
    (lambda P, y: MMC().fit(P[:, :1], y), "pairs"),
    (lambda P, y: MMC().fit(P, -np.ones(len(y))), "y"),
    (lambda P, y: MMC(init=np.eye(3)).fit(P, y), "init"),
    (lambda P, y: MMC(max_iter=0).fit(P, y), "max_iter"),
    (lambda P, y: MMC().fit(np.zeros_like(P), y), "distance 0"),
])
def test_bad_input_is_a_named_value_error(make, match):
    P, y = _pairs()
    with pytest.raises(ValueError, match=match):
        make(P, y)
