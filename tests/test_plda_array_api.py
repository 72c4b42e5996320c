"""PLDA on the array API (issue 30): torch and array_api_strict points give the NumPy fit and
scores (1e-6 relative in float64, 1e-4 in float32), the scores come back in the input's
namespace; GPU tests skip without CUDA."""

import numpy as np
import pytest
from _array_backends import array_backends, cuda_torch
from numpy.testing import assert_allclose

import metricfit
from metricfit import PLDA
from metricfit._array_api import to_numpy

pytest.importorskip("array_api_compat")
TOL = {np.float64: 1e-6, np.float32: 1e-4}


def _data(seed=0, d=5):
    """Identities of 4 samples (a batched group) and of 2, 3 and 5 samples (small groups)."""
    rng = np.random.default_rng(seed)
    counts = np.r_[np.full(60, 4), np.full(3, 2), np.full(4, 3), np.full(2, 5)]
    labels = rng.permutation(np.repeat(np.arange(counts.size), counts))
    X = 3 * rng.normal(size=(counts.size, d))[labels] + rng.normal(size=(labels.size, d))
    pairs = np.stack([X[:40], X[20:60]], axis=1)
    return X, labels, pairs


def _check_like_numpy(convert, dtype, X, labels, pairs):
    ref = PLDA().fit(X.astype(dtype), labels)
    with metricfit.array_api_dispatch():
        est = PLDA().fit(convert(X.astype(dtype)), labels)
        scores = est.pair_score(convert(pairs.astype(dtype)))
        decision = est.decision_function(convert(pairs.astype(dtype)))
    tol = TOL[dtype]
    assert type(scores) is type(convert(pairs))  # the input's namespace
    for name in ("mean_", "between_covariance_", "within_covariance_", "psi_"):
        want = getattr(ref, name)
        assert_allclose(getattr(est, name), want, rtol=tol, atol=tol * np.abs(want).max())
    assert_allclose(est.log_likelihood_, ref.log_likelihood_, rtol=tol)
    want = ref.pair_score(pairs.astype(dtype))
    assert_allclose(to_numpy(scores), want, rtol=tol, atol=tol * np.abs(want).max())
    assert_allclose(to_numpy(decision), to_numpy(scores) - est.threshold_)
    assert est.n_identities_ == ref.n_identities_ and est.threshold_ == 0.0
    return est


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("convert", array_backends())
def test_fit_and_scores_on_the_array_api_equal_numpy(convert, dtype):
    _check_like_numpy(convert, dtype, *_data())


def test_without_dispatch_a_cpu_tensor_takes_the_numpy_path():
    torch = pytest.importorskip("torch")
    X, labels, pairs = _data()
    est = PLDA().fit(torch.asarray(X), labels)
    assert isinstance(est.pair_score(torch.asarray(pairs)), np.ndarray)
    assert_allclose(est.pair_score(pairs), PLDA().fit(X, labels).pair_score(pairs))


def test_device_fit_errors_name_the_argument():
    torch = pytest.importorskip("torch")
    X, labels, pairs = _data()
    with metricfit.array_api_dispatch():
        with pytest.raises(ValueError, match="X contains NaN"):
            PLDA().fit(torch.asarray(np.where(np.arange(X.size).reshape(X.shape) == 3,
                                              np.nan, X)), labels)
        with pytest.raises(ValueError, match="labels"):
            PLDA().fit(torch.asarray(X), labels[:-1])
        est = PLDA().fit(torch.asarray(X), labels)
        with pytest.raises(ValueError, match=r"pairs must have shape \(n_pairs, 2, 5\)"):
            est.pair_score(torch.asarray(pairs[:, :, :3]))


def test_simplified_plda_and_pairs_fall_back_to_the_host():
    torch = pytest.importorskip("torch")
    X, labels, pairs = _data()
    y = np.r_[np.ones(20), -np.ones(20)]
    with metricfit.array_api_dispatch():
        simplified = PLDA(n_components=2).fit(torch.asarray(X), labels)
        on_pairs = PLDA().fit(torch.asarray(pairs), y)
    assert_allclose(simplified.psi_, PLDA(n_components=2).fit(X, labels).psi_)
    assert_allclose(on_pairs.psi_, PLDA().fit(pairs, y).psi_)


def _cuda():
    torch = cuda_torch()
    if torch is None:
        pytest.skip("no CUDA device")
    return torch


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fit_and_scores_on_a_cuda_device(dtype):
    torch = _cuda()
    X, labels, pairs = _data()
    est = _check_like_numpy(lambda a: torch.asarray(a, device="cuda"), dtype, X, labels, pairs)
    with metricfit.array_api_dispatch():
        scores = est.pair_score(torch.asarray(pairs.astype(dtype), device="cuda"))
    assert scores.device.type == "cuda"


@pytest.mark.parametrize("convert", array_backends())
def test_tol_stops_the_device_em_where_numpy_stops(convert):
    X, labels, _ = _data(1)
    ref = PLDA(n_iter=300, tol=1e-4).fit(X, labels)
    with metricfit.array_api_dispatch():
        est = PLDA(n_iter=300, tol=1e-4).fit(convert(X), labels)
    assert est.n_iter_ == ref.n_iter_ < 300
    assert_allclose(est.log_likelihood_, ref.log_likelihood_, rtol=1e-9)
    assert_allclose(est.psi_, ref.psi_, rtol=1e-6)
