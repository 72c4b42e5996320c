"""LMNN (metricfit.losses.lmnn, metricfit.learners.lmnn): the numba impostor kernel against
its NumPy twin, the hand-derived gradient against central differences and the loss against a
triple loop, the blocked scan, target neighbours, memory growth, and fits."""

import tracemalloc

import numpy as np
import pytest
from _reference import central_differences, relative_error

from metricfit.learners import LMNN
from metricfit.learners.lmnn import target_neighbors
from metricfit.losses import lmnn
from metricfit.losses._lmnn_kernels import SCREEN


def impostor_block_ref(Z, codes, start, stop, target_d, scale):
    """NumPy twin of lmnn._impostors: the loss, counts and the impostor part of dJ/dZ."""
    n, k = Z.shape
    D = np.sum((Z[start:stop, None, :] - Z[None, :, :]) ** 2, axis=2)  # (b, n)
    other = codes[start:stop, None] != codes[None, :]
    margins = 1.0 + target_d[:, :, None] - D[:, None, :]  # (b, K, n)
    active = (margins > 0) & other[:, None, :]
    loss = float(np.sum(np.where(active, margins, 0.0)))
    counts = active.sum(axis=2).astype(float)
    W = active.sum(axis=1).astype(float)  # (b, n)
    dZ = np.zeros((n, k))
    for i in range(stop - start):
        for l in np.flatnonzero(W[i]):  # noqa: E741
            step = -2 * scale * W[i, l] * (Z[start + i] - Z[l])
            dZ[start + i] += step
            dZ[l] -= step
    return loss, counts, dZ


def problem(n=50, d=5, n_classes=3, seed=0, K=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, n_classes, n).astype(np.int64)
    return X, y, target_neighbors(X, y, K)


def loss_ref(L, X, y, targets, mu=0.5):
    """The loss of the module docstring, by a triple loop."""
    Z = X @ L.T
    n = len(X)
    J = 0.0
    for i in range(n):
        for j in targets[i][targets[i] >= 0]:
            d_ij = np.sum((Z[i] - Z[j]) ** 2)
            J += mu * d_ij
            for l in range(n):  # noqa: E741
                if y[l] != y[i]:
                    J += (1 - mu) * max(0.0, 1 + d_ij - np.sum((Z[i] - Z[l]) ** 2))
    return J / n


@pytest.mark.parametrize("n", [40, 301])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_impostor_kernel_matches_its_numpy_twin(dtype, n):
    """n = 301: rows of several screened chunks (``_lmnn_kernels.SCREEN``), the last one short,
    some with candidates and some without."""
    X, y, T = problem(n=n, seed=1)
    scale = 0.6 if n < SCREEN else 2.5  # n = 301: fewer impostors, some chunks without
    Z = (X @ np.random.default_rng(2).normal(size=(5, 3)) * scale).astype(dtype)
    start, stop = 7, 23
    target_d = np.sum((Z[start:stop, None] - Z[T[start:stop]]) ** 2, axis=2).astype(np.float64)
    counts = np.full(target_d.shape, -5.0)
    dZ = np.zeros((n, 3))
    G = Z[start:stop] @ Z.T
    sq = np.einsum("ij,ij->i", Z, Z).astype(np.float64)
    loss = lmnn._impostors(G, sq, Z, y, start, target_d, counts, 0.25, dZ)
    loss_r, counts_r, dZ_r = impostor_block_ref(Z.astype(np.float64), y, start, stop,
                                                target_d, 0.25)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    assert counts.sum() > 10  # the test exercises active triples
    if n > SCREEN:  # and chunks of the screen with candidates and without
        D = np.sum((Z[start:stop, None].astype(float) - Z[None].astype(float)) ** 2, axis=2)
        hit = (y[start:stop, None] != y) & (D < 1 + target_d.max(axis=1, keepdims=True))
        chunks = np.add.reduceat(hit, np.arange(0, n, SCREEN), axis=1) > 0
        assert chunks.any() and not chunks.all()
    np.testing.assert_array_equal(counts, counts_r)
    np.testing.assert_allclose(loss, loss_r, rtol=tol)
    np.testing.assert_allclose(dZ, dZ_r, rtol=tol, atol=tol)


@pytest.mark.parametrize("mu", [0.5, 0.2])
def test_cost_matches_the_triple_loop_and_gradient_central_differences(mu):
    X, y, T = problem()
    L = 0.7 * np.random.default_rng(3).normal(size=(3, 5))
    J, G = lmnn.cost_grad(L, X, y, T, mu, block_rows=9)
    assert np.isclose(J, loss_ref(L, X, y, T, mu), rtol=1e-12)
    num = central_differences(lambda A: lmnn.cost_grad(A, X, y, T, mu)[0], L)
    assert relative_error(G, num, J) < 1e-6


def test_blocks_do_not_change_the_result():
    X, y, T = problem(n=70, seed=4)
    L = np.random.default_rng(5).normal(size=(4, 5))
    J1, G1 = lmnn.cost_grad(L, X, y, T, block_rows=None)
    J2, G2 = lmnn.cost_grad(L, X, y, T, block_rows=6)
    np.testing.assert_allclose(J1, J2, rtol=1e-12)
    np.testing.assert_allclose(G1, G2, rtol=1e-10, atol=1e-12)


def test_target_neighbours_are_the_nearest_of_the_class():
    X, y, _ = problem(n=30, seed=6)
    y[0] = 9  # a class of one point: no target
    T = target_neighbors(X, y, 3)
    assert np.all(T[0] == -1)
    for i in range(1, 30):
        same = np.flatnonzero((y == y[i]) & (np.arange(30) != i))
        order = same[np.argsort(np.sum((X[same] - X[i]) ** 2, axis=1))]
        k = min(3, same.size)
        assert set(T[i, :k]) == set(order[:k])
        assert np.all(T[i, k:] == -1)


def test_memory_of_one_evaluation_grows_with_the_block_not_n_squared():
    rng = np.random.default_rng(7)
    n, d = 3000, 10
    X = rng.normal(size=(n, d))
    y = rng.integers(0, 5, n).astype(np.int64)
    T = target_neighbors(X, y, 3)
    L = np.eye(d)
    lmnn.cost_grad(L, X, y, T, block_rows=50)  # compile first
    tracemalloc.start()
    lmnn.cost_grad(L, X, y, T, block_rows=50)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < n * n * 8 / 8, peak  # an n x n float64 array would be 72 MB


def test_fit_separates_the_class_axis_and_keeps_float32():
    rng = np.random.default_rng(8)
    y = np.repeat([0, 1, 2], 20)
    X = np.c_[y + 0.3 * rng.normal(size=60), 5 * rng.normal(size=60)]
    est = LMNN().fit(X, y)
    M = est.get_mahalanobis_matrix()
    assert M[0, 0] > 10 * M[1, 1]
    J0, _, _ = lmnn.cost_grad_embedded(X, y.astype(np.int64), target_neighbors(X, y, 3))
    assert est.objective_ < 0.5 * J0 and est.n_active_ >= 0  # from L0 = I (J0)
    est32 = LMNN().fit(X.astype(np.float32), y)
    assert est32.components_.dtype == np.float32
    assert est32.transform(X.astype(np.float32)).dtype == np.float32
    low = LMNN(n_components=1, init="pca").fit(X, y)
    assert low.components_.shape == (1, 2)


def test_bad_input_is_named():
    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(ValueError, match="n_components=4 must be at most n_features=3"):
        LMNN(n_components=4).fit(X, np.arange(10) % 2)
    with pytest.raises(ValueError, match="y holds 1 identity"):
        LMNN().fit(X, np.zeros(10))
    with pytest.raises(ValueError, match="a class with two points or more"):
        LMNN().fit(X, np.arange(10))
    with pytest.raises(ValueError, match="regularization"):
        LMNN(regularization=1.5).fit(X, np.arange(10) % 2)
    with pytest.raises(ValueError, match="init must have shape"):
        LMNN(init=np.eye(2)).fit(X, np.arange(10) % 2)


def test_default_blocks_stay_cache_sized():
    """At most MAX_BLOCK_ROWS anchors a block (a Gram block of all n rows left the cache
    between the GEMM and the scan); the 32 MiB budget still binds for large n."""
    assert lmnn.default_block_rows(1797, 8) == lmnn.MAX_BLOCK_ROWS == 1024
    assert lmnn.default_block_rows(5000, 8) == 2 ** 25 // (5000 * 8)
    assert lmnn.default_block_rows(100, 8) == 100
    assert lmnn.default_block_rows(20_000, 8) == 2 ** 25 // (20_000 * 8)
    assert lmnn.default_block_rows(10 ** 7, 4) == 16


@pytest.mark.parametrize("scale", [0.15, 1.0])  # nearly every pair active / a few
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_same_numbers_on_any_thread_count(dtype, scale, monkeypatch):
    """One thread runs the fused serial scan; several scan fixed units of anchors side by side
    and add the steps by point: J, dZ and the active count are the same bits on 1, 2 and 3
    threads (BLAS held to one thread), with blocks that end mid-way."""
    import metricfit
    from metricfit.losses import _rows
    from metricfit.parallel import blas_threads

    monkeypatch.setattr(_rows, "ROW_ELEMENTS", 64)  # units of 16 anchors: the threads split
    X, y, T = problem(n=90, d=6, n_classes=4, seed=8, K=3)
    Z = (scale * X).astype(dtype)
    results = []
    for n_threads in (1, 2, 3):
        with metricfit.threads(n_threads), blas_threads(1):
            for block_rows in (None, 37):
                J, dZ, n_active = lmnn.cost_grad_embedded(Z, y, T, block_rows=block_rows)
                results.append((n_threads, block_rows, J, dZ.tobytes(), n_active))
    assert results[0][4] > (500 if scale < 1 else 10)
    for n_threads, block_rows, *numbers in results[2:]:
        expected = results[0 if block_rows is None else 1][2:]
        assert numbers[1] == expected[1] and numbers[2] == expected[2], (n_threads, block_rows)
        assert numbers[0] == expected[0], (n_threads, block_rows)
