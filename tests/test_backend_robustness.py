"""The back-end at every scale (issue 24): calibration and score normalisation invariant to
an affine change of the scores for every finite input, one trial at a time, infinite LLRs,
the label coding of CalibratedScorer, and refusals that name what is wrong."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.linear_model import LogisticRegression

from metricfit import metrics
from metricfit.backend import (
    CalibratedScorer,
    LinearCalibration,
    PAVCalibration,
    ScoreNormalizer,
    normalize_scores,
)
from metricfit.learners import CosineSimilarity

PRIORS = (0.5, 0.2, 0.05, 0.01, 0.001)


def overlapping_scores(seed=0, n_tar=400, n_non=4000):
    """Target and non-target scores that overlap (the calibration optimum is finite)."""
    rng = np.random.default_rng(seed)
    s = np.r_[rng.normal(1.0, 1.0, n_tar), rng.normal(-1.0, 1.2, n_non)]
    return np.r_[np.ones(n_tar), -np.ones(n_non)].astype(int), s


def reference_calibration(y, s, prior):
    """Prior-weighted logistic regression by scikit-learn, fitted to convergence (C = 1e12:
    a vanishing penalty), as LLR = a s + b: the weights P / N_tar and (1 - P) / N_non, and
    the decision value a s + b + logit P."""
    tar = y == 1
    weight = np.where(tar, prior / tar.sum(), (1 - prior) / (~tar).sum())
    model = LogisticRegression(C=1e12, solver="newton-cholesky", tol=1e-14, max_iter=1000)
    model.fit(s[:, None], tar.astype(int), sample_weight=weight / weight.mean())
    logit = np.log(prior / (1 - prior))
    return float(model.coef_[0, 0]), float(model.intercept_[0] - logit)


def calibration_cost(y, llr, prior):
    tar = y == 1
    z = llr + np.log(prior / (1 - prior))
    return (prior * np.logaddexp(0, -z[tar]).mean()
            + (1 - prior) * np.logaddexp(0, z[~tar]).mean())


# ------------------------------------------------------------------------- linear calibration


@pytest.mark.parametrize("prior", PRIORS)
def test_linear_calibration_matches_logistic_regression(prior):
    y, s = overlapping_scores()
    a, b = reference_calibration(y, s, prior)
    fitted = LinearCalibration(prior).fit(s, y)
    assert fitted.slope_ == pytest.approx(a, rel=1e-6)
    assert fitted.offset_ == pytest.approx(b, rel=1e-6, abs=1e-8)
    assert_allclose(fitted.transform(s), a * s + b, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("prior", (0.5, 0.2, 0.01))
@pytest.mark.parametrize("scale", (1e3, 1e5))
def test_linear_calibration_reaches_its_optimum_on_large_scores(prior, scale):
    """The issue's case: scores x 1e3 / x 1e5 left the offset at 0 and the cost 3.6-7.3 %
    above its optimum. Now the cost equals the optimum's to 1e-10 relative."""
    y, s = overlapping_scores(seed=1)
    a, b = reference_calibration(y, s, prior)
    fitted = LinearCalibration(prior).fit(scale * s, y)
    best = calibration_cost(y, a * s + b, prior)
    assert calibration_cost(y, fitted.transform(scale * s), prior) <= best * (1 + 1e-10)
    assert fitted.offset_ == pytest.approx(b, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize("scale", (1e-6, 1e-3, 1.0, 1e3, 1e6, 2.0 ** 60, 1e200, 1e-200))
def test_linear_calibration_is_scale_invariant(prior, scale):
    y, s = overlapping_scores(seed=2)
    expected = LinearCalibration(prior).fit(s, y).transform(s)
    fitted = LinearCalibration(prior).fit(scale * s, y)
    assert_allclose(fitted.transform(scale * s), expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("prior", PRIORS)
def test_linear_calibration_is_shift_invariant(prior):
    """Scores shifted by 1e6 (their float64 spacing there is 1.2e-10: the LLRs move by at
    most that much times the slope)."""
    y, s = overlapping_scores(seed=3)
    expected = LinearCalibration(prior).fit(s, y).transform(s)
    fitted = LinearCalibration(prior).fit(s + 1e6, y)
    assert_allclose(fitted.transform(s + 1e6), expected, rtol=1e-6, atol=1e-8)


@settings(max_examples=40, deadline=None)
@given(exponent=st.floats(-250, 250), shift=st.floats(-1e3, 1e3),
       prior=st.floats(1e-3, 0.5), seed=st.integers(0, 2 ** 16))
def test_linear_calibration_affine_invariance_property(exponent, shift, prior, seed):
    """For random magnitudes 10^-250 .. 10^250, shifts (in units of the scores' spread) and
    priors: the calibrated LLRs of c (s + d) equal those of s."""
    y, s = overlapping_scores(seed, 60, 300)
    expected = LinearCalibration(prior).fit(s, y).transform(s)
    changed = 10.0 ** exponent * (s + shift)
    fitted = LinearCalibration(prior).fit(changed, y)
    # s + shift rounds at |shift| * 1.1e-16: the tolerance allows that much on the LLRs
    tolerance = 1e-9 + 1e-15 * abs(shift) * abs(fitted.coef_[0])
    assert_allclose(fitted.transform(changed), expected, rtol=1e-6, atol=tolerance)


def test_linear_calibration_at_the_float_limits():
    y, s = overlapping_scores(seed=4, n_tar=50, n_non=200)
    expected = LinearCalibration().fit(s, y).transform(s)
    for scores in (s * 1e307 / np.abs(s).max() * 1.7, s * 5e-324 * 2 ** 40):
        fitted = LinearCalibration().fit(scores, y)
        llr = fitted.transform(scores)
        assert np.isfinite(llr).all()
    # the largest magnitudes: exact power-of-two scaling, the same LLRs
    big = np.ldexp(s / np.abs(s).max(), 1023)
    assert_allclose(LinearCalibration().fit(big, y).transform(big), expected, rtol=1e-12,
                    atol=1e-12)


def test_linear_calibration_of_equal_scores():
    """All scores equal: the slope is 0 and the offset the prior's log-odds correction."""
    y = np.r_[np.ones(10), -np.ones(30)]
    fitted = LinearCalibration(0.5).fit(np.full(40, 3.0), y)
    assert fitted.slope_ == 0
    # the weighted cost is minimised where sigma(b) = P: b = 0 at P = 0.5
    assert fitted.offset_ == pytest.approx(0.0, abs=1e-12)


# ---------------------------------------------------------------------- PAV calibration


@pytest.mark.parametrize("scale", (1e-200, 1e-6, 1.0, 1e6, 1e200))
def test_pav_calibration_is_affine_invariant(scale):
    y, s = overlapping_scores(seed=5, n_tar=100, n_non=300)
    grid = np.linspace(s.min() - 1, s.max() + 1, 57)
    expected = PAVCalibration().fit(s, y).transform(grid)
    fitted = PAVCalibration().fit(scale * s + 3 * scale, y)
    assert_allclose(fitted.transform(scale * grid + 3 * scale), expected, rtol=1e-9,
                    atol=1e-9)


@pytest.mark.parametrize("max_llr", (0.0, -1.0, np.inf, np.nan, "20"))
def test_pav_calibration_refuses_a_bad_max_llr(max_llr):
    y, s = overlapping_scores(n_tar=10, n_non=10)
    with pytest.raises(ValueError, match="max_llr"):
        PAVCalibration(max_llr=max_llr).fit(s, y)


# ------------------------------------------------------------------------ one trial at a time


@pytest.mark.parametrize("calibration", (LinearCalibration(), PAVCalibration()))
def test_calibration_transforms_one_score(calibration):
    y, s = overlapping_scores(n_tar=20, n_non=40)
    calibration.fit(s, y)
    one = calibration.transform([s[0]])
    assert one.shape == (1,) and one[0] == calibration.transform(s)[0]
    assert calibration.transform(np.array([[s[3]]]))[0] == calibration.transform(s)[3]
    with pytest.raises(ValueError, match="NaN"):
        calibration.transform([np.nan])
    with pytest.raises(ValueError, match="empty"):
        calibration.transform([])


def cosine_learner_and_pairs(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 4))
    y = rng.choice([-1, 1], 30)
    pairs = np.stack([X[:30], np.where(y[:, None] > 0, X[:30] + 0.3, X[30:])], axis=1)
    return CosineSimilarity().fit(pairs, y), pairs, y


def test_calibrated_scorer_scores_one_pair():
    learner, pairs, y = cosine_learner_and_pairs()
    for method in ("linear", "pav"):
        scorer = CalibratedScorer(learner, method=method).fit(pairs, y)
        assert scorer.pair_score(pairs[:1])[0] == scorer.pair_score(pairs)[0]
        assert scorer.predict(pairs[:1])[0] == scorer.predict(pairs)[0]


@pytest.mark.parametrize("coding", ("pm1", "01", "bool"))
def test_calibrated_scorer_adopts_the_label_coding(coding):
    learner, pairs, y = cosine_learner_and_pairs(1)
    labels = {"pm1": y, "01": (y > 0).astype(int), "bool": y > 0}[coding]
    scorer = CalibratedScorer(learner).fit(pairs, labels)
    assert_array_equal(scorer.classes_, np.unique(labels))
    predicted = scorer.predict(pairs)
    assert set(np.unique(predicted)) <= set(np.unique(labels))
    assert_array_equal(predicted == scorer.classes_[1], scorer.decision_function(pairs) >= 0)


@pytest.mark.parametrize("name, value", [("method", "isotonic"), ("prior", 0.0),
                                         ("prior", 1.5), ("decision_prior", 1.0),
                                         ("decision_prior", np.nan)])
def test_calibrated_scorer_refuses_bad_parameters(name, value):
    learner, pairs, y = cosine_learner_and_pairs()
    with pytest.raises(ValueError, match=name):
        CalibratedScorer(learner, **{name: value}).fit(pairs, y)


# --------------------------------------------------------------------- infinite LLRs


def test_cllr_of_pav_llrs_is_min_cllr():
    """pav_llr gives +-inf in pure bins; cllr takes them (a right infinite LLR costs 0)."""
    y, s = overlapping_scores(seed=6, n_tar=50, n_non=200)
    s[np.argmax(s)] += 10  # a pure target bin at the top, a pure non-target one at the bottom
    llr = metrics.pav_llr(y, s)
    assert np.isinf(llr).any()
    assert metrics.cllr(y, llr) == pytest.approx(metrics.min_cllr(y, s), rel=1e-12)
    assert np.isfinite(metrics.act_dcf(y, llr, preset="p01"))


@pytest.mark.parametrize("scale", (1e-300, 1e-200, 1e-20, 1e20, 1e300))
def test_pav_metrics_depend_only_on_the_order(scale):
    """scikit-learn's isotonic fit merged scores below ~1e-20 apart: minCllr was 1.0 (no
    discrimination) for scores x 1e-20 and smaller. pav_llr now fits on ranks."""
    y, s = overlapping_scores(seed=7, n_tar=80, n_non=240)
    assert_array_equal(metrics.pav_llr(y, scale * s), metrics.pav_llr(y, s))
    assert metrics.min_cllr(y, scale * s) == metrics.min_cllr(y, s) < 0.9
    for got, expected in zip(metrics.roc_convex_hull(y, scale * s),
                             metrics.roc_convex_hull(y, s), strict=True):
        assert_array_equal(got, expected)


def test_infinite_llrs_cost_what_they_should():
    y = np.array([1, 1, -1, -1])
    assert metrics.cllr(y, [np.inf, np.inf, -np.inf, -np.inf]) == 0.0
    assert metrics.cllr(y, [-np.inf, 0.0, 0.0, 0.0]) == np.inf
    assert metrics.cllr(y, [0.0, 0.0, np.inf, 0.0]) == np.inf
    # actDCF at P = 0.5: a target at -inf is missed, a non-target at +inf falsely accepted
    assert metrics.act_dcf(y, [-np.inf, np.inf, np.inf, -np.inf], p_target=0.5) == 1.0
    assert metrics.act_dcf(y, [np.inf, np.inf, -np.inf, -np.inf], p_target=0.5) == 0.0
    for function in (metrics.cllr, metrics.act_dcf):
        with pytest.raises(ValueError, match="llr contains NaN"):
            function(y, [np.nan, 1.0, -1.0, -1.0])


def test_order_metrics_still_refuse_infinite_scores():
    y = np.array([1, 1, -1, -1])
    with pytest.raises(ValueError, match="infinity"):
        metrics.equal_error_rate(y, [np.inf, 1.0, 0.0, 0.0])


# --------------------------------------------------------------------- score normalisation


def normalisation_inputs(seed, n=6, k=25):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.normal(size=(n, k)), rng.normal(1.0, 2.0, size=(n, k))


@pytest.mark.parametrize("method", ("z-norm", "t-norm", "s-norm", "as-norm"))
@pytest.mark.parametrize("scale", (1e-300, 1e-200, 1e-6, 1e6, 1e200, 1e300))
def test_normalize_scores_is_scale_invariant(method, scale):
    """At 1e200 every score was 0 (the std overflowed); at 1e-200 off by the scale."""
    scores, enrol, test = normalisation_inputs(0)
    expected = normalize_scores(scores, enrol, test, method, top_n=10)
    got = normalize_scores(scale * scores, scale * enrol, scale * test, method, top_n=10)
    assert_allclose(got, expected, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(exponent=st.integers(-1000, 1000), shift=st.floats(-1e3, 1e3),
       method=st.sampled_from(("z-norm", "t-norm", "s-norm", "as-norm")),
       seed=st.integers(0, 2 ** 16))
def test_normalize_scores_affine_invariance_property(exponent, shift, method, seed):
    """A power-of-two scale 2^-1000 .. 2^1000 gives the same result bit for bit; a shift
    the same up to the shift's rounding."""
    scores, enrol, test = normalisation_inputs(seed)
    expected = normalize_scores(scores, enrol, test, method, top_n=8)
    scaled = normalize_scores(*(np.ldexp(v, exponent) for v in (scores, enrol, test)),
                              method, top_n=8)
    assert_array_equal(scaled, expected)
    shifted = normalize_scores(scores + shift, enrol + shift, test + shift, method, top_n=8)
    assert_allclose(shifted, expected, rtol=1e-9, atol=1e-13 * (1 + abs(shift)))


@pytest.mark.parametrize("side", ("enrol", "test"))
@pytest.mark.parametrize("bad", (np.nan, np.inf))
def test_normalize_scores_refuses_non_finite_cohort_scores(side, bad):
    scores, enrol, test = normalisation_inputs(1)
    (enrol if side == "enrol" else test)[2, 3] = bad
    with pytest.raises(ValueError, match=rf"{side}_cohort contains .* trial 2"):
        normalize_scores(scores, enrol, test, "s-norm")


def test_normalize_scores_refuses_bad_inputs():
    scores, enrol, test = normalisation_inputs(2)
    with pytest.raises(ValueError, match="scores contains NaN"):
        normalize_scores(np.r_[np.nan, scores[1:]], enrol, test)
    with pytest.raises(ValueError, match=r"test_cohort must have shape"):
        normalize_scores(scores, enrol, test[:3])
    flat = enrol.copy()
    flat[4] = 7.0
    with pytest.raises(ValueError, match="enrol cohort scores of trial 4 are all equal"):
        normalize_scores(scores, flat, test, "z-norm")
    assert np.isfinite(normalize_scores(scores, flat, test, "t-norm")).all()
    for top_n in (1, 0, 2.5, True):
        with pytest.raises(ValueError, match="top_n"):
            normalize_scores(scores, enrol, test, "as-norm", top_n=top_n)
    huge = scores.copy()
    huge[0] = 1e300
    with pytest.raises(ValueError, match="trial 0 overflows"):
        normalize_scores(huge, 1e-10 * enrol, 1e-10 * test, "z-norm")


def test_score_normalizer_refuses_a_cohort_without_spread():
    learner, pairs, _ = cosine_learner_and_pairs()
    with pytest.raises(ValueError, match="cohort needs at least 2 points"):
        ScoreNormalizer(learner, pairs[:1, 0])
    with pytest.raises(ValueError, match="top_n"):
        ScoreNormalizer(learner, pairs[:, 0], "as-norm", top_n=1)
    out = ScoreNormalizer(learner, pairs[:, 0], "as-norm", top_n=5).pair_score(pairs[:3])
    assert out.shape == (3,) and np.isfinite(out).all()


# ------------------------------------------------- neighbours: embeddings at extreme scales


@pytest.mark.parametrize("scale", (1e-200, 1e200))
def test_cosine_back_end_paths_are_scale_invariant(scale):
    """The cosine fast path of cohort_scores and score_sets' mean-embedding normalised rows
    by np.linalg.norm, which overflows at 1e200 and underflows at 1e-200: every cosine was 0
    (and ScoreNormalizer refused the flat cohort). The Gaussian enrolment gave NaN at 1e200
    and 0 at 1e-200."""
    from metricfit.backend import score_sets
    from metricfit.backend.score_norm import cohort_scores

    learner, pairs, _ = cosine_learner_and_pairs(2)
    X = pairs[:, 0]
    assert_allclose(cohort_scores(learner, scale * X[:4], scale * X[10:]),
                    cohort_scores(learner, X[:4], X[10:]), rtol=1e-12)
    normaliser = ScoreNormalizer(learner, X[10:], "as-norm", top_n=5)
    big = ScoreNormalizer(learner, scale * X[10:], "as-norm", top_n=5)
    assert_allclose(big.pair_score(scale * pairs[:4]), normaliser.pair_score(pairs[:4]),
                    rtol=1e-10)
    enrol = [X[:3], X[3:6], X[:3]]
    test = [X[6:7], X[7:9], X[9:11]]
    for method in ("mean-embedding", "mean-score", "gaussian"):
        expected = score_sets(learner, enrol, test, method)
        got = score_sets(learner, [scale * e for e in enrol], [scale * t for t in test], method)
        assert np.isfinite(expected).all()
        assert_allclose(got, expected, rtol=1e-9, atol=1e-12, err_msg=method)


@pytest.mark.parametrize("scale", (2.0 ** -700, 2.0 ** 700))
def test_gaussian_claims_are_scale_invariant(scale):
    from metricfit.backend.gaussian import gaussian_claims

    rng = np.random.default_rng(3)
    subjects = np.repeat(np.arange(4), 6)
    Z = rng.normal(size=(24, 3)) + subjects[:, None]
    is_model = np.tile(np.arange(6) < 4, 4)
    expected = gaussian_claims(Z, subjects, is_model)["score"]
    assert_allclose(gaussian_claims(scale * Z, subjects, is_model)["score"], expected,
                    rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("C", (np.inf, np.nan, 0.0, -1.0))
def test_score_fusion_refuses_a_non_finite_or_non_positive_c(C):
    from metricfit.learners.fusion import fusion_model

    for method in ("svm", "logistic", "llr"):
        with pytest.raises(ValueError, match="C must be a positive finite number"):
            fusion_model(method, C)


def test_gaussian_enrolment_refuses_a_model_with_one_claim():
    """Every score was exactly 0 (EER 50 %) when each model had one claim in the call."""
    from metricfit.backend import score_sets

    learner, pairs, _ = cosine_learner_and_pairs(4)
    X = pairs[:, 0]
    with pytest.raises(ValueError, match="enrolment set 0 has a single test sample"):
        score_sets(learner, [X[:3], X[3:6]], [X[6], X[7]], "gaussian")
    scores = score_sets(learner, [X[:3], X[:3]], [X[6], X[7]], "gaussian")
    assert np.all(scores != 0)


def test_plda_warns_about_a_singular_within_class_covariance():
    """On raw digits pixels (constant border pixels) the LLRs reached -1e16 without a word."""
    from sklearn.datasets import load_digits

    from metricfit import PLDA

    X, y = load_digits(return_X_y=True)
    with pytest.warns(UserWarning, match="within-class covariance is singular"):
        PLDA().fit(X, y)
    # fewer samples: whether LAPACK's generalised eigenproblem fails (a LinAlgError, seen with
    # numpy 2.4 / scipy 1.17) or completes depends on the build; either way it is said
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            PLDA().fit(X[:600], y[:600])
        except ValueError as error:
            assert "PLDA cannot be fitted: the within-class covariance" in str(error)
        else:
            assert any("within-class covariance is singular" in str(w.message) for w in caught)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PLDA().fit(X[:600, 20:28] + np.random.default_rng(0).normal(size=(600, 8)), y[:600])


def test_a_failing_plda_eigenproblem_is_a_value_error(monkeypatch):
    """scipy's LinAlgError from the basis or EM becomes a ValueError naming X's problem."""
    from metricfit import PLDA
    from metricfit.backend import plda as core

    def fail(B, W):
        raise np.linalg.LinAlgError("the leading minor of order 3 of B is not positive definite")

    monkeypatch.setattr(core, "plda_basis", fail)
    X = np.random.default_rng(0).normal(size=(40, 3))
    with pytest.raises(ValueError, match="PLDA cannot be fitted: the within-class covariance"):
        PLDA().fit(X, np.repeat(np.arange(10), 4))


def test_the_plda_warning_names_the_callers_line():
    from sklearn.datasets import load_digits

    from metricfit import PLDA

    X, y = load_digits(return_X_y=True)
    with pytest.warns(UserWarning, match="singular") as record:
        PLDA().fit(X, y)
    assert record[0].filename == __file__
