"""MLKR (metricfit.losses.mlkr, metricfit.learners.mlkr): the loss against the paper's
leave-one-out regression point by point, the hand-derived gradient against central
differences, blocks, and fits."""

import numpy as np
import pytest
from _reference import central_differences, relative_error
from sklearn.exceptions import NotFittedError

from metricfit.learners import MLKR
from metricfit.losses import mlkr


def loss_ref(A, X, y):
    """eqs. 2-3 point by point: yhat_i = sum_{j != i} y_j k_ij / sum_{j != i} k_ij."""
    Z = X @ A.T
    J = 0.0
    for i in range(len(X)):
        k = np.array([np.exp(-np.sum((Z[i] - Z[j]) ** 2)) if j != i else 0.0
                      for j in range(len(X))])
        J += (k @ y / k.sum() - y[i]) ** 2
    return J


def cost_grad_embedded_ref(Z, y):
    """NumPy twin of the kernel (dense, every entry): J and dJ/dZ = 2 (diag(r + c) Z - W Z -
    W^T Z) with w_ij = -2 (yhat_i - y_i) p_ij (y_j - yhat_i)."""
    D = np.sum((Z[:, None] - Z[None]) ** 2, axis=2)
    np.fill_diagonal(D, np.inf)
    E = np.exp(D.min(axis=1, keepdims=True) - D)
    P = E / E.sum(axis=1, keepdims=True)
    y_hat = P @ y
    W = -2 * (y_hat - y)[:, None] * P * (y[None, :] - y_hat[:, None])
    r, c = W.sum(axis=1), W.sum(axis=0)
    return np.sum((y_hat - y) ** 2), 2 * ((r + c)[:, None] * Z - W @ Z - W.T @ Z)


@pytest.mark.parametrize("scale", [0.3, 1.0, 8.0])
def test_kernel_matches_its_dense_numpy_twin(scale):
    rng = np.random.default_rng(9)
    Z, y = scale * rng.normal(size=(60, 3)), rng.normal(size=60)
    J, dZ = mlkr.cost_grad_embedded(Z, y, block_rows=11)
    J_ref, dZ_ref = cost_grad_embedded_ref(Z, y)
    np.testing.assert_allclose(J, J_ref, rtol=1e-12)
    np.testing.assert_allclose(dZ, dZ_ref, rtol=1e-10, atol=1e-12 * np.abs(dZ_ref).max())
    J32, dZ32 = mlkr.cost_grad_embedded(Z.astype(np.float32), y)
    np.testing.assert_allclose(J32, J_ref, rtol=1e-4)
    np.testing.assert_allclose(dZ32, dZ_ref, rtol=1e-3, atol=1e-3 * np.abs(dZ_ref).max())


@pytest.mark.parametrize("share", [0.0, 2.0])
def test_scatter_and_gemm_paths_agree(monkeypatch, share):
    import metricfit.losses.mlkr as module

    rng = np.random.default_rng(10)
    Z, y = 2.0 * rng.normal(size=(50, 4)), rng.normal(size=50)
    J_ref, dZ_ref = cost_grad_embedded_ref(Z, y)
    monkeypatch.setattr(module, "SPARSE_SHARE", share)  # 0: always GEMMs, 2: always scatter
    J, dZ = mlkr.cost_grad_embedded(Z, y, block_rows=13)
    np.testing.assert_allclose(J, J_ref, rtol=1e-12)
    np.testing.assert_allclose(dZ, dZ_ref, rtol=1e-10, atol=1e-12 * np.abs(dZ_ref).max())


def _mixed_units(monkeypatch):
    """Points whose units of 8 rows are dense (a tight cluster) or sparse (spread far), and a
    spy on the units' choices."""
    monkeypatch.setattr(mlkr, "UNIT_ROWS", 8)
    rng = np.random.default_rng(13)
    X = np.vstack([0.3 * rng.normal(size=(40, 4)), 9.0 * rng.normal(size=(40, 4))])
    choices, block_weights = [], mlkr._block_weights

    def spy(*args):
        dense, folded = block_weights(*args)
        choices.append(dense)
        return dense, folded

    monkeypatch.setattr(mlkr, "_block_weights", spy)
    return X, rng.normal(size=80), choices


@pytest.mark.parametrize("fold", [True, False])  # W^T Z by the units, or after the block
@pytest.mark.parametrize("share", [0.0, 0.5, 2.0])  # all dense, mixed, all sparse
def test_both_algebras_of_the_linear_map_match_the_dense_formula(monkeypatch, share, fold):
    """``cost_grad`` with d < 2k (``2 A (X^T diag(r + c) X - M - M^T) + S^T X``) and with d >=
    2k (``(dJ/dZ)^T X``) give the dense formula's gradient, with every unit dense, every unit
    scattered, and a mix of both in one block."""
    from metricfit.losses import nca

    X, y, choices = _mixed_units(monkeypatch)
    monkeypatch.setattr(mlkr, "SPARSE_SHARE", share)
    if not fold:
        monkeypatch.setattr(nca, "FOLD_ENTRIES", 0)
    rng = np.random.default_rng(14)
    for A in (rng.normal(size=(3, 4)), rng.normal(size=(2, 4))):  # d < 2k, d >= 2k
        J_ref, dZ_ref = cost_grad_embedded_ref(X @ A.T, y)
        G_ref = dZ_ref.T @ X
        choices.clear()
        J, G = mlkr.cost_grad(A, X, y, block_rows=40)
        np.testing.assert_allclose(J, J_ref, rtol=1e-12)
        np.testing.assert_allclose(G, G_ref, rtol=1e-9, atol=1e-11 * np.abs(G_ref).max())
        units = np.concatenate(choices)
        assert units.size == 10
        assert units.all() if share == 0.0 else (not units.any() if share == 2.0 else
                                                 0 < units.sum() < units.size)


def problem(n=40, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=n), 0.5 * rng.normal(size=(3, d))


def test_cost_matches_the_paper_and_gradient_central_differences():
    X, y, A = problem()
    J, G = mlkr.cost_grad(A, X, y, block_rows=7)
    assert np.isclose(J, loss_ref(A, X, y), rtol=1e-12)
    num = central_differences(lambda B: mlkr.cost_grad(B, X, y)[0], A)
    assert relative_error(G, num, J) < 1e-7


def test_blocks_and_float32():
    X, y, A = problem(n=70, seed=1)
    J1, G1 = mlkr.cost_grad(A, X, y)
    J2, G2 = mlkr.cost_grad(A, X, y, block_rows=9)
    np.testing.assert_allclose(J1, J2, rtol=1e-12)
    np.testing.assert_allclose(G1, G2, rtol=1e-10, atol=1e-12)
    J3, G3 = mlkr.cost_grad(A.astype(np.float32), X.astype(np.float32), y.astype(np.float32))
    assert G3.dtype == np.float32
    np.testing.assert_allclose(J3, J1, rtol=1e-4)
    np.testing.assert_allclose(G3, G1, rtol=1e-3, atol=1e-3 * np.abs(G1).max())


def test_far_points_do_not_underflow_into_nan():
    X, y, A = problem(n=20, seed=2)
    J, G = mlkr.cost_grad(30 * A, X, y)  # kernels of all but the nearest underflow to 0
    assert np.isfinite(J) and np.isfinite(G).all()


def test_fit_finds_the_relevant_feature():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 4))
    y = np.sin(2 * X[:, 1])
    est = MLKR().fit(X, y)
    M = est.get_mahalanobis_matrix()
    assert M[1, 1] > 10 * np.delete(np.diag(M), 1).max()
    assert est.objective_ < mlkr.cost_grad(np.eye(4), X, y)[0]
    with pytest.raises(NotFittedError, match="calibrate_threshold"):
        est.predict(X[:4].reshape(2, 2, 4))  # real targets: no threshold_ from fit
    est.calibrate_threshold(X[:8].reshape(4, 2, 4), [1, -1, 1, -1])
    assert est.predict(X[:4].reshape(2, 2, 4)).shape == (2,)
    est32 = MLKR(n_components=2).fit(X.astype(np.float32), y)
    assert est32.components_.dtype == np.float32 and est32.components_.shape == (2, 4)


def test_bad_targets_are_named():
    X = np.zeros((5, 2))
    with pytest.raises(ValueError, match="y must be 1-D with one real target per sample"):
        MLKR().fit(X, np.zeros(4))
    with pytest.raises(ValueError, match="y contains NaN"):
        MLKR().fit(X, [0, 1, np.nan, 2, 3])
    with pytest.raises(ValueError, match="y must hold real targets"):
        MLKR().fit(X, list("abcde"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_no_subnormal_weight_reaches_the_products(dtype):
    """Points spread so far that many kernel entries lie under the dtype's cutoff (their exp
    would be subnormal, which slows the GEMMs many times): no weight is subnormal, and the
    cost and gradient stay those of the dense formula."""
    from metricfit.losses._mlkr_kernels import regression_weights
    from metricfit.losses._nca_kernels import shifted_logits

    rng = np.random.default_rng(11)
    Z, y = 6.0 * rng.normal(size=(60, 4)), rng.normal(size=60)
    Zd = Z.astype(dtype)
    G = Zd[:20] @ Zd.T  # one unit's Gram rows, through the unit's steps
    r, squares = np.empty(20), np.empty(20)
    sq_norms = np.einsum("ij,ij->i", Zd, Zd).astype(np.float64)
    tiny = np.finfo(dtype).tiny
    shifted_logits(G, sq_norms, 0, mlkr.CUTOFF[np.dtype(dtype)])
    with np.errstate(under="ignore"):
        np.exp(G, out=G)
    assert not ((G != 0) & (np.abs(G) < tiny)).any()  # no subnormal kernel entry
    regression_weights(G, y, 0, np.ones((1, 60), dtype=dtype), float(tiny), r, squares)
    assert not ((G != 0) & (np.abs(G) < tiny)).any()
    J, dZ = mlkr.cost_grad_embedded(Zd, y)
    J_ref, dZ_ref = cost_grad_embedded_ref(Z, y)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(J, J_ref, rtol=tol)
    np.testing.assert_allclose(dZ, dZ_ref, rtol=tol, atol=tol * np.abs(dZ_ref).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_same_numbers_on_any_thread_count(dtype, monkeypatch):
    """The kernel's rows run on the package's threads in fixed units of UNIT_ROWS: J and dJ/dZ
    are the same bits on 1, 2 and 3 threads (blocks of 300 rows: three units, the last
    partial; and the GEMM path as well as the scatter path), BLAS held on one thread (its
    GEMMs round differently on several, as everywhere in the package)."""
    from metricfit import threads
    from metricfit.parallel import blas_threads

    rng = np.random.default_rng(12)
    Z, y = (0.4 * rng.normal(size=(700, 5))).astype(dtype), rng.normal(size=700)
    assert 300 > 2 * mlkr.UNIT_ROWS
    for share in (0.0, 2.0):  # 0: always the GEMM path
        results = []
        monkeypatch.setattr(mlkr, "SPARSE_SHARE", share)  # 2: always the scatter path
        for n in (1, 2, 3):
            with threads(n), blas_threads(1):
                results.append(mlkr.cost_grad_embedded(Z, y, block_rows=300))
        for J, dZ in results[1:]:
            assert J == results[0][0]
            np.testing.assert_array_equal(dZ, results[0][1])
    X, y, _ = _mixed_units(monkeypatch)  # the linear map's form (d < 2k), mixed units
    X = X.astype(dtype)
    monkeypatch.setattr(mlkr, "SPARSE_SHARE", 0.5)
    A = np.random.default_rng(15).normal(size=(3, 4)).astype(dtype)
    results = []
    for n in (1, 2, 3):
        with threads(n), blas_threads(1):
            results.append(mlkr.cost_grad(A, X, y, block_rows=50))
    for J, G in results[1:]:
        assert J == results[0][0]
        np.testing.assert_array_equal(G, results[0][1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lane_dot_sums_in_its_stated_order(dtype):
    """``lane_dot``: entry j on accumulator j mod 16, the accumulators first to last, then the
    entries left over; the same bits as that order written out in Python."""
    from metricfit.losses._mlkr_kernels import DOT_LANES, lane_dot

    rng = np.random.default_rng(16)
    for n in (0, 5, 16, 37, 100):
        row = (rng.normal(size=n) * 10.0 ** rng.integers(-6, 6, n)).astype(dtype)
        y = rng.normal(size=n) * 10.0 ** rng.integers(-6, 6, n)
        stop = n - n % DOT_LANES
        lanes = [0.0] * DOT_LANES
        for j in range(stop):
            lanes[j % DOT_LANES] += float(row[j]) * float(y[j])
        want = 0.0
        for value in lanes:
            want += value
        for j in range(stop, n):
            want += float(row[j]) * float(y[j])
        assert lane_dot(row, y, np.empty(DOT_LANES)) == want


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_fit_is_the_same_on_any_thread_count(dtype):
    """``metricfit.threads`` sets BLAS's count too; every product of an evaluation runs on one
    BLAS thread (inside the units, or under ``single_blas``), so a fit gives the same bits
    on 1, 2 and 3 threads (before, its dense GEMMs ran on BLAS's threads: on digits-30 the
    float32 fit took 129 iterations on one thread and 124 on two; this test failed there)."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    from metricfit import threads

    X, y = load_digits(return_X_y=True)
    X = PCA(30, random_state=0).fit_transform(X[:1000] / 16.0).astype(dtype)
    y = y[:1000].astype(float)
    fits = []
    for n in (1, 2, 3):
        with threads(n):
            est = MLKR(max_iter=5).fit(X, y)
        fits.append((est.n_iter_, est.components_.tobytes()))
    assert fits[1] == fits[0] and fits[2] == fits[0]
