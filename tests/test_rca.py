"""RCA (metricfit.learners.rca): the closed form of Bar-Hillel et al. (2005) Algorithm 1
against a direct computation, whitening of the chunklets, the Fisher step, RCA_Supervised."""

import numpy as np
import pytest

from metricfit.learners import RCA, RCA_Supervised
from metricfit.pairs import sample_chunks


def data(seed=0, n=90, d=3):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + 4 * np.eye(3, d)[y]
    return X, y


def direct_chunklet_covariance(X, chunks):
    """Algorithm 1 step 2 point by point: C = 1/N sum_j sum_{x in H_j} (x - m_j)(x - m_j)^T."""
    d = X.shape[1]
    C, N = np.zeros((d, d)), 0
    for c in set(chunks.tolist()) - {-1}:
        H = X[chunks == c]
        for x in H:
            C += np.outer(x - H.mean(axis=0), x - H.mean(axis=0))
            N += 1
    return C / N


def test_metric_is_the_inverse_chunklet_covariance():
    X, y = data()
    chunks = sample_chunks(y, n_chunks=20, chunk_size=3, random_state=0)
    est = RCA().fit(X, chunks)
    C = direct_chunklet_covariance(X, chunks)
    np.testing.assert_allclose(est.get_mahalanobis_matrix(), np.linalg.inv(C), rtol=1e-8)
    Z = est.transform(X)
    np.testing.assert_allclose(direct_chunklet_covariance(Z, chunks), np.eye(3), atol=1e-10)
    np.testing.assert_allclose(est.components_, est.components_.T, atol=1e-10)  # C^{-1/2}


def test_fisher_step_keeps_the_least_within_chunklet_directions():
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(10), 6)
    X = np.c_[5 * y + 0.1 * rng.normal(size=60), rng.normal(size=(60, 2))]
    chunks = sample_chunks(y, n_chunks=25, chunk_size=2, random_state=0)
    est = RCA(n_components=1).fit(X, chunks)
    L = est.components_
    assert L.shape == (1, 3) and abs(L[0, 0]) > 10 * np.abs(L[0, 1:]).max()
    Z = est.transform(X)
    np.testing.assert_allclose(direct_chunklet_covariance(Z, chunks), [[1.0]], rtol=1e-8)


def test_rca_supervised_draws_chunklets_from_labels():
    X, y = data(seed=2)
    est = RCA_Supervised(n_chunks=30, random_state=0).fit(X, y)
    chunks = sample_chunks(y, 30, 2, random_state=0)
    np.testing.assert_allclose(est.components_, RCA().fit(X, chunks).components_)
    assert est.threshold_ < 0
    with pytest.raises(ValueError, match="n_chunks=100 chunklets of chunk_size=2 cannot be"):
        RCA_Supervised().fit(X[:50], y[:50])
    assert RCA().fit(X.astype(np.float32), chunks).components_.dtype == np.float32


def test_bad_chunks_are_named():
    X, _ = data()
    with pytest.raises(ValueError, match="chunks must be 1-D with one chunk label per sample"):
        RCA().fit(X, np.zeros(5, int))
    with pytest.raises(ValueError, match="at least one chunklet of two points"):
        RCA().fit(X, -np.ones(len(X), int))
    with pytest.raises(ValueError, match="n_components=4 must be at most n_features=3"):
        RCA(n_components=4).fit(X, np.arange(len(X)) % 10)
