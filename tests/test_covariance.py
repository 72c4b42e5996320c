"""Covariance (metricfit.learners.covariance): the inverse covariance as M, its closed form."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from metricfit.learners import Covariance


def test_covariance_is_the_inverse_covariance():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 3)) @ rng.normal(size=(3, 3))
    est = Covariance().fit(X)
    np.testing.assert_allclose(est.get_mahalanobis_matrix(), np.linalg.inv(np.cov(X.T)),
                               rtol=1e-8)
    Z = est.transform(X)  # whitened: unit covariance
    np.testing.assert_allclose(np.cov(Z.T), np.eye(3), atol=1e-8)
    with pytest.raises(NotFittedError, match="calibrate_threshold"):
        est.predict(X[:4].reshape(2, 2, 3))
    y = (X[:, 0] > 0).astype(int)
    assert Covariance().fit(X, y).predict(X[:4].reshape(2, 2, 3)).shape == (2,)
    rank_deficient = np.column_stack([X, X[:, 0] + X[:, 1]])
    M = Covariance().fit(rank_deficient).get_mahalanobis_matrix()
    assert np.all(np.isfinite(M)) and np.linalg.matrix_rank(M) == 3
