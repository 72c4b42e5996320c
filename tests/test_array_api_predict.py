"""The classifier API of the linear learners and PLDA on array-API input (issue 30):
decision_function, predict, predict_proba, score and calibrate_threshold on array_api_strict
and torch CPU arrays give the NumPy answers (1e-6 float64, 1e-4 float32), decision_function /
predict / predict_proba in the input's namespace, score a Python float; NumPy input keeps its
path. The CUDA test runs only where CUDA is."""

import warnings

import numpy as np
import pytest
from scipy.special import expit

import metricfit
from metricfit import CSML, DDML, LDML, PLDA, TSML, Siamese
from metricfit._array_api import device_of, to_numpy

pytest.importorskip("array_api_compat")
from _array_backends import array_backends, cuda_torch

from metricfit.learners._xp import logistic_columns  # noqa: E402

RTOL = {np.float64: 1e-6, np.float32: 1e-4}


BACKENDS = array_backends()

LEARNERS = [
    pytest.param(TSML, {"n_components": 3, "lam": 0.1}, id="TSML"),
    pytest.param(CSML, {"n_components": 3, "lam": 0.1, "max_iter": 15}, id="CSML"),
    pytest.param(DDML, {"n_components": 3, "lam": 0.1}, id="DDML"),
    pytest.param(Siamese, {"n_components": 3, "loss": "triangular", "lam": 0.1},
                 id="Siamese-linear"),
    pytest.param(LDML, {"lam": 0.1}, id="LDML"),
    pytest.param(PLDA, {}, id="PLDA"),
]


def _pairs(n=200, d=6, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X1, X2 = rng.normal(size=(2, n, d))
    X2[: n // 2] = X1[: n // 2] + 0.5 * rng.normal(size=(n // 2, d))
    s = np.r_[np.ones(n // 2), -np.ones(n - n // 2)]
    return np.stack([X1, X2], axis=1).astype(dtype), s


def _fit(Est, params, dtype=np.float64, y=None):
    """A NumPy fit (the model is NumPy whatever the input; the device fits are
    tests/test_array_api_linear.py's) and its training pairs."""
    pairs, s = _pairs(dtype=dtype)
    if Est is PLDA:  # labelled points; identities of 4 samples
        rng = np.random.default_rng(1)
        labels = np.repeat(np.arange(60), 4)
        X = 3 * rng.normal(size=(60, 6))[labels] + rng.normal(size=(240, 6))
        return Est(**params).fit(X.astype(dtype), labels), pairs, s
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CSML: max_iter reached on purpose
        return Est(**params).fit(pairs, s if y is None else y), pairs, s


def _close(got, want, dtype):
    scale = max(np.abs(want).max(), 1e-30)
    assert np.abs(np.asarray(got, np.float64) - want).max() <= RTOL[dtype] * scale


def _clear(decision, dtype):
    """The pairs whose decision is not within rounding of 0 (their prediction cannot flip
    between two correct evaluations)."""
    return np.abs(decision) > 10 * RTOL[dtype] * max(np.abs(decision).max(), 1.0)


@pytest.mark.parametrize("convert", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("Est", "params"), LEARNERS)
def test_classifier_api_equals_numpy(convert, dtype, Est, params):
    est, pairs, s = _fit(Est, params, dtype)
    ref_decision = est.decision_function(pairs)
    ref_predict = est.predict(pairs)
    weights = np.linspace(0.5, 2.0, len(s))
    device_pairs = convert(pairs)
    with metricfit.array_api_dispatch():
        decision = est.decision_function(device_pairs)
        predicted = est.predict(device_pairs)
        accuracy = est.score(device_pairs, convert(s))
        weighted = est.score(device_pairs, convert(s), sample_weight=convert(weights))
        proba = est.predict_proba(device_pairs) if hasattr(est, "predict_proba") else None
    for out in (decision, predicted) + ((proba,) if proba is not None else ()):
        assert type(out) is type(device_pairs)  # the input's namespace
        assert device_of(out) == device_of(device_pairs)
    assert tuple(decision.shape) == (len(s),) and tuple(predicted.shape) == (len(s),)
    _close(to_numpy(decision), ref_decision, dtype)
    clear = _clear(ref_decision, dtype)
    assert clear.sum() >= len(s) - 2
    np.testing.assert_array_equal(to_numpy(predicted)[clear], ref_predict[clear])
    assert to_numpy(predicted).dtype == ref_predict.dtype
    for got, w in ((accuracy, None), (weighted, weights)):
        assert type(got) is float
        want = est.score(pairs, s, sample_weight=w)
        assert abs(got - want) <= np.sum(~clear) / len(s)
    if proba is not None:
        assert tuple(proba.shape) == (len(s), 2)
        _close(to_numpy(proba), est.predict_proba(pairs), dtype)


@pytest.mark.parametrize("convert", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("Est", "params"), LEARNERS)
def test_calibrate_threshold_equals_numpy(convert, dtype, Est, params):
    est, pairs, s = _fit(Est, params, dtype)
    y = (s > 0).astype(np.int64)  # {0, 1}: classes_ follows this coding
    for strategy in ("accuracy", "eer"):
        ref = est.calibrate_threshold(pairs, y, strategy=strategy)
        threshold, classes = ref.threshold_, ref.classes_.copy()
        with metricfit.array_api_dispatch():
            got = est.calibrate_threshold(convert(pairs), convert(y), strategy=strategy)
        assert got is est and type(est.threshold_) is float
        assert abs(est.threshold_ - threshold) <= 1e2 * RTOL[dtype] * max(1, abs(threshold))
        assert type(est.classes_) is np.ndarray  # the model stays on the host
        np.testing.assert_array_equal(est.classes_, classes)


@pytest.mark.parametrize("convert", BACKENDS)
@pytest.mark.parametrize("coding", ["pm1", "01", "bool"])
def test_predict_answers_in_the_fitted_label_coding(convert, coding):
    pairs, s = _pairs()
    y = {"pm1": s.astype(np.int64), "01": (s > 0).astype(np.int64), "bool": s > 0}[coding]
    est, _, _ = _fit(TSML, {"n_components": 3, "lam": 0.1}, y=y)
    ref = est.predict(pairs)
    with metricfit.array_api_dispatch():
        got = est.predict(convert(pairs))
        accuracy = est.score(convert(pairs), convert(y))
    assert type(got) is type(convert(pairs))
    np.testing.assert_array_equal(to_numpy(got), ref)
    assert to_numpy(got).dtype == ref.dtype
    assert set(np.unique(to_numpy(got))) <= set(est.classes_.tolist())
    assert accuracy == est.score(pairs, y)


@pytest.mark.parametrize("convert", BACKENDS)
def test_index_pairs_into_device_points(convert):
    pairs, s = _pairs()
    points = pairs.reshape(-1, pairs.shape[2])
    index = np.arange(points.shape[0]).reshape(-1, 2)
    for Est, params in ((TSML, {"n_components": 3, "lam": 0.1}), (LDML, {"lam": 0.1})):
        ref = Est(preprocessor=points, **params).fit(index, s)
        est = Est(preprocessor=convert(points), **params)
        est.__dict__.update({k: v for k, v in vars(ref).items() if k.endswith("_")})
        with metricfit.array_api_dispatch():
            decision = est.decision_function(convert(index))
            predicted = est.predict(convert(index))
            accuracy = est.score(convert(index), convert(s))
        assert type(decision) is type(convert(points))
        _close(to_numpy(decision), ref.decision_function(index), np.float64)
        np.testing.assert_array_equal(to_numpy(predicted), ref.predict(index))
        assert accuracy == ref.score(index, s)


@pytest.mark.parametrize("convert", BACKENDS)
def test_logistic_columns_equal_expit_without_overflow(convert):
    u = np.r_[-1e4, -800.0, -40.0, -1.0, -1e-300, 0.0, 1e-300, 1.0, 40.0, 800.0, 1e4,
              np.linspace(-30, 30, 61)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning (array_api_strict is NumPy)
        got = to_numpy(logistic_columns(convert(u)))
    want = np.column_stack([expit(-u), expit(u)])
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    assert np.isfinite(got).all()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # on purpose
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("convert", BACKENDS)
def test_scores_beyond_the_float_range_are_named_on_the_device(convert):
    pairs, s = _pairs(n=40)
    est = LDML(lam=0.1).fit(pairs, s)
    huge = pairs * 1e160  # finite entries, squared differences beyond float64
    with pytest.raises(ValueError, match="entries up to [0-9.]+e\\+160.*not finite"):
        est.decision_function(huge)  # the NumPy path says the same
    with metricfit.array_api_dispatch():
        for method in (est.pair_score, est.decision_function, est.predict,
                       est.predict_proba):
            with pytest.raises(ValueError, match="entries up to [0-9.]+e\\+160.*not finite"):
                method(convert(huge))
        with pytest.raises(ValueError, match="not finite"):
            est.calibrate_threshold(convert(huge), convert(s))


@pytest.mark.parametrize(("Est", "params"), LEARNERS)
def test_numpy_input_keeps_its_path(Est, params):
    est, pairs, s = _fit(Est, params)
    scores = est.pair_score(pairs)
    for dispatch in (False, True):
        with metricfit.array_api_dispatch(dispatch):
            decision = est.decision_function(pairs)
            predicted = est.predict(pairs)
            accuracy = est.score(pairs, list(s))
        assert type(decision) is np.ndarray and type(predicted) is np.ndarray
        np.testing.assert_array_equal(decision, scores - est.threshold_)
        np.testing.assert_array_equal(predicted, est.classes_[(decision >= 0).astype(int)])
        assert accuracy == float(np.mean((decision >= 0) == (s == 1)))


@pytest.mark.skipif(cuda_torch() is None, reason="no CUDA device")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("Est", "params"), LEARNERS)
def test_classifier_api_on_cuda(dtype, Est, params):
    torch = cuda_torch()
    est, pairs, s = _fit(Est, params, dtype)
    cuda_pairs = torch.asarray(pairs, device="cuda")
    with metricfit.array_api_dispatch():
        decision = est.decision_function(cuda_pairs)
        predicted = est.predict(cuda_pairs)
        accuracy = est.score(cuda_pairs, torch.asarray(s, device="cuda"))
        est.calibrate_threshold(cuda_pairs, torch.asarray(s, device="cuda"))
        proba = est.predict_proba(cuda_pairs) if hasattr(est, "predict_proba") else None
    assert decision.device.type == "cuda" and predicted.device.type == "cuda"
    assert proba is None or proba.device.type == "cuda"
    ref = est.decision_function(pairs)
    _close(decision.cpu().numpy(), ref, dtype)
    clear = _clear(ref, dtype)
    np.testing.assert_array_equal(predicted.cpu().numpy()[clear], est.predict(pairs)[clear])
    assert type(accuracy) is float
    assert abs(accuracy - est.score(pairs, s)) <= np.sum(~clear) / len(s)
