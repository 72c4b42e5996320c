"""PLDA's EM iteration on several threads (issue 27): LAPACK without the GIL (the Cholesky
inverse, the generalised eigenproblem) against SciPy's f2py wrappers and ``eigh`` (the same
routines, the same bits), the factorisations side by side on 1, 2 and 3 threads, and the
M-step's numba kernels against the NumPy expressions they replace (bit for bit)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal
from scipy import linalg
from scipy.linalg import lapack

import metricfit
from metricfit.backend import _nogil_lapack as nogil
from metricfit.backend import plda as core
from metricfit.backend import plda_em
from metricfit.backend._symmetric_kernels import PANEL, add_group_sums, symmetric_mean
from metricfit.parallel import blas_threads


def _spd(rng, d, spread=100.0):
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    S = (Q * rng.uniform(1.0, spread, size=d)) @ Q.T
    return 0.5 * (S + S.T)


@pytest.fixture
def f2py_only(monkeypatch):
    """The fallback: SciPy's f2py wrappers (GIL held), as where the Cython pointers are
    missing."""
    monkeypatch.setattr(nogil, "_ROUTINES", dict.fromkeys(nogil._SIGNATURES))


@pytest.mark.parametrize("d", [1, 2, 7, 64, 130])
def test_cholesky_inverse_is_scipys_potrf_and_potri_bit_for_bit(d):
    assert nogil.gil_free()  # SciPy's Cython LAPACK is found on the supported versions
    S = _spd(np.random.default_rng(d), d)
    F, logdet, info = nogil.cholesky_inverse(S)
    factor, info_f = lapack.dpotrf(S, lower=1, clean=0)
    inverse, info_i = lapack.dpotri(factor, lower=1)
    assert info == info_f == info_i == 0
    assert F.flags.f_contiguous and F.dtype == np.float64
    assert_array_equal(np.tril(F), np.tril(inverse))
    assert logdet == 2.0 * float(np.log(np.diagonal(factor)).sum())
    assert logdet == pytest.approx(np.linalg.slogdet(S)[1], rel=1e-12)


def test_cholesky_inverse_leaves_its_argument_alone():
    S = _spd(np.random.default_rng(0), 5)
    before = S.copy()
    nogil.cholesky_inverse(S)
    assert_array_equal(S, before)


@pytest.mark.parametrize("S", [np.diag([1.0, -1.0]), np.zeros((3, 3)),
                               np.array([[1.0, 2.0], [2.0, 1.0]])])
def test_cholesky_inverse_reports_a_matrix_that_is_not_positive_definite(S):
    assert nogil.cholesky_inverse(S)[2] > 0


def test_the_f2py_fallback_gives_the_same_bits(f2py_only):
    assert not nogil.gil_free()
    S = _spd(np.random.default_rng(1), 40)
    F, logdet, info = nogil.cholesky_inverse(S)
    nogil._ROUTINES.clear()  # look the pointers up again
    G, logdet_g, info_g = nogil.cholesky_inverse(S)
    assert nogil.gil_free() and info == info_g == 0
    assert_array_equal(np.tril(F), np.tril(G))
    assert logdet == logdet_g
    assert nogil.cholesky_inverse(np.diag([1.0, -1.0]))[2] > 0


@pytest.mark.parametrize("d", [1, 2, 9, 70])
def test_generalized_eigh_is_scipys_eigh_bit_for_bit(d):
    rng = np.random.default_rng(d)
    A = rng.normal(size=(d, d))
    A = A + A.T
    B = _spd(rng, d)
    w, V = nogil.generalized_eigh(A, B)
    w0, V0 = linalg.eigh(A, B)
    assert_array_equal(w, w0)
    assert_array_equal(V, V0)
    assert np.all(np.diff(w) >= 0)


def test_generalized_eigh_fails_as_scipy_does():
    with pytest.raises(np.linalg.LinAlgError, match="leading minor of order 2 of B"):
        nogil.generalized_eigh(np.eye(2), np.diag([1.0, -1.0]))
    with pytest.raises(ValueError, match="infs or NaNs"):
        nogil.generalized_eigh(np.array([[np.nan]]), np.eye(1))


def test_generalized_eigh_fallback_gives_the_same_bits(f2py_only):
    assert not nogil.gil_free("dsygvd")
    rng = np.random.default_rng(3)
    A, B = _spd(rng, 12), _spd(rng, 12)
    w, V = nogil.generalized_eigh(A, B)
    nogil._ROUTINES.clear()
    w1, V1 = nogil.generalized_eigh(A, B)
    assert nogil.gil_free()
    assert_array_equal(w, w1)
    assert_array_equal(V, V1)
    with pytest.raises(np.linalg.LinAlgError, match="leading minor"):
        nogil.generalized_eigh(np.eye(2), np.diag([1.0, -1.0]))


def _mixed_counts(d=6, seed=0):
    """Two batched groups (40 classes of 3 and 30 of 5) and 20 classes of other counts."""
    rng = np.random.default_rng(seed)
    counts = np.r_[np.full(40, 3), np.full(30, 5), rng.integers(2, 9, size=20)]
    codes = rng.permutation(np.repeat(np.arange(counts.size), counts))
    X = 2.0 * rng.normal(size=(counts.size, d))[codes] + rng.normal(size=(codes.size, d))
    return core.class_statistics(X, codes)


@pytest.fixture
def small_together(monkeypatch):
    """Side by side from d = 1 (the default starts at 128)."""
    monkeypatch.setattr(plda_em, "TOGETHER_MIN_DIM", 1)


@pytest.mark.parametrize("within", [False, True])
def test_factorisations_are_bit_for_bit_on_1_2_3_threads(small_together, within):
    counts, means, _, scatter = _mixed_counts()
    stats = core._em_statistics(counts, means, scatter, min_group=10)[0]
    assert len(stats.groups) == 2
    rng = np.random.default_rng(5)
    B, W = _spd(rng, 6), _spd(rng, 6)
    runs = []
    for threads in (1, 2, 3):
        with metricfit.threads(threads), blas_threads(1):
            assert plda_em.factorised_together(3, 6) == (threads > 1)
            runs.append(plda_em.factorisations(np, B, W, stats, within=within))
    for n, _, M in stats.groups:  # the serial definition, group by group
        with blas_threads(1):
            S_inv, logdet = plda_em.inverse_and_logdet(np, B + W / n, stats.eye)
        expected = (S_inv, logdet, np.sum(S_inv * M))
        for run in runs:
            got = run[[g[0] for g in stats.groups].index(n)]
            assert_array_equal(got[0], expected[0])
            assert got[1:3] == expected[1:] and got[3] is None
    assert all(len(run) == 2 + within for run in runs)
    if within:
        with blas_threads(1):
            W_inv, logdet = plda_em.inverse_and_logdet(np, W, stats.eye)
        for run in runs:
            assert_array_equal(run[-1][0], W_inv)
            assert run[-1][1:] == (logdet, np.sum(W_inv * scatter))


def test_a_groups_task_makes_its_products_as_the_serial_sums_would(small_together):
    counts, means, _, scatter = _mixed_counts()
    stats = core._em_statistics(counts, means, scatter, min_group=10)[0]
    rng = np.random.default_rng(6)
    B, W = _spd(rng, 6), _spd(rng, 6)
    with metricfit.threads(2), blas_threads(1):
        factors = plda_em.factorisations(np, B, W, stats, within=True, products=True,
                                         also=lambda: "basis")
        assert factors[-1] == "basis" and len(factors[-2]) == 3  # W's, then also's
        for (_, _, M), (S_inv, _, _, products) in zip(stats.groups, factors, strict=False):
            A = B @ S_inv
            for got, expected in zip(products, (A @ W, A @ M, (A @ M) @ A.T), strict=True):
                assert_array_equal(got, expected)
        with_products = plda_em.grouped_terms(np, B, W, stats, True, factors[:2])
        serial = plda_em.grouped_terms(np, B, W, stats, True)
    for got, expected in zip(with_products, serial, strict=True):
        assert_array_equal(got, expected)


def test_factorisations_stay_serial_below_the_size_that_pays():
    with metricfit.threads(4):
        assert not plda_em.factorised_together(3, plda_em.TOGETHER_MIN_DIM - 1)
        assert plda_em.factorised_together(3, plda_em.TOGETHER_MIN_DIM)
        assert not plda_em.factorised_together(1, 512)
    with metricfit.threads(1):
        assert not plda_em.factorised_together(3, 512)


def test_em_without_the_gil_free_lapack_gives_the_same_bits(small_together, monkeypatch):
    counts, means, _, scatter = _mixed_counts(d=8, seed=2)

    def fit():
        history = []
        with metricfit.threads(2), blas_threads(1):
            B, W = core.fit_two_covariance(counts, means, scatter, 6, min_group=10,
                                           callback=lambda it, B, W, ll: history.append(ll))
        return B, W, history

    B, W, history = fit()
    monkeypatch.setattr(nogil, "_ROUTINES", dict.fromkeys(nogil._SIGNATURES))
    B0, W0, history0 = fit()
    assert_array_equal(B, B0)
    assert_array_equal(W, W0)
    assert history == history0


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16), d=st.integers(1, 70), first=st.booleans())
def test_group_sums_kernel_equals_its_numpy_twin(seed, d, first):
    rng = np.random.default_rng(seed)
    AW, P, AMA, M, b0, w0 = (rng.normal(size=(d, d)) for _ in range(6))
    n, c = float(rng.integers(2, 30)), int(rng.integers(1, 500))
    between, within = b0.copy(), w0.copy()
    add_group_sums(AW, P, AMA, M, n, float(c), float(n * c), between, within, first)
    Cn = AW / n  # plda_em.grouped_terms' NumPy expressions
    b = c * Cn + AMA
    w = (n * c) * Cn + n * (M - P - P.T + AMA)
    assert_array_equal(between, b if first else b0 + b)
    assert_array_equal(within, w if first else w0 + w)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16), d=st.integers(1, 3 * PANEL + 3), with_extra=st.booleans())
def test_symmetric_mean_kernel_equals_its_numpy_twin(seed, d, with_extra):
    rng = np.random.default_rng(seed)
    S, extra = rng.normal(size=(d, d)), rng.normal(size=(d, d))
    scale = float(rng.uniform(0.5, 1e4))
    out = np.full((d, d), np.nan)
    symmetric_mean(S, extra if with_extra else np.empty((0, 0)), scale, out)
    T = S + extra if with_extra else S
    assert_array_equal(out, 0.5 * (T + T.T) / scale)
    assert_array_equal(out, out.T)


def test_symmetric_means_are_the_m_steps_expressions():
    rng = np.random.default_rng(4)
    between, scatter, within = (rng.normal(size=(9, 9)) for _ in range(3))
    B, W = plda_em.symmetric_means(between, 17, scatter, within, 123.0)
    assert_array_equal(B, core._symmetric(between) / 17)
    assert_array_equal(W, core._symmetric(scatter + within) / 123.0)


def test_the_lookup_leaves_ctypes_pythonapi_as_it_was(monkeypatch):
    import ctypes

    shared = ctypes.pythonapi.PyCapsule_GetPointer
    before = (shared.restype, shared.argtypes)
    monkeypatch.setattr(nogil, "_ROUTINES", {})
    assert nogil.gil_free()  # looked up again
    assert (shared.restype, shared.argtypes) == before
