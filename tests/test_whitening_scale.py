"""WPCA / WCCN on full-rank but badly scaled data: the rank cut-off is relative to the
data's numerical rank (numpy.linalg.matrix_rank's, as scikit-learn's PCA), so they whiten
where PCA(whiten=True) does, and still refuse truly rank-deficient data."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.decomposition import PCA

from metricfit import WCCN, WPCA

SCALES = np.array([1e6, 1.0, 1e-6, 1e3, 1e-3])


def badly_scaled(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, SCALES.size)) @ np.diag(SCALES) + 5 * SCALES


def test_wpca_whitens_badly_scaled_full_rank_data_like_pca():
    X = badly_scaled()
    assert np.linalg.matrix_rank(X - X.mean(axis=0)) == X.shape[1]
    Z = WPCA().fit(X).transform(X)
    assert_allclose(np.cov(Z, rowvar=False), np.eye(X.shape[1]), atol=1e-6)
    ref = PCA(whiten=True).fit_transform(X)
    assert_allclose(np.abs(Z), np.abs(ref), rtol=1e-4, atol=1e-6)


def test_wccn_normalises_badly_scaled_within_class_covariance():
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(30), 10)
    X = (rng.normal(size=(y.size, SCALES.size)) + 3 * rng.normal(size=(30, SCALES.size))[y]) \
        * SCALES
    est = WCCN().fit(X, y)
    Z = est.transform(X)
    within = sum(np.cov(Z[y == c], rowvar=False, bias=True) for c in range(30)) / 30
    assert_allclose(within, np.eye(SCALES.size), atol=1e-6)


@pytest.mark.parametrize("Estimator", [WPCA, WCCN])
def test_rank_deficient_data_still_raises(Estimator):
    X = badly_scaled()
    X = np.column_stack([X, X[:, 0] - 2 * X[:, 3]])  # an exact linear dependence
    y = np.arange(X.shape[0]) % 30
    with pytest.raises(ValueError, match="numerical rank.*reg > 0"):
        Estimator().fit(X, y)
    assert np.isfinite(Estimator(reg=1e-3).fit(X, y).transform(X)).all()
