"""Scale-safe numerics: every registered learner over inputs scaled by 1e-150 .. 1e150.

Cosine learners give the same scores at every scale (rows are scaled before the cosine);
no learner returns a NaN or infinite score: a result beyond the float range is a ValueError
that names the input and says to rescale. Distance learners take zero vectors.
"""

import warnings

import numpy as np
import pytest
from estimator_registry import INDEX_PAIRS, NAMES, Case

from metricfit import DDML, LDML, TSML, CosineSimilarity
from metricfit.learners import score_kind
from metricfit.learners._base import cosine_rows, squared_distances

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

SCALES = [1e-150, 1e-100, 1e-50, 1.0, 1e50, 1e100, 1e150]


def fit(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return case.estimator().fit(*case.fit_data())


def is_cosine(est):
    return score_kind(est) == "cosine" and not hasattr(est, "estimators")


def outcome(call):
    """'finite' scores, or a ValueError that must say to rescale (never a silent NaN/inf)."""
    try:
        scores = call()
    except ValueError as error:
        assert "rescale" in str(error).lower(), str(error)
        return "ValueError"
    assert np.isfinite(scores).all()
    return "finite"


@pytest.fixture(scope="module", params=NAMES)
def fitted_at_one(request):
    case = Case(request.param)
    return case, fit(case)


@pytest.mark.parametrize("scale", SCALES)
def test_scoring_scaled_pairs(fitted_at_one, scale):
    case, est = fitted_at_one
    if case.kind == INDEX_PAIRS:
        pytest.skip("index pairs: the points are the preprocessor's (fit sweep below)")
    X, _ = Case(case.name, scale=scale).pairs()
    result = outcome(lambda: est.pair_score(X))
    if is_cosine(est):
        assert result == "finite"
        np.testing.assert_allclose(est.pair_score(X), est.pair_score(case.pairs()[0]),
                                   rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", NAMES)
def test_fitting_scaled_data(name, scale):
    case = Case(name, scale=scale)
    X, _ = case.pairs()

    def fit_and_score():
        return fit(case).pair_score(X)

    result = outcome(fit_and_score)
    if name in ("TSML", "CSML", "CosineSimilarity", "CosineSimilarity-index", "DDML", "MkNN",
                "ScoreFusion", "LDML-psd", "TSML-index"):
        assert result == "finite"  # these fit at every scale of the sweep (measured)


def test_cosine_of_huge_and_tiny_rows_is_exact():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(50, 8)), rng.normal(size=(50, 8))
    expected = cosine_rows(a, b)
    for scale in (1e-300, 1e-170, 1e200, 1e300):
        np.testing.assert_allclose(cosine_rows(scale * a, scale * b), expected, rtol=1e-12)
        np.testing.assert_allclose(cosine_rows(scale * a, b), expected, rtol=1e-12)


def test_squared_distances_are_exact_up_to_the_float_range():
    a = np.array([[1e153, 1e153], [1e154, 1e154]])
    b = np.array([[-1e153, 0.0], [-1e154, 0.0]])
    d2 = squared_distances(a, b)
    np.testing.assert_allclose(d2[0], 5e306, rtol=1e-12)
    assert np.isinf(d2[1])  # 5e308 is beyond float64: the learners raise, naming the input


def test_issue_examples_scale_1e200_and_1e_170():
    case = Case("TSML")
    pairs, y = case.pairs()
    for Learner in (TSML, CosineSimilarity):
        est = Learner().fit(pairs, y) if Learner is CosineSimilarity else fit(case)
        reference = est.pair_score(pairs)
        for scale in (1e200, 1e-170):
            np.testing.assert_allclose(est.pair_score(scale * pairs), reference, rtol=1e-6,
                                       atol=1e-12)
            np.testing.assert_array_equal(est.predict(scale * pairs), est.predict(pairs))
    ddml = fit(Case("DDML"))
    with pytest.raises(ValueError, match=r"pairs have entries up to \d\.\d+e\+20\d.*[Rr]escale"):
        ddml.pair_score(1e200 * pairs)
    with pytest.raises(ValueError, match="pairs have entries up to"):
        ddml.predict(1e200 * pairs)


@pytest.mark.parametrize("Learner", [DDML, LDML])
def test_distance_learners_accept_zero_vectors(Learner):
    case = Case("DDML")
    pairs, y = case.pairs()
    pairs = pairs.copy()
    pairs[0, 0] = 0.0
    pairs[1] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = Learner(max_iter=30).fit(pairs, y)
    scores = est.pair_score(pairs)
    assert np.isfinite(scores).all()
    assert scores[1] == est.pair_score(np.zeros((1, 2, pairs.shape[2])))[0]


def test_cosine_learners_still_reject_zero_vectors():
    pairs, y = Case("TSML").pairs()
    pairs = pairs.copy()
    pairs[0, 0] = 0.0
    with pytest.raises(ValueError, match="zero vector"):
        TSML().fit(pairs, y)


def test_float32_estimators_name_inputs_beyond_float32():
    case = Case("SiameseCNN")
    est = fit(case)
    X, _ = case.pairs()
    with pytest.raises(ValueError, match="beyond the float32 range.*rescale"):
        est.pair_score(1e50 * X)
