"""Index pairs (n_pairs, 2) into a points array: the same cost, gradient and fitted model as the
(n_pairs, 2, d) pairs they stand for, with no such array formed; bad input."""

import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV

from metricfit import CSML, DDML, LDML, TSML, WCCN, CosineSimilarity, MkNN
from metricfit.losses import csml, ddml, ldml, tsml
from metricfit.mappings import MLP, MappedObjective, Tanh
from metricfit.mappings.objective import IndexMappedObjective

LINEAR_LOSSES = {"tsml": (tsml, {}), "csml": (csml, {}), "ddml": (ddml, {"T": 3.0, "tau": 0.8})}
LEARNERS = [TSML, CSML, DDML, LDML]


def make_points(n_identities=40, per_identity=5, d=8, n_pairs=600, seed=0):
    """Points of identities and index pairs over them (half similar), many pairs per point."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_identities), per_identity)
    points = rng.normal(size=(n_identities, d))[labels] + 0.5 * rng.normal(
        size=(labels.size, d)) + 0.3
    index = rng.integers(0, labels.size, size=(n_pairs, 2))
    half = n_pairs // 2
    index[:half, 1] = (index[:half, 0] // per_identity) * per_identity + rng.integers(
        0, per_identity, half)
    y = np.where(labels[index[:, 0]] == labels[index[:, 1]], 1, -1)
    return points, index, y


def gathered(points, index):
    """The (n_pairs, 2, d) pairs the index pairs stand for (only the tests form them)."""
    return np.stack([points[index[:, 0]], points[index[:, 1]]], axis=1)


@pytest.fixture(scope="module")
def data():
    return make_points()


@pytest.mark.parametrize("name", LINEAR_LOSSES)
@pytest.mark.parametrize("chunk_size", [1, 37, 8192])
def test_linear_losses_index_equals_vector_pairs(name, chunk_size, data):
    module, hyper = LINEAR_LOSSES[name]
    points, index, y = data
    rng = np.random.default_rng(1)
    A, A0 = rng.normal(size=(5, 8)), rng.normal(size=(5, 8))
    X1, X2 = points[index[:, 0]], points[index[:, 1]]
    J, G = module.objective(X1, X2, y, lam=0.3, A0=A0, **hyper)(A)
    f = module.index_objective(points, index, y, lam=0.3, A0=A0, chunk_size=chunk_size, **hyper)
    J_idx, G_idx = f(A)
    assert G_idx.dtype == np.float64 and G_idx.shape == A.shape
    np.testing.assert_allclose(J_idx, J, rtol=1e-12)
    np.testing.assert_allclose(G_idx, G, rtol=1e-12, atol=1e-12 * np.abs(G).max())
    J_flat, G_flat = f(A.ravel())
    assert J_flat == J_idx and G_flat.shape == (40,)
    np.testing.assert_array_equal(f.labels, y)
    assert f.n_pairs == 600


@pytest.mark.parametrize("name", LINEAR_LOSSES)
def test_few_pairs_over_many_points_use_only_their_points(name, data):
    """40 pairs over 200 points: the passes run on the <= 80 points used (in memory)."""
    module, hyper = LINEAR_LOSSES[name]
    points, index, y = data
    index, y = index[::15], y[::15]
    A = np.random.default_rng(5).normal(size=(3, 8))
    f = module.index_objective(points, index, y, lam=0.1, **hyper)
    assert f.passes.points.shape[0] == np.unique(index).size <= 80
    J, G = f(A)
    J_ref, G_ref = module.objective(points[index[:, 0]], points[index[:, 1]], y, lam=0.1,
                                    **hyper)(A)
    np.testing.assert_allclose(J, J_ref, rtol=1e-12)
    np.testing.assert_allclose(G, G_ref, rtol=1e-12, atol=1e-12 * np.abs(G_ref).max())


@pytest.mark.parametrize("name", LINEAR_LOSSES)
def test_batch_uses_only_the_pairs_given(name, data):
    module, hyper = LINEAR_LOSSES[name]
    points, index, y = data
    A = np.random.default_rng(2).normal(size=(3, 8))
    rows = np.array([5, 17, 17, 400, 599])
    J, G = module.index_objective(points, index, y, lam=0.2, **hyper).batch(A, rows)
    sub = index[rows]
    J_ref, G_ref = module.objective(points[sub[:, 0]], points[sub[:, 1]], y[rows], lam=0.2,
                                    **hyper)(A)
    np.testing.assert_allclose(J, J_ref, rtol=1e-12)
    np.testing.assert_allclose(G, G_ref, rtol=1e-12, atol=1e-14)


def test_float32_points_keep_float32(data):
    points, index, y = data
    A = np.random.default_rng(3).normal(size=(4, 8))
    J64, G64 = tsml.index_objective(points, index, y)(A)
    J32, G32 = tsml.index_objective(points.astype(np.float32), index.astype(np.int32), y)(A)
    assert J32.dtype == G32.dtype == np.float32
    assert abs(J32 - J64) < 1e-5 * abs(J64)
    assert np.abs(G32 - G64).max() < 1e-4 * np.abs(G64).max()


def test_ldml_index_equals_vector_pairs(data):
    points, index, y = data
    rng = np.random.default_rng(4)
    theta = ldml.pack(0.1 * rng.normal(size=(8, 8)), 0.7)
    f_vec = ldml.objective(points[index[:, 0]], points[index[:, 1]], y, lam=0.2)
    f_idx = ldml.index_objective(points, index, y, lam=0.2, chunk_size=50)
    rows = [3, 3, 90]
    for (J, g), (J_ref, g_ref) in ((f_idx(theta), f_vec(theta)),
                                   (f_idx.batch(theta, rows), f_vec.batch(theta, rows))):
        np.testing.assert_allclose(J, J_ref, rtol=1e-12)
        np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12 * np.abs(g_ref).max())


@pytest.mark.parametrize("mapping", [Tanh(8, 4), MLP(8, 6, 3)], ids=["tanh", "mlp"])
def test_mapped_objective_index_equals_vector_pairs(mapping, data):
    points, index, y = data
    theta = mapping.init(0)
    args = (tsml.embedding_cost_grad, mapping)
    f_vec = MappedObjective(*args, points[index[:, 0]], points[index[:, 1]], y, lam=0.1)
    f_idx = IndexMappedObjective(*args, points, index, y, lam=0.1, chunk_size=64)
    for (J, G), (J_ref, G_ref) in ((f_idx(theta), f_vec(theta)),
                                   (f_idx.batch(theta, [0, 9, 9]), f_vec.batch(theta, [0, 9, 9]))):
        np.testing.assert_allclose(J, J_ref, rtol=1e-12)
        np.testing.assert_allclose(G, G_ref, rtol=1e-12, atol=1e-12 * np.abs(G_ref).max())


def _params(est):
    return est.metric_ if isinstance(est, LDML) else est.components_


@pytest.mark.parametrize("Learner", LEARNERS, ids=[c.__name__ for c in LEARNERS])
def test_learners_fit_the_same_model_on_index_pairs(Learner, data):
    """lam=0.1: L-BFGS converges in ~10 iterations, so the 1e-16 differences of the two
    algebras stay at round-off (at lam=1e-3 they grow to ~1e-11 for TSML over 55
    iterations; see the report)."""
    points, index, y = data
    vec = Learner(lam=0.1).fit(gathered(points, index), y)
    idx = Learner(lam=0.1, preprocessor=points).fit(index, y)
    assert idx.n_iter_ == vec.n_iter_ and idx.n_features_in_ == 8
    np.testing.assert_allclose(_params(idx), _params(vec), rtol=0, atol=1e-12)
    assert idx.threshold_ == pytest.approx(vec.threshold_, abs=1e-12)
    np.testing.assert_allclose(idx.pair_score(index), vec.pair_score(gathered(points, index)),
                               atol=1e-12)
    np.testing.assert_array_equal(idx.predict(index[:50]),
                                  vec.predict(gathered(points, index[:50])))
    assert idx.score(index, y) == vec.score(gathered(points, index), y)
    np.testing.assert_allclose(idx.transform(points), vec.transform(points), atol=1e-12)


@pytest.mark.parametrize("options", [
    {"init": "wccn"}, {"similar_only": True, "normalize": True},
    {"mapping": "tanh", "random_state": 0},
    {"solver": "sgd", "max_iter": 300, "random_state": 0, "validation_interval": 50},
], ids=["wccn", "similar-normalize", "tanh", "sgd"])
def test_tsml_options_on_index_pairs(options, data):
    points, index, y = data
    kwargs = dict(lam=0.1, n_components=4, max_iter=options.pop("max_iter", 8), **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        vec = TSML(**kwargs).fit(gathered(points, index), y)
        idx = TSML(preprocessor=points, **kwargs).fit(index, y)
    np.testing.assert_allclose(idx._theta(), vec._theta(), rtol=0, atol=1e-12)
    assert idx.threshold_ == pytest.approx(vec.threshold_, abs=1e-12)


def test_wccn_from_index_pairs_equals_wccn_on_pairs(data):
    points, index, y = data
    ref = WCCN().fit(gathered(points, index), y)
    est = WCCN().fit_index_pairs(points, index, y)
    np.testing.assert_allclose(est.components_, ref.components_, rtol=1e-10, atol=1e-12)
    assert est.n_features_in_ == 8


def test_cosine_and_mknn_score_index_pairs(data):
    points, index, y = data
    vec = CosineSimilarity().fit(gathered(points, index), y)
    idx = CosineSimilarity(preprocessor=points).fit(index, y)
    np.testing.assert_allclose(idx.pair_score(index), vec.pair_score(gathered(points, index)))
    assert idx.threshold_ == vec.threshold_
    labels = np.repeat(np.arange(40), 5)
    metric = TSML(lam=0.1).fit(gathered(points, index), y)
    mknn = MkNN(n_neighbors=3, metric=metric, preprocessor=points).fit(points, labels)
    np.testing.assert_array_equal(mknn.pair_score(index), mknn.pair_score(gathered(points, index)))


def test_grid_search_over_index_pairs_matches_vector_pairs(data):
    points, index, y = data
    grid = {"lam": [1e-2, 1.0]}
    vec = GridSearchCV(TSML(max_iter=20), grid, cv=3).fit(gathered(points, index), y)
    idx = GridSearchCV(TSML(max_iter=20, preprocessor=points), grid, cv=3).fit(index, y)
    np.testing.assert_allclose(idx.cv_results_["mean_test_score"],
                               vec.cv_results_["mean_test_score"])
    assert idx.best_params_ == vec.best_params_


def test_no_pair_array_is_formed():
    """100,000 index pairs over 300 points, d = 64: the (n, 2, d) float64 array would be
    102 MB; the fit's peak of traced allocations stays a fraction of that."""
    points, index, y = make_points(n_identities=60, per_identity=5, d=64, n_pairs=100_000)
    est = TSML(n_components=16, max_iter=3, preprocessor=points)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(index[::1000], y[::1000])  # compile / load the kernels outside the trace
        tracemalloc.start()
        try:
            est.fit(index, y)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    pairs_bytes = index.shape[0] * 2 * 64 * 8
    assert peak < pairs_bytes / 4, (peak, pairs_bytes)


@pytest.mark.parametrize("Learner", LEARNERS, ids=[c.__name__ for c in LEARNERS])
def test_bad_index_pairs_raise_value_error(Learner, data):
    points, index, y = data
    est = Learner(preprocessor=points)
    cases = [
        (np.where(index == 7, 200, index), "out of range"),
        (np.where(index == 7, -1, index), "out of range"),
        (index.astype(np.float64), "must hold integers"),
        (index[:, :1], r"shape \(n_pairs, 2\)"),
        (np.c_[index, index[:, :1]], r"shape \(n_pairs, 2\)"),
    ]
    for pairs, message in cases:
        with pytest.raises(ValueError, match=message):
            est.fit(pairs, y)
    with pytest.raises(ValueError, match="set preprocessor"):
        Learner().fit(index, y)
    fitted = Learner(max_iter=5, preprocessor=points).fit(index, y)
    fitted.set_params(preprocessor=points[:, :7])
    with pytest.raises(ValueError, match="7 features, but the estimator was fitted with 8"):
        fitted.pair_score(index)
    nan_points = points.copy()
    nan_points[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Learner(preprocessor=nan_points).fit(index, y)


def test_zero_point_used_by_a_pair_raises_for_cosine_learners(data):
    points, index, y = data
    zero = points.copy()
    zero[index[0, 0]] = 0.0
    with pytest.raises(ValueError, match="all-zero point"):
        TSML(preprocessor=zero).fit(index, y)
    unused = np.r_[points, np.zeros((1, 8))]  # a zero point no pair uses is fine
    TSML(max_iter=5, preprocessor=unused).fit(index, y)


# -- The pairs room's helpers that the learners call instead of asking the pair kind --------


def test_wccn_fit_takes_index_pairs(data):
    from metricfit.pairs import IndexPairs

    points, index, y = data
    ref = WCCN().fit_index_pairs(points, index, y)
    est = WCCN().fit(IndexPairs(points, index), y)
    np.testing.assert_array_equal(est.components_, ref.components_)
    with pytest.raises(ValueError, match="similar pair"):
        WCCN().fit(IndexPairs(points, index), -np.ones(len(index)))


def test_map_pair_vectors_and_score_pairs_agree_on_both_kinds(data):
    from metricfit.mappings import l2_normalize
    from metricfit.pairs.index import IndexPairs, map_pair_vectors, score_pairs

    points, index, _ = data
    vectors, pairs = gathered(points, index), IndexPairs(points, index)
    mapped = map_pair_vectors(l2_normalize, pairs)
    assert isinstance(mapped, IndexPairs) and mapped.index is index
    np.testing.assert_allclose(gathered(mapped.points, index),
                               map_pair_vectors(l2_normalize, vectors), rtol=1e-15)
    W = np.random.default_rng(3).normal(size=(3, points.shape[1]))

    def transform(X):
        return X @ W.T

    def score(a, b):
        return np.sum(a * b, axis=1)

    expected = score(vectors[:, 0] @ W.T, vectors[:, 1] @ W.T)
    np.testing.assert_allclose(score_pairs(transform, score, vectors), expected, rtol=1e-12)
    np.testing.assert_allclose(score_pairs(transform, score, pairs, chunk_size=7), expected,
                               rtol=1e-12)


def test_similar_pair_classes():
    from metricfit.pairs.index import IndexPairs, similar_pair_classes

    points = np.arange(12.0).reshape(6, 2)
    index = np.array([[0, 1], [1, 2], [3, 4], [0, 5]])
    s = np.array([1, 1, 1, -1])
    X, codes = similar_pair_classes(IndexPairs(points, index), s)  # components {0,1,2}, {3,4}
    np.testing.assert_array_equal(X, points[:5])
    assert codes[0] == codes[1] == codes[2] != codes[3] == codes[4]
    X, codes = similar_pair_classes(IndexPairs(points, index), s, singletons=True)
    assert X.shape == (6, 2) and len(set(codes)) == 3  # point 5 a class of its own
    X, codes = similar_pair_classes(gathered(points, index), s)  # each similar pair a class
    np.testing.assert_array_equal(codes, [0, 0, 1, 1, 2, 2])
    X, codes = similar_pair_classes(gathered(points, index), s, singletons=True)
    np.testing.assert_array_equal(codes, [0, 0, 1, 1, 2, 2, 3, 4])
