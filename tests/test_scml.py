"""SCML (Shi et al. 2014): the numba dual averaging against its NumPy twin, the objective it
reports, the bases, the kNN triplets, the fit (vector and index triplets), errors."""

import numpy as np
import pytest
from _reference import dual_averaging_numpy
from sklearn.base import clone

from metricfit import SCML, SCML_Supervised
from metricfit.learners.scml import knn_triplets, lda_bases, lda_scalings
from metricfit.losses import scml as kernels


def test_dual_averaging_matches_its_numpy_twin():
    rng = np.random.RandomState(0)
    P = rng.normal(size=(40, 15))
    P[20:] = P[:20] + 0.3 * rng.normal(size=(20, 15))  # point i + 20 is near point i
    anchors = rng.randint(0, 20, size=300)
    T = np.column_stack([anchors, anchors + 20, rng.randint(0, 40, size=300)])
    batches = rng.randint(0, 300, size=(800, 10))
    w, best = kernels.dual_averaging(P, T, batches, 1e-4, 5e-3, 100)
    w2, best2 = dual_averaging_numpy(P, T, batches, 1e-4, 5e-3, 100)
    np.testing.assert_allclose(w, w2, rtol=1e-9, atol=1e-12)
    assert best == pytest.approx(best2, rel=1e-12)
    assert best == pytest.approx(kernels.triplet_objective(P, T, w, 1e-4), rel=1e-12)
    assert (w >= 0).all() and (w > 0).any()


def test_triplet_diff_bases_are_unit_positive_directions():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(30, 4))
    T = rng.randint(0, 30, size=(50, 3))
    B = kernels.triplet_diff_bases(X, T, 20, rng)
    assert B.shape == (20, 4)
    np.testing.assert_allclose(np.linalg.norm(B, axis=1), 1.0)


def test_knn_triplets():
    X = np.r_[np.arange(6.0), 10 + np.arange(6.0)][:, None]
    codes = np.repeat([0, 1], 6)
    T = knn_triplets(X, codes, 2, 3)
    assert T.shape == (12 * 2 * 3, 3)
    assert np.all(codes[T[:, 0]] == codes[T[:, 1]]) and np.all(codes[T[:, 0]] != codes[T[:, 2]])
    assert np.all(T[:, 0] != T[:, 1])
    first = T[T[:, 0] == 0]  # point 0's genuine neighbours 1, 2; its impostors 10, 11, 12
    assert set(first[:, 1]) == {1, 2} and set(first[:, 2]) == {6, 7, 8}


def test_lda_bases_shape_and_norm():
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    B = lda_bases(X, y, 20, np.random.RandomState(0))
    assert B.shape == (20, 4)
    np.testing.assert_allclose(np.linalg.norm(B, axis=1), 1.0)


def _triplets(n=200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    T = rng.normal(size=(n, 3, d))
    T[:, 1] = T[:, 0] + 0.2 * rng.normal(size=(n, d))
    return T


def test_fit_orders_the_triplets_vector_and_index():
    T = _triplets()
    est = SCML(n_basis=40, max_iter=2000, random_state=0).fit(T)
    assert est.score(T) > 0.9
    np.testing.assert_array_equal(est.predict(T), np.where(est.decision_function(T) > 0, 1, -1))
    points = T.reshape(-1, 4)
    index = np.arange(points.shape[0]).reshape(-1, 3)
    by_index = SCML(n_basis=40, max_iter=2000, random_state=0, preprocessor=points).fit(index)
    assert by_index.score(index) > 0.9
    assert clone(est).get_params() == est.get_params()


def test_given_bases_and_low_rank():
    T = _triplets()
    B = np.eye(4)[:1]  # one basis: a rank-one metric on feature 0
    est = SCML(basis=B, max_iter=500, random_state=0).fit(T)
    assert est.components_.shape == (1, 4)
    np.testing.assert_allclose(est.components_[0, 1:], 0.0)


def test_supervised():
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    est = SCML_Supervised(max_iter=2000, random_state=0).fit(X, y)
    assert est.transform(X).shape[0] == 150
    np.testing.assert_array_equal(est.classes_, [-1, 1])


@pytest.mark.parametrize("make, match", [
    (lambda T: SCML().fit(T[:, :2]), "triplets"),
    (lambda T: SCML(output_iter=100, max_iter=10).fit(T), "output_iter"),
    (lambda T: SCML(basis=np.eye(3)).fit(T), "basis"),
    (lambda T: SCML(preprocessor=T.reshape(-1, 4)).fit(np.array([[0, 1, 10 ** 6]])),
     "triplets|range|index"),
    (lambda T: SCML().fit(T[:2]), "triplets"),  # fewer triplets than features
    (lambda T: SCML().fit(T, np.ones(len(T))), "y: triplets carry no labels"),
    (lambda T: SCML_Supervised().fit(T[:, 0], np.zeros(len(T))), "y"),
])
def test_bad_input_is_a_named_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make(_triplets())


def test_lda_scalings_are_scikit_learns():
    from sklearn.datasets import load_wine
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    X, y = load_wine(return_X_y=True)
    rows = np.r_[0:12, 60:75, 140:150]  # a small local set: a rank-deficient scatter
    ours = lda_scalings(X[rows], y[rows])
    theirs = LinearDiscriminantAnalysis().fit(X[rows], y[rows]).scalings_
    assert ours.shape == theirs.shape
    # scikit-learn 1.6 (the oldest declared) scales the same directions by sqrt((n - K) / n) (K
    # classes): the directions must agree on every version, the scale be today's or that one.
    scale = float(np.median(np.abs(ours) / np.abs(theirs)))
    np.testing.assert_allclose(np.abs(ours), scale * np.abs(theirs), rtol=1e-8, atol=1e-10)
    n, K = len(rows), len(np.unique(y[rows]))
    assert scale == pytest.approx(1.0, rel=1e-10) or scale == pytest.approx(np.sqrt(n / (n - K)),
                                                                         rel=1e-10)


def test_large_projections_are_float32_and_give_the_same_weights(monkeypatch):
    import metricfit.learners.scml as module
    T = _triplets()
    full = SCML(n_basis=40, max_iter=1000, random_state=0).fit(T)
    monkeypatch.setattr(module, "PROJECTION_BUDGET", 0)
    assert module.projections(np.ones((3, 2)), np.ones((4, 2))).dtype == np.float32
    small = SCML(n_basis=40, max_iter=1000, random_state=0).fit(T)
    np.testing.assert_allclose(small.get_mahalanobis_matrix(), full.get_mahalanobis_matrix(),
                               rtol=1e-3, atol=1e-5)
