"""Thread-count independence (issue 27) of PLDA's statistics and EM and NCA's cost and gradient,
bit for bit at 1, 2 and 3 threads; the batched EM against the per-class EM it replaced; the
class-statistics kernels against plain-NumPy twins.

BLAS rounds differently on different thread counts (OpenBLAS splits its GEMMs by thread), so
the products stay on one BLAS thread here: what is tested is metricfit's own work split (fixed
units, fixed reduction order)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import linalg, sparse

import metricfit
from metricfit import PLDA
from metricfit.backend import class_stats, plda_em
from metricfit.backend import plda as core
from metricfit.losses import nca
from metricfit.parallel import blas_threads

THREADS = (1, 2, 3)


def _mixed_counts_data(seed=0, d=6, dtype=np.float64):
    """Identities of 2..6 samples and a large group of 3 (batched and per-class paths)."""
    rng = np.random.default_rng(seed)
    counts = np.r_[np.full(40, 3), rng.integers(2, 7, size=25)]
    codes = rng.permutation(np.repeat(np.arange(counts.size), counts))
    centres = 2.0 * rng.normal(size=(counts.size, d))
    X = centres[codes] + rng.normal(size=(codes.size, d))
    return X.astype(dtype), codes


def _on(threads, fn):
    with metricfit.threads(threads), blas_threads(1):
        return fn()


@pytest.fixture
def small_units(monkeypatch):
    """Work units small enough that the test data spans several of them."""
    monkeypatch.setattr(class_stats, "CLASS_BLOCK", 7)
    monkeypatch.setattr(class_stats, "SCATTER_ROWS", 16)
    monkeypatch.setattr(nca, "UNIT_ROWS", 5)
    monkeypatch.setattr(nca, "UNIT_COLUMNS", 24)
    monkeypatch.setattr(plda_em, "TOGETHER_MIN_DIM", 1)  # EM's factorisations side by side


# ------------------------------------------------------------------- statistics (twins)


def test_class_sums_equal_the_sparse_one_hot_product_bit_for_bit(small_units):
    for dtype in (np.float64, np.float32):
        X, codes = _mixed_counts_data(dtype=dtype)
        n, C = codes.size, codes.max() + 1
        onehot = sparse.csr_array((np.ones(n, dtype=dtype), (codes, np.arange(n))), shape=(C, n))
        twin = np.asarray(onehot @ X, dtype=np.float64) / np.bincount(codes)[:, None]
        for t in THREADS:
            counts, means = _on(t, lambda X=X, codes=codes: class_stats.class_means(X, codes))
            assert_array_equal(means, twin)
            assert_array_equal(counts, np.bincount(codes))


def test_offset_scatter_is_the_sum_of_block_gemms_in_order(small_units):
    X, codes = _mixed_counts_data()
    counts, means = class_stats.class_means(X, codes)
    offsets = X - means[codes]
    twin = np.zeros((X.shape[1],) * 2)
    for start in range(0, X.shape[0], 16):
        twin += offsets[start:start + 16].T @ offsets[start:start + 16]
    for t in THREADS:
        assert_array_equal(_on(t, lambda: class_stats.offset_scatter(X, codes, means)), twin)
    assert_allclose(twin, offsets.T @ offsets, rtol=1e-12)


def test_counting_order_is_a_stable_sort():
    from metricfit.backend._segment_kernels import counting_order

    codes = np.random.default_rng(1).integers(0, 9, size=200)
    bounds = np.r_[0, np.cumsum(np.bincount(codes, minlength=9))].astype(np.int64)
    assert_array_equal(counting_order(codes, bounds), np.argsort(codes, kind="stable"))


# ----------------------------------------------------------------------------- PLDA EM


def _per_class_em(counts, means, scatter, n_iter):
    """The per-class EM of metricfit <= 0.x (every class projected in the basis each
    iteration): the twin of the batched EM."""
    d = means.shape[1]
    B, W = np.eye(d), np.eye(d)
    N, C = counts.sum(), counts.size
    for _ in range(n_iter):
        psi, vecs = linalg.eigh(B, W)
        order = np.argsort(psi)[::-1]
        T, psi = vecs[:, order].T, np.maximum(psi[order], 0.0)
        Tinv = np.linalg.inv(T)
        U = means @ T.T
        mixed = psi[None, :] / (1.0 + counts[:, None] * psi[None, :])
        Wm = mixed * counts[:, None] * U
        R = U - Wm
        between = np.diag(mixed.sum(axis=0)) + Wm.T @ Wm
        within = np.diag(counts @ mixed) + (R * counts[:, None]).T @ R
        B = Tinv @ between @ Tinv.T
        B, W = 0.5 * (B + B.T) / C, scatter + Tinv @ within @ Tinv.T
        W = 0.5 * (W + W.T) / N
    return B, W


@pytest.mark.parametrize("min_group", [None, 1, 10 ** 9])
def test_batched_em_equals_the_per_class_em(min_group):
    X, codes = _mixed_counts_data(d=6)
    counts, means, _, scatter = core.class_statistics(X, codes)
    B0, W0 = _per_class_em(counts, means, scatter, 10)
    history = []
    B, W = core.fit_two_covariance(counts, means, scatter, 10, min_group=min_group,
                                   callback=lambda it, B, W, ll: history.append(ll))
    assert_allclose(B, B0, rtol=1e-10, atol=1e-12 * np.abs(B0).max())
    assert_allclose(W, W0, rtol=1e-10, atol=1e-12 * np.abs(W0).max())
    assert np.all(np.diff(history) >= -1e-9 * abs(history[-1]))  # EM
    assert_allclose(history[-1], core.log_likelihood(B, W, counts, means, scatter), rtol=1e-12)


def test_batched_likelihood_equals_the_joint_gaussian_density():
    """Eq. (2) from the groups equals the sum of the class means' Gaussian log-densities plus
    the within part, computed directly."""
    from scipy.stats import multivariate_normal as mvn

    X, codes = _mixed_counts_data(d=4)
    counts, means, _, scatter = core.class_statistics(X, codes)
    rng = np.random.default_rng(3)
    A = rng.normal(size=(4, 4))
    B, W = A @ A.T + np.eye(4), np.diag([1.0, 2.0, 0.5, 1.5])
    d, N, C = 4, counts.sum(), counts.size
    direct = -0.5 * ((N - C) * (np.linalg.slogdet(W)[1] + d * np.log(2 * np.pi))
                     + np.trace(np.linalg.solve(W, scatter)))
    direct += sum(mvn(np.zeros(d), B + W / n).logpdf(m) for n, m in zip(counts, means, strict=True))
    for min_group in (1, 10 ** 9):
        stats = core._em_statistics(counts, means, scatter, min_group)
        assert_allclose(core._em_pass(B, W, *stats, terms=False)[2], direct, rtol=1e-12)


@pytest.mark.parametrize("n_components", [None, 2])
def test_plda_fit_is_bit_for_bit_on_1_2_3_threads(small_units, n_components):
    X, codes = _mixed_counts_data(d=6)
    fits = [_on(t, lambda: PLDA(n_components=n_components).fit(X, codes)) for t in THREADS]
    for fit in fits[1:]:
        for name in ("mean_", "between_covariance_", "within_covariance_", "components_",
                     "psi_"):
            assert_array_equal(getattr(fit, name), getattr(fits[0], name))
        assert fit.log_likelihood_ == fits[0].log_likelihood_


# --------------------------------------------------------------------------------- NCA


def _nca_data(dtype):
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 6, size=150).astype(np.int64)
    X = (rng.normal(size=(6, 8))[codes] + rng.normal(size=(150, 8))).astype(dtype) / 3
    return X, codes


@pytest.mark.parametrize("fold", [True, False])  # W^T Z by the units, or by columns after
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", [3, 8])  # d >= 2k: through dJ/dZ; d < 2k: the 2 A (...) form
def test_nca_cost_and_gradient_are_bit_for_bit_on_1_2_3_threads(small_units, monkeypatch,
                                                                 dtype, k, fold):
    if not fold:
        monkeypatch.setattr(nca, "FOLD_ENTRIES", 0)
    X, codes = _nca_data(dtype)
    A = (np.random.default_rng(1).normal(size=(k, 8)) * 0.5).astype(dtype)
    runs = [_on(t, lambda: nca.cost_grad(A, X, codes, block_rows=40)) for t in THREADS]
    for J, G in runs[1:]:
        assert J == runs[0][0]
        assert_array_equal(G, runs[0][1])


def test_nca_transposed_product_by_units_equals_it_by_columns(small_units, monkeypatch):
    """``W^T Z`` made by the units while their rows are in cache (their parts added in unit
    order) or over each block afterwards (FOLD_ENTRIES 0): the same cost and gradient."""
    X, codes = _nca_data(np.float64)
    Z = X[:, :3] * 2.0
    folded = nca.cost_grad_embedded(Z, codes, block_rows=40)
    monkeypatch.setattr(nca, "FOLD_ENTRIES", 0)
    by_columns = nca.cost_grad_embedded(Z, codes, block_rows=40)
    assert folded[0] == by_columns[0]
    assert_allclose(folded[1], by_columns[1], rtol=1e-12, atol=1e-14)
    assert not np.array_equal(folded[1], np.zeros_like(Z))


def test_nca_column_sums_and_weights_match_numpy_twins(small_units):
    X, codes = _nca_data(np.float64)
    Z = X[:, :5]
    n = Z.shape[0]
    p, r, c = np.empty(n), np.empty(n), np.zeros(n)
    Y = np.random.default_rng(2).normal(size=(n, 3))
    product = np.full((n, 3), np.nan)
    Ws = [W.copy() for _, _, W, _ in nca._weight_blocks(Z, codes, 40, p, r, c, Y, product)]
    W = np.concatenate(Ws)
    assert_allclose(product, W @ Y, rtol=1e-12, atol=1e-14)  # W Y's rows, with the weights
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)  # the twin: dense softmax over l != i
    E = np.exp(-D)
    np.fill_diagonal(E, 0)
    P = E / E.sum(axis=1, keepdims=True)
    same = (codes[:, None] == codes[None]) & ~np.eye(n, dtype=bool)
    p_twin = (P * same).sum(axis=1)
    assert_allclose(p, p_twin, rtol=1e-12)
    assert_allclose(W, P * (same - p_twin[:, None]), atol=1e-15)
    assert_allclose(r, W.sum(axis=1), atol=1e-14)
    twin = np.zeros(n)  # per unit of rows (5) in each block (40), row by row; units in order
    for start in range(0, n, 40):
        for first in range(start, min(start + 40, n), nca.UNIT_ROWS):
            unit_sums = np.zeros(n)
            for row in W[first:min(first + nca.UNIT_ROWS, start + 40, n)]:
                unit_sums += row
            twin += unit_sums
    assert_array_equal(c, twin)


def test_em_holds_blas_to_its_share_of_the_d3_products(monkeypatch):
    """The two-covariance EM asks BLAS for one thread per EM_MACS_PER_THREAD multiply-adds of
    a d x d x d product (4 at d = 256), never more than the package setting, and runs inside
    that limit."""
    with metricfit.threads(16):
        assert core._em_blas_threads(256) == 4
        assert core._em_blas_threads(64) == 1
        assert core._em_blas_threads(1024) == 16
    with metricfit.threads(2):
        assert core._em_blas_threads(256) == 2
    asked = []
    real = core.blas_threads

    def spy(n):
        asked.append(n)
        return real(n)

    monkeypatch.setattr(core, "blas_threads", spy)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), np.repeat(np.arange(12), 5)
    counts, means, _, scatter = core.class_statistics(X, y)
    with metricfit.threads(3):
        core.fit_two_covariance(counts, means, scatter, n_iter=2)
    assert asked[0] == 1  # d = 3: one thread
