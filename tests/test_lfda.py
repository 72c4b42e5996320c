"""LFDA (metricfit.learners.lfda) against a direct dense implementation of Sugiyama (2007)
eqs. 4 and 9-13 on small data (n x n weight matrices: fine at this size)."""

import numpy as np
import pytest
from scipy import linalg

from metricfit.learners import LFDA
from metricfit.learners.lfda import local_scatter


def dense_lfda_scatter(X, y, k):
    """The paper literally: A_ij with local scaling (sigma_i: distance to the k-th nearest
    point of i's class), W^(lw), W^(lb) (eqs. 11-12), S = 1/2 sum_ij W_ij x_ij x_ij^T."""
    n, d = X.shape
    D = np.sum((X[:, None] - X[None]) ** 2, axis=2)
    same = y[:, None] == y[None, :]
    sigma = np.empty(n)
    for i in range(n):
        sigma[i] = np.sqrt(np.sort(D[i, same[i]])[k])  # position 0 is the point itself
    A = np.exp(-D / np.outer(sigma, sigma))
    counts = np.array([np.sum(y == c) for c in y])
    W_w = np.where(same, A / counts[:, None], 0.0)
    W_b = np.where(same, A * (1 / n - 1 / counts[:, None]), 1 / n)
    S_w, S_b = np.zeros((d, d)), np.zeros((d, d))
    for i in range(n):
        for j in range(n):
            x = X[i] - X[j]
            S_w += 0.5 * W_w[i, j] * np.outer(x, x)
            S_b += 0.5 * W_b[i, j] * np.outer(x, x)
    return S_w, S_b


def data(seed=0, n=45, d=4):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(size=(n, d)) + 1.5 * np.eye(3, d)[y]
    X[y == 1, 3] += 3 * rng.choice([-1, 1], size=np.sum(y == 1))  # a bimodal class
    return X, y


@pytest.mark.parametrize("k", [1, 3, 7])
def test_local_scatter_matches_the_dense_definition(k):
    X, y = data()
    S_w, S_b = local_scatter(X, y, k)
    R_w, R_b = dense_lfda_scatter(X, y, k)
    np.testing.assert_allclose(S_w, R_w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(S_b, R_b, rtol=1e-10, atol=1e-12)


def test_blocks_give_the_same_scatter(monkeypatch):
    import metricfit.learners.lfda as module

    X, y = data(seed=1)
    full = local_scatter(X, y, 3)
    monkeypatch.setattr(module, "BLOCK_BYTES", 8 * 15 * 4)  # 4 rows per block
    blocked = local_scatter(X, y, 3)
    for a, b in zip(full, blocked, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_components_solve_the_generalised_eigenproblem():
    X, y = data(seed=2)
    est = LFDA(n_components=2, k=3, embedding_type="plain").fit(X, y)
    R_w, R_b = dense_lfda_scatter(X, y, 3)
    vals, vecs = linalg.eigh(R_b, R_w)
    np.testing.assert_allclose(est.eigenvalues_, vals[::-1][:2], rtol=1e-8)
    for row, v in zip(est.components_, vecs[:, ::-1].T, strict=False):
        assert np.isclose(abs(row @ v) / np.linalg.norm(row) / np.linalg.norm(v), 1, rtol=1e-8)
    weighted = LFDA(n_components=2, k=3).fit(X, y).components_
    np.testing.assert_allclose(np.abs(weighted),
                               np.abs(est.components_ * np.sqrt(est.eigenvalues_)[:, None]),
                               rtol=1e-8)
    ortho = LFDA(n_components=2, k=3, embedding_type="orthonormalized").fit(X, y).components_
    np.testing.assert_allclose(ortho @ ortho.T, np.eye(2), atol=1e-10)


def test_default_k_and_float32_and_errors():
    X, y = data(seed=3)
    est = LFDA().fit(X.astype(np.float32), y)
    assert est.components_.shape == (4, 4) and est.components_.dtype == np.float32
    with pytest.raises(ValueError, match="n_components=5 must be at most n_features=4"):
        LFDA(n_components=5).fit(X, y)
    with pytest.raises(ValueError, match="embedding_type"):
        LFDA(embedding_type="nope").fit(X, y)
    with pytest.raises(ValueError, match="y holds 1 identity"):
        LFDA().fit(X, np.zeros(len(X)))


def test_singular_within_scatter_warns_and_still_fits():
    X, y = data(seed=4)
    X = np.c_[X, X[:, 0]]  # a duplicated feature: S_w is singular
    with pytest.warns(UserWarning, match="singular"):
        est = LFDA(n_components=2).fit(X, y)
    assert np.isfinite(est.components_).all()
