"""Tests of metricfit.whitening: WPCA and WCCN (seed 002, section III.C-D)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

import metricfit
from metricfit.whitening import WCCN, WPCA, _top_eigenpairs

# --------------------------------------------------------------------------- helpers


def anisotropic(rng, n, d, scale=10.0):
    """Correlated Gaussian points with a spread of variances (full rank)."""
    mixing = rng.standard_normal((d, d)) * np.logspace(0, -1.5, d)
    return rng.standard_normal((n, d)) @ mixing.T * scale + rng.standard_normal(d) * 5


def make_classes(rng, sizes, d):
    """Points with class labels: random class means, a shared anisotropic within-class noise."""
    noise = np.diag(np.logspace(0, -1, d)) @ np.linalg.qr(rng.standard_normal((d, d)))[0]
    means = rng.standard_normal((len(sizes), d)) * 3
    X = np.concatenate([m + rng.standard_normal((s, d)) @ noise
                        for m, s in zip(means, sizes, strict=True)])
    y = np.repeat(np.arange(len(sizes)), sizes)
    return X, y


def within_class_cov(X, y):
    """Slow plain-NumPy twin of eq. 12, over the classes with at least two members."""
    d = X.shape[1]
    classes = [c for c in np.unique(y) if np.sum(y == c) >= 2]
    C = np.zeros((d, d))
    for c in classes:
        members = X[y == c]
        mu = members.mean(axis=0)
        for x in members:
            C += np.outer(x - mu, x - mu) / len(members)
    return C / len(classes)


def similar_pairs_as_classes(pairs, s):
    """Points and labels where each similar pair is a 2-member class."""
    similar = pairs[s == 1]
    return similar.reshape(-1, pairs.shape[2]), np.repeat(np.arange(len(similar)), 2)


def sign_align(A, B):
    """B with each column's sign flipped to best match A."""
    return B * np.sign(np.sum(A * B, axis=0))


# --------------------------------------------------------------------------- sklearn API


@parametrize_with_checks([WPCA(), WCCN(), WPCA(n_components=1, reg=0.1), WCCN(reg=0.1)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_exported_from_package():
    assert metricfit.WPCA is WPCA and metricfit.WCCN is WCCN


# --------------------------------------------------------------------------- WPCA


@pytest.mark.parametrize("n, d, k", [(400, 20, None), (400, 20, 7), (15, 40, None), (15, 40, 6)])
def test_wpca_training_data_is_white(n, d, k):
    X = anisotropic(np.random.default_rng(1), n, d)
    Z = WPCA(n_components=k).fit_transform(X)
    k_expected = k or min(n - 1, d)
    assert Z.shape == (n, k_expected)
    assert_allclose(Z.mean(axis=0), 0.0, atol=1e-10)
    assert_allclose(np.cov(Z, rowvar=False), np.eye(k_expected), atol=1e-8)


@pytest.mark.parametrize("n, d, k", [(300, 25, 10), (30, 50, 29), (30, 50, 5)])
def test_wpca_matches_sklearn_pca_whiten(n, d, k):
    rng = np.random.default_rng(2)
    X, X_test = anisotropic(rng, n, d), anisotropic(rng, 20, d)
    ours = WPCA(n_components=k).fit(X)
    ref = PCA(n_components=k, whiten=True, svd_solver="full").fit(X)
    assert_allclose(ours.mean_, ref.mean_, atol=1e-10)
    assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-8)
    Z, Z_ref = ours.transform(X_test), ref.transform(X_test)
    assert_allclose(Z, sign_align(Z, Z_ref), atol=1e-7)
    assert ours.n_components_ == k and ours.n_features_in_ == d


def test_wpca_pairs_equal_stacked_points():
    rng = np.random.default_rng(3)
    pairs = anisotropic(rng, 2 * 150, 12).reshape(150, 2, 12)
    points = pairs.reshape(-1, 12)
    from_pairs = WPCA(n_components=5).fit(pairs, rng.choice([-1, 1], 150))
    from_points = WPCA(n_components=5).fit(points)
    assert_allclose(from_pairs.mean_, from_points.mean_)
    assert_allclose(from_pairs.components_, from_points.components_)
    Zp = from_pairs.transform(pairs)
    assert Zp.shape == (150, 2, 5)
    assert_allclose(Zp, from_points.transform(points).reshape(150, 2, 5))


@pytest.mark.parametrize("n, d", [(60, 20), (12, 20)])
@pytest.mark.parametrize("solver", ["eigh", "gram"])
def test_wpca_eigh_gram_and_svd_paths_agree(n, d, solver):
    X = anisotropic(np.random.default_rng(4), n, d)
    Xc = X - X.mean(axis=0)
    k = min(n - 1, d) - 2
    lam_e, V_e = _top_eigenpairs(Xc.copy(), k, solver=solver)
    lam_s, V_s = _top_eigenpairs(Xc.copy(), k, solver="svd")
    assert_allclose(lam_e, lam_s, rtol=1e-8)
    assert_allclose(np.abs(V_e.T @ V_s), np.eye(k), atol=1e-6)
    assert_allclose(V_e.T @ V_e, np.eye(k), atol=1e-10)
    assert np.all(np.diff(lam_e) <= 0)


def test_wpca_both_paths_through_fit_agree():
    """A zero column moves n = d (covariance + eigh) to n < d (Gram + eigh) without changing
    W."""
    rng = np.random.default_rng(5)
    X = anisotropic(rng, 30, 30)
    big = WPCA(n_components=10).fit(X)  # n >= d: covariance + eigh
    wide = WPCA(n_components=10).fit(np.hstack([X, np.zeros((30, 1))]))  # n < d: Gram
    assert_allclose(wide.components_[:, :-1], big.components_, atol=1e-8)
    assert_allclose(wide.components_[:, -1], 0.0, atol=1e-8)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 40), d=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_wpca_whitens_property(n, d, seed):
    X = anisotropic(np.random.default_rng(seed), n, d)
    k = min(n - 1, d)
    Z = WPCA(n_components=k).fit_transform(X)
    assert np.isfinite(Z).all()
    assert_allclose(np.cov(Z, rowvar=False).reshape(k, k), np.eye(k), atol=1e-6)


def test_wpca_n_components_too_large():
    X = anisotropic(np.random.default_rng(6), 10, 5)
    too_many = r"n_components=6 must be <= min\(n_samples, n_features\)=5"
    with pytest.raises(ValueError, match=too_many):
        WPCA(n_components=6).fit(X)
    with pytest.raises(ValueError, match=r"n_components=11 must be <= .*=10"):
        WPCA(n_components=11).fit(anisotropic(np.random.default_rng(6), 10, 30))


def test_wpca_zero_eigenvalue_needs_reg():
    X = anisotropic(np.random.default_rng(7), 50, 6)
    X = np.hstack([X, X[:, :2]])  # rank 6 in 8 dimensions
    with pytest.raises(ValueError, match=r"~0 .*Lower n_components .* or set reg > 0"):
        WPCA(n_components=8).fit(X)
    Z = WPCA(n_components=8, reg=1e-3).fit_transform(X)
    assert np.isfinite(Z).all()
    Z6 = WPCA(n_components=6).fit_transform(X)  # the non-degenerate part is still white
    assert_allclose(np.cov(Z6, rowvar=False), np.eye(6), atol=1e-8)
    with pytest.raises(ValueError, match="reg > 0"):
        WPCA().fit(np.ones((10, 3)))  # constant data: every eigenvalue is 0


def test_wpca_none_keeps_rank_of_centred_data():
    est = WPCA().fit(anisotropic(np.random.default_rng(8), 9, 20))
    assert est.n_components_ == 8 and est.components_.shape == (8, 20)


# --------------------------------------------------------------------------- WCCN


SIZES = [2, 3, 5, 8, 4, 2, 6, 7, 3, 5, 9, 4, 1, 1]  # includes singletons


def test_wccn_within_class_cov_is_identity_on_points():
    X, y = make_classes(np.random.default_rng(10), SIZES, 8)
    labels = np.array([f"id{c}" for c in y])  # any hashable labels
    Z = WCCN().fit_transform(X, labels)
    assert Z.shape == X.shape
    assert_allclose(within_class_cov(Z, labels), np.eye(8), atol=1e-8)


def test_wccn_within_class_cov_is_identity_on_pairs():
    rng = np.random.default_rng(11)
    pairs = anisotropic(rng, 2 * 80, 6).reshape(80, 2, 6)
    s = np.where(rng.random(80) < 0.5, 1, -1)
    est = WCCN().fit(pairs, s)
    Z = est.transform(pairs)
    assert Z.shape == (80, 2, 6)
    assert_allclose(within_class_cov(*similar_pairs_as_classes(Z, s)), np.eye(6), atol=1e-8)


def test_wccn_pair_form_equals_point_form():
    rng = np.random.default_rng(12)
    pairs = anisotropic(rng, 2 * 60, 5).reshape(60, 2, 5)
    s = rng.choice([-1, 1], 60)
    from_pairs = WCCN().fit(pairs, (s == 1).astype(int))  # {0, 1} coding, 1 = similar
    from_points = WCCN().fit(*similar_pairs_as_classes(pairs, s))
    assert_allclose(from_pairs.components_, from_points.components_, atol=1e-10)
    assert_allclose(from_pairs.eigenvalues_, from_points.eigenvalues_, rtol=1e-10)


def test_wccn_inverts_within_class_covariance():
    X, y = make_classes(np.random.default_rng(13), SIZES, 7)
    W = WCCN().fit(X, y).components_
    C = within_class_cov(X, y)
    assert_allclose(W.T @ W, np.linalg.inv(C), rtol=1e-8, atol=1e-8)
    assert_allclose(W @ C @ W.T, np.eye(7), atol=1e-8)


def test_wccn_singletons_are_ignored():
    X, y = make_classes(np.random.default_rng(14), SIZES, 5)
    keep = np.isin(y, np.flatnonzero(np.bincount(y) >= 2))
    assert_allclose(WCCN().fit(X, y).components_, WCCN().fit(X[keep], y[keep]).components_)


def test_wccn_n_components_keeps_smallest_variances():
    X, y = make_classes(np.random.default_rng(15), SIZES, 8)
    C = within_class_cov(X, y)
    lam = np.linalg.eigvalsh(C)  # ascending
    full = WCCN().fit(X, y)
    small = WCCN(n_components=3).fit(X, y)
    assert_allclose(small.eigenvalues_, lam[:3], rtol=1e-8)
    assert_allclose(full.eigenvalues_, lam, rtol=1e-8)
    assert_allclose(small.components_, full.components_[:3])
    W = small.components_
    assert_allclose(W @ C @ W.T, np.eye(3), atol=1e-8)
    # each row is an eigenvector of C for a kept eigenvalue
    for w, value in zip(W, lam[:3], strict=True):
        assert_allclose(C @ w, value * w, atol=1e-8)
    assert small.transform(X).shape == (len(X), 3)


def test_wccn_reg_regularises_singular_covariance():
    X, y = make_classes(np.random.default_rng(16), [2, 2, 2], 10)  # C has rank 3
    with pytest.raises(ValueError, match=r"~0 .*set reg > 0"):
        WCCN().fit(X, y)
    est = WCCN(reg=0.5).fit(X, y)
    C = within_class_cov(X, y)
    W = est.components_
    assert np.isfinite(W).all()
    lam = est.eigenvalues_
    assert_allclose(W @ C @ W.T, np.diag(lam / (lam + 0.5)), atol=1e-10)


def test_wccn_needs_classes_and_labels():
    X = np.random.default_rng(17).standard_normal((5, 3))
    with pytest.raises(ValueError, match="at least one class with 2 or more samples"):
        WCCN().fit(X, np.arange(5))
    with pytest.raises(ValueError, match="requires y"):
        WCCN().fit(X)
    with pytest.raises(ValueError, match="y has 4 labels for 5 samples"):
        WCCN().fit(X, np.zeros(4))
    with pytest.raises(ValueError, match="must be <= n_features=3"):
        WCCN(n_components=4).fit(X, np.zeros(5))


def test_wccn_pairs_without_similar_pair():
    pairs = np.random.default_rng(18).standard_normal((6, 2, 3))
    with pytest.raises(ValueError, match="at least one similar pair"):
        WCCN().fit(pairs, -np.ones(6))
    with pytest.raises(ValueError, match="pair labels must be in"):
        WCCN().fit(pairs, np.arange(6))


# --------------------------------------------------------------------------- both


def fit_args(est, X):
    """Positional fit arguments: WCCN needs labels (two classes, or pair labels)."""
    if isinstance(est, WPCA):
        return (X,)
    n = np.shape(X)[0]
    return (X, np.arange(n) % 2 if np.ndim(X) != 3 else np.ones(n))


ESTIMATORS = [WPCA, WCCN]


@pytest.mark.parametrize("Est", ESTIMATORS)
@pytest.mark.parametrize("as_pairs", [False, True])
def test_float32_in_float32_out(Est, as_pairs):
    X = anisotropic(np.random.default_rng(20), 80, 6).astype(np.float32)
    if as_pairs:
        X = X.reshape(40, 2, 6)
    est = Est().fit(*fit_args(Est(), X))
    assert est.components_.dtype == np.float32
    Z = est.transform(X)
    assert Z.dtype == np.float32 and Z.shape == X.shape
    ref = Est().fit(*fit_args(Est(), X.astype(np.float64)))
    assert_allclose(Z, ref.transform(X.astype(np.float64)), rtol=1e-3, atol=1e-3)
    assert ref.transform(X).dtype == np.float32  # output dtype follows the input of transform


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_integers_become_float64(Est):
    X = np.random.default_rng(21).integers(0, 50, (40, 4))
    est = Est().fit(*fit_args(Est(), X))
    assert est.transform(X).dtype == np.float64


def bad_inputs():
    rng = np.random.default_rng(22)
    nan = rng.standard_normal((20, 4))
    nan[3, 1] = np.nan
    inf = rng.standard_normal((10, 2, 4))
    inf[0, 1, 2] = np.inf
    shapes = "points of shape .* or pairs of shape"
    return [
        pytest.param(nan, "contains NaN", id="nan"),
        pytest.param(inf, "contains infinity", id="inf-pairs"),
        pytest.param(rng.standard_normal(20), shapes, id="1d"),
        pytest.param(rng.standard_normal((5, 2, 3, 4)), shapes, id="4d"),
        pytest.param(rng.standard_normal((10, 3, 4)), "pair axis", id="pair-axis"),
        pytest.param(rng.standard_normal((10, 4, 2)), "looks transposed", id="transposed"),
    ]


@pytest.mark.parametrize("Est", ESTIMATORS)
@pytest.mark.parametrize("X, match", bad_inputs())
def test_bad_input_fit_and_transform(Est, X, match):
    with pytest.raises(ValueError, match=match):
        Est().fit(*fit_args(Est(), X))
    good = anisotropic(np.random.default_rng(23), 40, 4)
    est = Est().fit(*fit_args(Est(), good))
    with pytest.raises(ValueError, match=match):
        est.transform(X)


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_transform_checks_features_and_fit(Est):
    X = anisotropic(np.random.default_rng(24), 40, 5)
    with pytest.raises(NotFittedError):
        Est().transform(X)
    est = Est().fit(*fit_args(Est(), X))
    name = Est.__name__
    with pytest.raises(ValueError, match=f"X has 3 features, but {name} is expecting 5 features"):
        est.transform(X[:, :3])
    with pytest.raises(ValueError, match=f"X has 3 features, but {name} is expecting 5 features"):
        est.transform(X[:20, :3].reshape(10, 2, 3))


@pytest.mark.parametrize("Est", ESTIMATORS)
@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_components": 0}, "'n_components' parameter"),
        ({"n_components": 2.5}, "'n_components' parameter"),
        ({"reg": -1.0}, "'reg' parameter"),
        ({"reg": "big"}, "'reg' parameter"),
    ],
)
def test_parameters_validated_first(Est, params, match):
    with pytest.raises(ValueError, match=match):
        Est(**params).fit(np.full(7, np.nan))  # the parameter error comes before the data's
