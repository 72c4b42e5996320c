"""ITML (Davis et al. 2007): the numba Bregman sweep against its NumPy twin, the constraints
it meets, its scale-freeness, the supervised form, and named errors on bad input."""

import numpy as np
import pytest
from _reference import bregman_sweep_numpy
from sklearn.base import clone

from metricfit import ITML, ITML_Supervised
from metricfit.losses import itml as kernels


def _pairs(n=80, d=5, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n, 2, d))
    P[: n // 2, 1] = P[: n // 2, 0] + 0.3 * rng.normal(size=(n // 2, d))
    return P, np.r_[np.ones(n // 2), -np.ones(n - n // 2)]


def test_numba_sweep_matches_its_numpy_twin():
    rng = np.random.RandomState(0)
    V = rng.normal(size=(150, 7))
    delta = np.where(rng.rand(150) < 0.5, 1.0, -1.0)
    results = [kernels.fit_itml(V, delta, np.eye(7), (2.0, 20.0), gamma=1.0, max_iter=30,
                                sweep=sweep) for sweep in (kernels.bregman_sweep,
                                                           bregman_sweep_numpy)]
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-10, atol=1e-12)
    assert results[0][1:] == results[1][1:]


def test_hard_constraints_are_met():
    """gamma = inf: the projections converge onto d_M <= u (similar), d_M >= l (dissimilar)."""
    P, y = _pairs()
    V = P[:, 0] - P[:, 1]
    V[y == 1] *= 0.2  # a feasible set: similar differences well inside the dissimilar ones
    u, lo = 0.2, 2.0
    M, n_iter, converged = kernels.fit_itml(V, y, np.eye(5), (u, lo), gamma=np.inf,
                                            max_iter=5000, tol=1e-9)
    d = np.einsum("ij,jk,ik->i", V, M, V)
    assert converged
    assert d[y == 1].max() <= u * (1 + 1e-3) and d[y == -1].min() >= lo * (1 - 1e-3)
    assert np.linalg.eigvalsh(M)[0] > 0  # LogDet keeps M positive definite


def test_fit_separates_pairs_and_is_psd():
    P, y = _pairs()
    est = ITML(random_state=0).fit(P, y)
    M = est.get_mahalanobis_matrix()
    assert np.linalg.eigvalsh(M)[0] > -1e-10
    d = est.pair_distance(P, squared=True)
    assert d[y == 1].mean() < d[y == -1].mean()
    assert est.score(P, y) > 0.9
    np.testing.assert_allclose(-est.pair_score(P), d)


def test_scale_free_and_float32():
    P, y = _pairs()
    base = ITML(random_state=0, bounds=(1.0, 9.0)).fit(P, y)
    scaled = ITML(random_state=0, bounds=(2.0 ** 80, 9 * 2.0 ** 80)).fit(P * 2.0 ** 40, y)
    np.testing.assert_allclose(scaled.components_, base.components_, rtol=1e-12)
    # data-derived bounds: unsquared-distance percentiles (metric-learn's), in data units
    default = ITML(random_state=0).fit(P * 2.0 ** 40, y)
    again = ITML(random_state=0, bounds=default.bounds_ / 2.0 ** 80).fit(P, y)
    np.testing.assert_allclose(default.components_, again.components_, rtol=1e-9)
    cov = ITML(prior="covariance", random_state=0).fit(P, y)
    cov_scaled = ITML(prior="covariance", random_state=0).fit(P * 2.0 ** -30, y)
    np.testing.assert_allclose(cov_scaled.components_ * 2.0 ** -30, cov.components_,
                               rtol=1e-9)
    est32 = ITML(random_state=0, bounds=(1.0, 9.0)).fit(P.astype(np.float32), y)
    assert est32.components_.dtype == np.float32
    np.testing.assert_allclose(est32.components_, base.components_, rtol=1e-3, atol=1e-4)


def test_index_pairs_give_the_vector_pairs_fit():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 4))
    index = rng.integers(0, 30, size=(60, 2))
    index = index[index[:, 0] != index[:, 1]]
    y = np.where(np.arange(len(index)) % 2 == 0, 1, -1)
    vec = ITML(random_state=0, bounds=(1.0, 10.0)).fit(X[index], y)
    ind = ITML(random_state=0, bounds=(1.0, 10.0), preprocessor=X).fit(index, y)
    np.testing.assert_allclose(ind.components_, vec.components_, rtol=1e-12)
    np.testing.assert_allclose(ind.decision_function(index), vec.decision_function(X[index]))


def test_supervised_learns_the_classes():
    from sklearn.datasets import load_iris
    from sklearn.neighbors import KNeighborsClassifier
    X, y = load_iris(return_X_y=True)
    est = ITML_Supervised(random_state=0).fit(X, y)
    Z = est.transform(X)
    assert Z.shape == (150, 4)
    assert KNeighborsClassifier(3).fit(Z[::2], y[::2]).score(Z[1::2], y[1::2]) > 0.9
    np.testing.assert_array_equal(est.classes_, [-1, 1])
    assert est.get_params()["n_constraints"] is None and clone(est).random_state == 0


@pytest.mark.parametrize("make, match", [
    (lambda P, y: ITML().fit(P[:, :1], y), "pairs"),  # one point per tuple, not two
    (lambda P, y: ITML().fit(np.concatenate([P, P[:, :1]], axis=1), y), "pairs"),
    (lambda P, y: ITML().fit(P, np.ones(len(y))), "y"),  # one class of pairs
    (lambda P, y: ITML(bounds=(1.0,)).fit(P, y), "bounds"),
    (lambda P, y: ITML(prior=-np.eye(5)).fit(P, y), "prior"),
    (lambda P, y: ITML(prior=np.eye(3)).fit(P, y), "prior"),
    (lambda P, y: ITML(gamma=0).fit(P, y), "gamma"),
    (lambda P, y: ITML(preprocessor=P[:, 0]).fit(np.array([[0, 500]] * 4), [1, -1, 1, -1]),
     "pairs|index|range"),
    (lambda P, y: ITML_Supervised().fit(P[:, 0], np.zeros(len(y))), "y"),
])
def test_bad_input_is_a_named_value_error(make, match):
    P, y = _pairs()
    with pytest.raises(ValueError, match=match):
        make(P, y)


def test_verify_rows_and_the_identities_of_pairs():
    """``metricfit verify``'s rows build the pair learners; a labelled-point learner runs on
    the connected components of the similar training pairs."""
    from metricfit import NCA
    from metricfit.experiments.methods import REGISTRY, IdentitiesFromPairs, make_method

    assert type(make_method("itml")) is ITML and not REGISTRY["itml"].has_lam
    assert {"mmc", "sdml"} <= set(REGISTRY)
    rng = np.random.default_rng(0)
    X = np.repeat(3 * rng.normal(size=(3, 4)), 5, axis=0) + 0.1 * rng.normal(size=(15, 4))
    labels = np.repeat([0, 1, 2], 5)
    chain = [(i, i + 1) for i in range(14) if labels[i] == labels[i + 1]]  # 4 per identity
    apart = [(0, 5), (5, 10), (0, 10), (14, 3)]
    index = np.array(chain + apart)
    y = np.r_[np.ones(len(chain)), -np.ones(len(apart))]
    est = IdentitiesFromPairs(NCA(n_components=2, max_iter=20)).fit(X[index], y)
    ids = est.identities_
    assert all((ids[labels == c] == ids[labels == c][0]).all() for c in range(3))
    assert np.unique(ids).size == 3
    assert est.decision_function(X[index]).shape == (len(y),)
