"""Issue 30 item 2: WPCA, WCCN, LDA, LengthNormalizer, the score normalisations and the
metrics on array_api_strict and torch arrays (dispatch on) give the NumPy results, 1e-6
relative in float64 and 1e-4 in float32, with their outputs in the input's namespace; mixed
namespaces are named in the error; the CUDA checks skip without a GPU."""

import numpy as np
import pytest

import metricfit
from metricfit import LDA, WCCN, WPCA, LengthNormalizer
from metricfit import metrics as M
from metricfit.backend import normalize_scores

compat = pytest.importorskip("array_api_compat")

RTOL = {np.float64: 1e-6, np.float32: 1e-4}


def _strict():
    xps = pytest.importorskip("array_api_strict")
    return xps.asarray


def _torch():
    torch = pytest.importorskip("torch")
    return torch.asarray


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return lambda a: torch.asarray(a, device="cuda")


BACKENDS = {"array_api_strict": _strict, "torch": _torch}


@pytest.fixture(params=list(BACKENDS))
def to(request):
    return BACKENDS[request.param]()


@pytest.fixture(autouse=True)
def dispatch():
    with metricfit.array_api_dispatch():
        yield


def _same_namespace(out, given):
    assert compat.array_namespace(out).__name__ == compat.array_namespace(given).__name__
    assert str(compat.device(out)) == str(compat.device(given))


def _close(numpy_result, other, rtol, up_to_row_signs=False):
    a = np.asarray(numpy_result, dtype=np.float64)
    b = np.asarray(metricfit._array_api.to_numpy(other), dtype=np.float64)
    assert a.shape == b.shape
    if up_to_row_signs:  # eigenvectors: each row may flip
        b = b * np.where(np.sum(a * b, axis=1, keepdims=True) < 0, -1.0, 1.0)
    scale = max(np.max(np.abs(a)), np.finfo(float).tiny)
    assert np.max(np.abs(a - b)) <= rtol * scale, np.max(np.abs(a - b)) / scale


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(12), 10)
    X = 2 * rng.normal(size=(12, 8))[labels] + rng.normal(size=(120, 8)) * np.linspace(1, 3, 8)
    pairs = X[:100].reshape(50, 2, 8)
    pair_labels = np.where(np.arange(50) % 2 == 0, 1, -1)
    return X, labels, pairs, pair_labels


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", ["points", "gram"])
def test_wpca(to, dtype, case, data):
    X = data[0] if case == "points" else data[0][:6]  # n < d: the Gram path
    X = X.astype(dtype)
    k = 5
    ref, got = WPCA(n_components=k).fit(X), WPCA(n_components=k).fit(to(X))
    for name in ("components_", "explained_variance_", "mean_"):
        _close(getattr(ref, name), getattr(got, name), RTOL[dtype])
        _same_namespace(getattr(got, name), to(X))
    Z = got.transform(to(X))
    _same_namespace(Z, to(X))
    assert Z.dtype == to(X).dtype
    _close(ref.transform(X), Z, RTOL[dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_wccn_points_and_pairs(to, dtype, data):
    X, labels, pairs, pair_labels = data
    X, pairs = X.astype(dtype), pairs.astype(dtype)
    ref, got = WCCN().fit(X, labels), WCCN().fit(to(X), to(labels))
    _close(ref.components_, got.components_, RTOL[dtype])
    _close(ref.eigenvalues_, got.eigenvalues_, RTOL[dtype])
    _close(ref.transform(X), got.transform(to(X)), RTOL[dtype])
    ref, got = WCCN(reg=0.1).fit(pairs, pair_labels), WCCN(reg=0.1).fit(to(pairs), pair_labels)
    _close(ref.transform(pairs), got.transform(to(pairs)), RTOL[dtype])
    _same_namespace(got.transform(to(pairs)), to(pairs))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lda_points_and_pairs(to, dtype, data):
    X, labels, pairs, pair_labels = data
    X, pairs = X.astype(dtype), pairs.astype(dtype)
    ref, got = LDA(n_components=4).fit(X, labels), LDA(n_components=4).fit(to(X), labels)
    _close(ref.components_, got.components_, RTOL[dtype], up_to_row_signs=True)
    _close(ref.explained_variance_, got.explained_variance_, RTOL[dtype])
    _close(ref.mean_, got.mean_, RTOL[dtype])
    Z = got.transform(to(X))
    _same_namespace(Z, to(X))
    ref = LDA(n_components=3).fit(pairs, pair_labels)
    got = LDA(n_components=3).fit(to(pairs), pair_labels)
    _close(ref.components_, got.components_, RTOL[dtype], up_to_row_signs=True)
    assert tuple(got.transform(to(pairs)).shape) == (50, 2, 3)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("whiten", [True, False])
def test_length_normalizer(to, dtype, whiten, data):
    X, _, pairs, _ = data
    X, pairs = X.astype(dtype), pairs.astype(dtype)
    ref, got = LengthNormalizer(whiten=whiten).fit(X), LengthNormalizer(whiten=whiten).fit(to(X))
    _close(ref.transform(X), got.transform(to(X)), RTOL[dtype])
    Z = got.transform(to(pairs))
    _same_namespace(Z, to(pairs))
    _close(ref.transform(pairs), Z, RTOL[dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("method", ["z-norm", "t-norm", "s-norm", "as-norm"])
def test_score_normalisation(to, dtype, method):
    rng = np.random.default_rng(1)
    scores = rng.normal(size=40).astype(dtype)
    enrol = (3 * rng.normal(size=(40, 25)) + 1).astype(dtype)
    test = rng.normal(size=(40, 25)).astype(dtype)
    top_n = 8 if method == "as-norm" else None
    ref = normalize_scores(scores, enrol, test, method, top_n)
    got = normalize_scores(to(scores), to(enrol), to(test), method, top_n)
    _same_namespace(got, to(scores))
    _close(ref, got, RTOL[dtype])
    for scale in (1e300, 1e-305):  # the power-of-two rescaling of the NumPy path
        ref = normalize_scores(scores * scale, enrol * scale, test * scale, method, top_n) \
            if dtype == np.float64 else None
        if ref is not None:
            got = normalize_scores(to(scores * scale), to(enrol * scale), to(test * scale),
                                   method, top_n)
            _close(ref, got, RTOL[dtype])


def test_score_normalisation_errors(to):
    with pytest.raises(ValueError, match="enrol_cohort contains NaN"):
        normalize_scores(to(np.zeros(2)), to(np.array([[0.0, np.nan], [0, 1]])),
                         to(np.ones((2, 2))), "z-norm")
    with pytest.raises(ValueError, match="test cohort scores of trial 1 are all equal"):
        normalize_scores(to(np.zeros(2)), to(np.ones((2, 2))), to(np.array([[0.0, 1], [2, 2]])),
                         "t-norm")


@pytest.fixture(scope="module")
def trials():
    rng = np.random.default_rng(2)
    y = np.r_[np.ones(150), -np.ones(350)].astype(int)
    scores = np.round(rng.normal(size=500) + 1.5 * (y == 1), 1)  # ties on purpose
    return y, scores


SCALARS = {
    "max_decision_accuracy": lambda y, s: M.max_decision_accuracy(y, s),
    "equal_error_rate": lambda y, s: M.equal_error_rate(y, s),
    "min_dcf": lambda y, s: M.min_dcf(y, s, preset="p05"),
    "act_dcf": lambda y, s: M.act_dcf(y, s, 0.3),
    "cllr": lambda y, s: M.cllr(y, s),
    "min_cllr": lambda y, s: M.min_cllr(y, s),
    "calibrate_threshold": lambda y, s: M.calibrate_threshold(y, s, "eer"),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(SCALARS))
def test_scalar_metrics_are_python_floats(to, dtype, name, trials):
    y, scores = trials
    scores = scores.astype(dtype)
    ref, got = SCALARS[name](y, scores), SCALARS[name](to(y), to(scores))
    ref, got = np.atleast_1d(ref), np.atleast_1d(got)
    assert all(type(v) is float for v in got.tolist())
    assert all(isinstance(v, float) for v in np.atleast_1d(SCALARS[name](y.tolist(),
                                                                         to(scores))).tolist())
    np.testing.assert_allclose(got, ref, rtol=RTOL[dtype])


@pytest.mark.parametrize("name", ["roc_curve", "det_curve", "fa_fr_curve", "pav_llr",
                                  "roc_convex_hull", "false_reject_at_false_accept",
                                  "fnmr_at_fmr"])
def test_curves_in_the_input_namespace(to, name, trials):
    y, scores = trials
    ref, got = getattr(M, name)(y, scores), getattr(M, name)(to(y), to(scores))
    ref = ref if isinstance(ref, tuple) else (ref,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(ref) == len(got)
    for a, b in zip(ref, got, strict=True):
        _same_namespace(b, to(scores))
        np.testing.assert_array_equal(np.asarray(metricfit._array_api.to_numpy(b)), a)


def test_metric_errors_in_the_namespace(to, trials):
    y, scores = trials
    bad = scores.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="scores contains NaN"):
        M.equal_error_rate(to(y), to(bad))
    with pytest.raises(ValueError, match="y_true must hold pair labels"):
        M.equal_error_rate(to(np.full(500, 2)), to(scores))
    with pytest.raises(ValueError, match="different lengths"):
        M.min_dcf(to(y[:10]), to(scores))


def test_mixed_namespaces_are_named(trials, data):
    torch = pytest.importorskip("torch")
    xps = pytest.importorskip("array_api_strict")
    y, scores = trials
    with pytest.raises(ValueError, match="different array namespaces.*y_true.*scores"):
        M.equal_error_rate(torch.asarray(y), xps.asarray(scores))
    X = data[0]
    wpca = WPCA(n_components=3).fit(torch.asarray(X))
    with pytest.raises(ValueError, match="different array namespaces.*X.*components_"):
        wpca.transform(xps.asarray(X))
    with pytest.raises(ValueError, match="different array namespaces.*X.*components_"):
        wpca.transform(X)  # NumPy data on a torch-fitted model
    with pytest.raises(ValueError, match="different array namespaces.*scores.*enrol_cohort"):
        normalize_scores(torch.zeros(2), xps.ones((2, 2)), torch.ones((2, 2)), "z-norm")


def test_numpy_input_keeps_the_numpy_path(trials, data):
    """Dispatch on changes nothing for NumPy arrays: the results are NumPy's bit for bit."""
    y, scores = trials
    X = data[0]
    with metricfit.array_api_dispatch(False):
        off = (M.equal_error_rate(y, scores), WPCA(n_components=4).fit(X).components_)
    on = (M.equal_error_rate(y, scores), WPCA(n_components=4).fit(X).components_)
    assert off[0] == on[0]
    assert isinstance(on[1], np.ndarray) and np.array_equal(off[1], on[1])


def test_cuda_results_stay_on_the_device(trials, data):
    to = _cuda()
    y, scores = trials
    X = data[0]
    ref = M.equal_error_rate(y, scores)
    np.testing.assert_allclose(M.equal_error_rate(to(y), to(scores)), ref, rtol=1e-6)
    far, tar, _ = M.roc_curve(to(y), to(scores))
    assert far.device.type == "cuda"
    Z = WPCA(n_components=4).fit(to(X)).transform(to(X))
    assert Z.device.type == "cuda"
    _close(WPCA(n_components=4).fit(X).transform(X), Z, 1e-6)
    Z = LDA(n_components=3).fit(to(X), data[1]).transform(to(X))
    assert Z.device.type == "cuda"
