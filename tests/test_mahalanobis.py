"""The Mahalanobis base (metricfit.learners._mahalanobis): components_ and M = L^T L,
transform, get_metric, pair_distance / pair_score, the tuple classifiers' semantics, and
components_from_metric."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import NotFittedError

from metricfit.learners import score_kind
from metricfit.learners._mahalanobis import (
    MahalanobisMixin,
    QuadrupletsMixin,
    TripletsMixin,
    components_from_metric,
)


class Fixed(MahalanobisMixin, TripletsMixin, TransformerMixin, BaseEstimator):
    """A triplet learner whose fit sets a given L (to test the base alone)."""

    def __init__(self, L=None, preprocessor=None):
        self.L = L
        self.preprocessor = preprocessor

    def fit(self, X, y=None):
        X = self._check_fit_points(X)
        self.components_ = np.asarray(self.L, dtype=X.dtype)
        return self


class FixedQuad(QuadrupletsMixin, Fixed):
    pass


def fitted(seed=0, k=3, d=4, cls=Fixed):
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(k, d))
    return cls(L).fit(rng.normal(size=(5, d))), L


def test_metric_transform_and_pair_distance_agree():
    est, L = fitted()
    M = est.get_mahalanobis_matrix()
    np.testing.assert_allclose(M, L.T @ L)
    rng = np.random.default_rng(1)
    pairs = rng.normal(size=(7, 2, 4))
    delta = pairs[:, 0] - pairs[:, 1]
    sq = np.einsum("ij,jk,ik->i", delta, M, delta)
    np.testing.assert_allclose(est.pair_distance(pairs), np.sqrt(sq))
    np.testing.assert_allclose(est.pair_distance(pairs, squared=True), sq)
    np.testing.assert_allclose(est.pair_score(pairs), -sq)
    metric = est.get_metric()
    np.testing.assert_allclose(metric(pairs[0, 0], pairs[0, 1]), np.sqrt(sq[0]))
    np.testing.assert_allclose(metric(pairs[0, 0], pairs[0, 1], squared=True), sq[0])
    with pytest.raises(ValueError, match="u and v must be 1-D vectors of 4 features"):
        metric(np.ones(3), np.ones(3))
    np.testing.assert_allclose(est.transform(pairs[:, 0]), pairs[:, 0] @ L.T)
    assert est.transform(pairs).shape == (7, 2, 3)
    assert score_kind(est) == "distance"


def test_index_pairs_and_float32():
    est, L = fitted()
    X = np.random.default_rng(2).normal(size=(6, 4))
    est.set_params(preprocessor=X)
    index = np.array([[0, 1], [2, 5], [3, 3]])
    np.testing.assert_allclose(est.pair_distance(index), est.pair_distance(X[index]))
    X32 = X.astype(np.float32)
    est32 = Fixed(L).fit(X32)
    assert est32.components_.dtype == np.float32
    assert est32.transform(X32).dtype == np.float32
    np.testing.assert_allclose(est32.transform(X32), X @ L.T, rtol=1e-5, atol=1e-5)


def test_triplet_semantics_are_metric_learns():
    est, L = fitted()
    rng = np.random.default_rng(3)
    T = rng.normal(size=(50, 3, 4))
    d_ap = np.linalg.norm((T[:, 0] - T[:, 1]) @ L.T, axis=1)
    d_an = np.linalg.norm((T[:, 0] - T[:, 2]) @ L.T, axis=1)
    np.testing.assert_allclose(est.decision_function(T), d_an - d_ap)
    np.testing.assert_array_equal(est.predict(T), np.where(d_ap < d_an, 1, -1))
    assert est.score(T) == np.mean(d_ap < d_an)
    assert 0 < est.score(T) < 1  # a random L orders random triplets both ways
    swapped = T[:, [0, 2, 1]]
    np.testing.assert_array_equal(est.predict(swapped), -est.predict(T))
    with pytest.raises(ValueError, match="carry no labels"):
        est.score(T, np.ones(50))
    with pytest.raises(ValueError, match="triplets must have the tuple axis"):
        est.predict(T[:, :2])


def test_index_triplets_through_preprocessor_match_vectors():
    est, _ = fitted()
    X = np.random.default_rng(4).normal(size=(8, 4))
    index = np.random.default_rng(5).integers(0, 8, size=(30, 3))
    want = est.decision_function(X[index])
    est.set_params(preprocessor=X)
    np.testing.assert_allclose(est.decision_function(index), want)
    np.testing.assert_allclose(est.decision_function(index[:2]), want[:2])  # few tuples
    with pytest.raises(ValueError, match="index triplets has an index 8 out of range"):
        est.predict(np.array([[0, 1, 8]]))


def test_index_triplets_into_a_memmap_or_dask_array(tmp_path):
    est, _ = fitted()
    X = np.random.default_rng(4).normal(size=(8, 4))
    index = np.random.default_rng(5).integers(0, 8, size=(30, 3))
    want = est.decision_function(X[index])
    mm = np.lib.format.open_memmap(tmp_path / "p.npy", mode="w+", dtype=np.float64,
                                   shape=X.shape)
    mm[:] = X
    np.testing.assert_allclose(est.set_params(preprocessor=mm).decision_function(index), want)
    da = pytest.importorskip("dask.array")
    points = da.from_array(X, chunks=(3, 4))
    np.testing.assert_allclose(est.set_params(preprocessor=points).decision_function(index),
                               want)


def test_quadruplet_semantics_are_metric_learns():
    est, L = fitted(cls=FixedQuad)
    Q = np.random.default_rng(6).normal(size=(40, 4, 4))
    d_ab = np.linalg.norm((Q[:, 0] - Q[:, 1]) @ L.T, axis=1)
    d_cd = np.linalg.norm((Q[:, 2] - Q[:, 3]) @ L.T, axis=1)
    np.testing.assert_allclose(est.decision_function(Q), d_cd - d_ab)
    np.testing.assert_array_equal(est.predict(Q), np.where(d_ab < d_cd, 1, -1))
    assert est.score(Q) == np.mean(d_ab < d_cd)
    with pytest.raises(ValueError, match="quadruplets must have the tuple axis"):
        est.predict(Q[:, :3])


def test_not_fitted_and_feature_mismatch():
    est = Fixed(np.eye(3))
    for method in ("transform", "get_mahalanobis_matrix", "get_metric", "decision_function"):
        with pytest.raises(NotFittedError):
            getattr(est, method)(*([np.zeros((2, 3, 3))] if method != "get_metric"
                                   and method != "get_mahalanobis_matrix" else []))
    est.fit(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="4 features"):
        est.transform(np.zeros((2, 4)))


def test_components_from_metric():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(5, 3))
    M = A @ A.T  # rank 3, PSD: two (round-off) zero eigenvalues
    L = components_from_metric(M)
    np.testing.assert_allclose(L.T @ L, M, atol=1e-12)
    w = np.linalg.eigvalsh(M)[::-1]
    np.testing.assert_allclose(np.sum(L ** 2, axis=1), w.clip(0), atol=1e-12)  # largest first
    L2 = components_from_metric(M, n_components=2, dtype=np.float32)
    assert L2.shape == (2, 5) and L2.dtype == np.float32
    bad = M - 3 * np.eye(5) * w[0]
    with pytest.raises(ValueError, match="negative eigenvalues"):
        components_from_metric(bad)
    with pytest.warns(UserWarning, match="PSD part only"):
        components_from_metric(bad, strict=False)
    with pytest.raises(ValueError, match="NaN or infinity"):
        components_from_metric(np.full((2, 2), np.nan))
    with pytest.raises(ValueError, match="square"):
        components_from_metric(np.ones((2, 3)))


def test_initial_components_follow_metric_learns_auto_rule():
    from sklearn.decomposition import PCA

    from metricfit.learners._mahalanobis import initial_components

    rng = np.random.default_rng(9)
    X = rng.normal(size=(40, 5))
    y = np.repeat([0, 1, 2, 3], 10)
    lda = initial_components("auto", X, 3, y)  # 3 <= n_classes - 1: LDA
    np.testing.assert_allclose(lda, initial_components("lda", X, 3, y))
    pca = initial_components("auto", X, 4, y)  # 4 > 3, 4 < 5: PCA
    np.testing.assert_allclose(np.abs(pca), np.abs(PCA(4).fit(X).components_), atol=1e-10)
    np.testing.assert_array_equal(initial_components("auto", X, 5, y), np.eye(5))
    np.testing.assert_array_equal(initial_components("auto", X, 2, None)[:, :2] != 0,
                                  np.ones((2, 2), bool))  # no labels: PCA
    assert initial_components("identity", X.astype(np.float32), 2).dtype == np.float32
    assert initial_components("random", X, 2, random_state=0).shape == (2, 5)
    with pytest.raises(ValueError, match="init='lda' needs n_components <= "):
        initial_components("lda", X, 4, y)
    with pytest.raises(ValueError, match="init='lda' needs class labels"):
        initial_components("lda", X, 2)
    with pytest.raises(ValueError, match=r"init must have shape \(n_components, n_features\)"):
        initial_components(np.ones((2, 2)), X, 2)
