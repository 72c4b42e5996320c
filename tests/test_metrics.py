"""Tests for metricfit.metrics: brute-force NumPy twins, hand-computed cases, bad input,
properties (hypothesis) and the scorers inside scikit-learn model selection."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import roc_curve as sklearn_roc_curve
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

from metricfit.metrics import (
    accuracy_at_threshold,
    calibrate_threshold,
    equal_error_rate,
    fa_fr_curve,
    false_reject_at_false_accept,
    get_scorer,
    max_accuracy_scorer,
    max_decision_accuracy,
    neg_eer_scorer,
    roc_curve,
)

SEEDS = [0, 1, 2, 3, 4, 5]


# --------------------------------------------------------------------------- data and twins


def make_scores(seed, n=60, ties=False, dtype=np.float64):
    """Labels in {-1, +1} and noisy scores (genuine shifted up); integer scores when ties."""
    rng = np.random.default_rng(seed)
    s = rng.choice(np.array([-1, 1]), size=n)
    s[:2] = [-1, 1]
    scores = rng.normal(size=n) + 0.8 * s
    if ties:
        scores = np.round(2 * scores)
    return s, scores.astype(dtype)


def candidate_thresholds(scores):
    """One threshold per cut: every distinct score (accept >= it), then inf (reject all)."""
    return np.append(np.unique(scores), np.inf)


def brute_max_da(s, scores):
    """First best threshold among all candidates, trying each one; returns (acc, t)."""
    best_acc, best_t = -1.0, None
    for t in candidate_thresholds(scores):
        acc = np.mean((scores >= t) == (s == 1))
        if acc > best_acc:
            best_acc, best_t = acc, t
    return best_acc, best_t


def brute_rates(s, scores, t):
    far = np.mean(scores[s == -1] >= t)
    frr = np.mean(scores[s == 1] < t)
    return far, frr


def brute_eer(s, scores):
    """EER and threshold by np.interp on the sign change of FAR - FRR (increasing -gap)."""
    t = candidate_thresholds(scores)
    rates = np.array([brute_rates(s, scores, ti) for ti in t])
    far, frr = rates[:, 0], rates[:, 1]
    lo, hi = scores.min(), scores.max()
    t[-1] = hi + 1e-12 * max(abs(lo), abs(hi))
    gap = frr - far
    return np.interp(0.0, gap, far), np.interp(0.0, gap, t)


def sklearn_eer(s, scores):
    fpr, tpr, _ = sklearn_roc_curve(s, scores, pos_label=1, drop_intermediate=False)
    return np.interp(0.0, fpr - (1 - tpr), fpr)


def both_codings(s):
    return [s, (s == 1).astype(int)]


# --------------------------------------------------------------------------- maxDA


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ties", [False, True])
def test_max_decision_accuracy_matches_brute_force(seed, ties):
    s, scores = make_scores(seed, ties=ties)
    expected_acc, expected_t = brute_max_da(s, scores)
    for y in both_codings(s):
        acc, threshold = max_decision_accuracy(y, scores)
        assert acc == expected_acc
        np.testing.assert_array_equal(scores >= threshold, scores >= expected_t)
        assert accuracy_at_threshold(y, scores, threshold) == acc


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_max_decision_accuracy_threshold_is_midpoint(seed):
    s, scores = make_scores(seed, ties=True)
    _, threshold = max_decision_accuracy(s, scores)
    unique = np.unique(scores)
    cut = np.searchsorted(unique, threshold)
    assert 0 < cut < unique.size
    assert threshold == pytest.approx(0.5 * (unique[cut - 1] + unique[cut]))


def test_max_decision_accuracy_float32_equals_float64():
    s, scores = make_scores(7, dtype=np.float32)
    acc32, t32 = max_decision_accuracy(s, scores)
    acc64, t64 = max_decision_accuracy(s, scores.astype(np.float64))
    assert (acc32, t32) == (acc64, t64)


def test_max_decision_accuracy_hand_example():
    y = [1, -1, 1, -1]
    scores = [0.9, 0.8, 0.4, 0.1]
    # cuts: accept all 2/4, reject {.1} 3/4, reject {.1,.4} 2/4, accept {.9} 3/4, none 2/4
    assert max_decision_accuracy(y, scores) == (0.75, pytest.approx(0.25))


def test_max_decision_accuracy_ties_get_one_decision():
    # all four scores tie: accept all (1/4 right) or reject all (3/4 right), never 4/4
    acc, threshold = max_decision_accuracy([1, 0, 0, 0], [0.5, 0.5, 0.5, 0.5])
    assert acc == 0.75
    assert threshold > 0.5


def test_perfect_separation():
    s, scores = np.array([-1, -1, 1, 1, 1]), np.array([0.1, 0.2, 0.7, 0.8, 0.9])
    acc, threshold = max_decision_accuracy(s, scores)
    assert acc == 1.0 and 0.2 < threshold < 0.7
    assert equal_error_rate(s, scores) == (0.0, 0.7)
    np.testing.assert_array_equal(false_reject_at_false_accept(s, scores, far=[0.0, 0.5]), 0.0)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_reversed_scores(seed):
    rng = np.random.default_rng(seed)
    s = np.array([1] * 3 + [-1] * 7)
    scores = np.where(s == 1, rng.uniform(0, 1, 10), rng.uniform(2, 3, 10))
    acc, threshold = max_decision_accuracy(s, scores)
    assert acc == 0.7 and threshold > scores.max()  # reject all: the majority class
    assert equal_error_rate(s, scores)[0] == 1.0
    assert max_decision_accuracy(s, -scores)[0] == 1.0


def test_accept_all_threshold_below_minimum():
    acc, threshold = max_decision_accuracy([1, 1, 1, -1], [1.0, 2.0, 3.0, 2.0])
    assert acc == 0.75 and threshold < 1.0


# --------------------------------------------------------------------------- EER


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ties", [False, True])
def test_equal_error_rate_matches_brute_force(seed, ties):
    s, scores = make_scores(seed, ties=ties)
    expected_eer, expected_t = brute_eer(s, scores)
    for y in both_codings(s):
        eer, threshold = equal_error_rate(y, scores)
        assert eer == pytest.approx(expected_eer, rel=1e-12, abs=1e-12)
        assert eer == pytest.approx(sklearn_eer(s, scores), rel=1e-12, abs=1e-12)
        assert threshold == pytest.approx(expected_t, rel=1e-12, abs=1e-12)


def test_equal_error_rate_hand_examples():
    # exact crossing: accept >= 0.8 gives FAR = FRR = 1/2
    assert equal_error_rate([1, -1, 1, -1], [0.9, 0.8, 0.4, 0.1]) == (0.5, 0.8)
    # interpolated: (FAR, FRR) = (1, 1/2) at t=2 and (0, 1/2) at t=3, so halfway: 0.5 at 2.5
    eer, threshold = equal_error_rate([1, 1, -1], [3.0, 1.0, 2.0])
    assert eer == pytest.approx(0.5) and threshold == pytest.approx(2.5)


def test_equal_error_rate_constant_scores():
    eer, threshold = equal_error_rate([1, -1, -1], [2.0, 2.0, 2.0])
    assert eer == 0.5 and threshold > 2.0


# --------------------------------------------------------------------------- curves


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_fa_fr_curve_matches_brute_force(seed):
    s, scores = make_scores(seed, ties=True)
    thresholds, far, frr = fa_fr_curve((s == 1).astype(int), scores)
    np.testing.assert_array_equal(thresholds, candidate_thresholds(scores))
    expected = np.array([brute_rates(s, scores, t) for t in thresholds])
    np.testing.assert_array_equal(far, expected[:, 0])
    np.testing.assert_array_equal(frr, expected[:, 1])
    assert (far[0], frr[0], far[-1], frr[-1]) == (1.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_roc_curve_agrees_with_fa_fr_curve(seed):
    s, scores = make_scores(seed, ties=True)
    far, tar, thresholds = roc_curve((s == 1).astype(int), scores)
    assert thresholds[0] == np.inf
    for f, t, th in zip(far[1:], tar[1:], thresholds[1:], strict=True):
        assert (f, 1 - t) == pytest.approx(brute_rates(s, scores, th))
    assert roc_curve(s, scores, drop_intermediate=True)[0].size <= far.size


# --------------------------------------------------------------------------- FRR at FAR


def brute_frr_at_far(s, scores, target):
    """Smallest FRR among the thresholds whose FAR is at most target."""
    rates = [brute_rates(s, scores, t) for t in candidate_thresholds(scores)]
    return min(frr for far, frr in rates if far <= target)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ties", [False, True])
def test_false_reject_at_false_accept_matches_brute_force(seed, ties):
    s, scores = make_scores(seed, n=300, ties=ties)
    targets = np.array([1.0, 0.5, 0.1, 0.05, 0.01, 0.0])
    expected = [brute_frr_at_far(s, scores, t) for t in targets]
    np.testing.assert_array_equal(false_reject_at_false_accept(s, scores, far=targets), expected)
    assert false_reject_at_false_accept(s, scores).shape == (3,)


def test_false_reject_at_false_accept_hand_example():
    s, scores = [1, 1, -1, -1], [3.0, 1.0, 2.0, 0.0]
    frr = false_reject_at_false_accept(s, scores, far=[1.0, 0.5, 0.0])
    np.testing.assert_array_equal(frr, [0.0, 0.0, 0.5])


@pytest.mark.parametrize("far", [-0.1, 1.5, np.nan, [0.1, 2.0]])
def test_false_reject_at_false_accept_rejects_bad_targets(far):
    with pytest.raises(ValueError, match="far targets"):
        false_reject_at_false_accept([1, -1], [1.0, 0.0], far=far)


# --------------------------------------------------------------------------- thresholds


def test_accuracy_at_threshold_hand_example():
    y, scores = [1, 0, 1, 0], [0.9, 0.8, 0.4, 0.1]
    assert accuracy_at_threshold(y, scores, 0.8) == 0.5  # 0.8 itself is accepted
    assert accuracy_at_threshold(y, scores, 0.85) == 0.75
    assert accuracy_at_threshold(y, scores, np.float32(0.25)) == 0.75
    assert accuracy_at_threshold(y, scores, np.inf) == 0.5
    with pytest.raises(ValueError, match="threshold"):
        accuracy_at_threshold(y, scores, np.nan)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_calibrate_threshold_strategies(seed):
    s, scores = make_scores(seed)
    assert calibrate_threshold(s, scores) == max_decision_accuracy(s, scores)[1]
    assert calibrate_threshold(s, scores, "accuracy") == max_decision_accuracy(s, scores)[1]
    assert calibrate_threshold(s, scores, "eer") == equal_error_rate(s, scores)[1]
    with pytest.raises(ValueError, match="'accuracy', 'eer'"):
        calibrate_threshold(s, scores, strategy="f1")


# --------------------------------------------------------------------------- bad input

ALL_FUNCTIONS = [
    max_decision_accuracy,
    equal_error_rate,
    roc_curve,
    fa_fr_curve,
    false_reject_at_false_accept,
    calibrate_threshold,
    lambda y, scores: accuracy_at_threshold(y, scores, 0.0),
]

BAD_INPUTS = [
    ([1, -1, 1], [0.1, np.nan, 0.3], "NaN"),
    ([1, -1, 1], [0.1, np.inf, 0.3], "infinity"),
    ([1, -1, 1], [0.1, 0.2], "different lengths"),
    ([1, -1], [[0.1], [0.2]], "1-D"),
    ([[1], [-1]], [0.1, 0.2], "1-D"),
    ([1, 1, 1], [0.1, 0.2, 0.3], "single class"),
    ([0, 0], [0.1, 0.2], "single class"),
    ([-1, 0, 1], [0.1, 0.2, 0.3], "pair labels must be"),
    ([1, 2], [0.1, 0.2], "pair labels must be"),
    ([], [], "empty"),
    ([1, -1], ["a", "b"], "numeric"),
]


@pytest.mark.parametrize("func", ALL_FUNCTIONS)
@pytest.mark.parametrize("y, scores, message", BAD_INPUTS)
def test_bad_input_raises(func, y, scores, message):
    with pytest.raises(ValueError, match=message):
        func(y, scores)


# --------------------------------------------------------------------------- properties


SMALL_INTEGERS = st.integers(-20, 20)


@st.composite
def labelled_scores(draw, elements=SMALL_INTEGERS):
    genuine = draw(st.lists(elements, min_size=1, max_size=30))
    impostor = draw(st.lists(elements, min_size=1, max_size=30))
    s = np.array([1] * len(genuine) + [-1] * len(impostor))
    return s, np.array(genuine + impostor, dtype=np.float64)


ANY_FINITE = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(labelled_scores(ANY_FINITE))
def test_property_bounds_and_threshold_consistency(data):
    s, scores = data
    acc, threshold = max_decision_accuracy(s, scores)
    majority = max(np.mean(s == 1), np.mean(s == -1))
    assert majority <= acc <= 1
    assert accuracy_at_threshold(s, scores, threshold) == acc
    eer, _ = equal_error_rate(s, scores)
    assert 0 <= eer <= 1
    frr = false_reject_at_false_accept(s, scores, far=[1.0, 0.3, 0.1, 0.0])
    assert frr[0] == 0 and np.all(np.diff(frr) >= 0) and np.all(frr <= 1)


@settings(max_examples=200, deadline=None)
@given(labelled_scores())
def test_property_invariant_under_increasing_transform(data):
    s, scores = data
    for transformed in (scores**3 + scores, np.exp(scores / 8.0), 2.0 * scores - 5.0):
        assert max_decision_accuracy(s, transformed)[0] == max_decision_accuracy(s, scores)[0]
        assert equal_error_rate(s, transformed)[0] == pytest.approx(
            equal_error_rate(s, scores)[0], abs=1e-12
        )


@settings(max_examples=100, deadline=None)
@given(labelled_scores())
def test_property_brute_force_twins(data):
    s, scores = data
    assert max_decision_accuracy(s, scores)[0] == brute_max_da(s, scores)[0]
    assert equal_error_rate(s, scores)[0] == pytest.approx(brute_eer(s, scores)[0], abs=1e-12)


# --------------------------------------------------------------------------- scorers


class FirstColumnVerifier(ClassifierMixin, BaseEstimator):
    """Minimal verifier: the score of a row is ``sign * X[:, 0]``."""

    def __init__(self, sign=1.0):
        self.sign = sign

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        return self.sign * np.asarray(X)[:, 0]


def make_verification_data(seed, n=90):
    rng = np.random.default_rng(seed)
    s = np.repeat([-1, 1], n // 2)
    X = rng.normal(size=(n, 3))
    X[:, 0] += s
    return X, s


def direct_fold_scores(metric, X, y, cv):
    return [metric(y[test], X[test, 0])[0] for _, test in cv.split(X, y)]


@pytest.mark.parametrize("coding", [0, 1])
def test_scorers_in_cross_val_score_equal_direct_calls(coding):
    X, s = make_verification_data(0)
    y = both_codings(s)[coding]
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    est = FirstColumnVerifier()
    acc = cross_val_score(est, X, y, cv=cv, scoring=max_accuracy_scorer)
    neg_eer = cross_val_score(est, X, y, cv=cv, scoring=neg_eer_scorer)
    assert np.isfinite(acc).all() and np.isfinite(neg_eer).all()
    np.testing.assert_array_equal(acc, direct_fold_scores(max_decision_accuracy, X, y, cv))
    np.testing.assert_array_equal(-neg_eer, direct_fold_scores(equal_error_rate, X, y, cv))


@pytest.mark.parametrize("name", ["max_accuracy", "neg_eer"])
def test_scorers_in_grid_search_prefer_the_informative_sign(name):
    X, s = make_verification_data(1)
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=1)
    scorer = get_scorer(name)
    grid = GridSearchCV(FirstColumnVerifier(), {"sign": [-1.0, 1.0]}, scoring=scorer, cv=cv)
    grid.fit(X, s)
    assert grid.best_params_ == {"sign": 1.0}
    metric = max_decision_accuracy if name == "max_accuracy" else equal_error_rate
    expected = np.mean(direct_fold_scores(metric, X, s, cv))
    expected = expected if name == "max_accuracy" else -expected
    assert grid.best_score_ == pytest.approx(expected, rel=1e-12)
    assert np.isfinite(grid.cv_results_["mean_test_score"]).all()


def test_get_scorer_unknown_name():
    assert get_scorer("max_accuracy") is max_accuracy_scorer
    with pytest.raises(ValueError, match="neg_eer"):
        get_scorer("accuracy")


def test_the_metrics_package_keeps_every_name_and_its_modules_export_them():
    """metrics.py became a package (issue 25): each name of ``metricfit.metrics.__all__`` is
    the object of one of its modules, and the modules export nothing else."""
    import metricfit.metrics as package
    from metricfit.metrics import cost, det, rates, scorers

    modules = (rates, cost, det, scorers)
    exported = [name for module in modules for name in module.__all__]
    assert sorted(exported) == sorted(package.__all__)
    for module in modules:
        for name in module.__all__:
            assert getattr(package, name) is getattr(module, name), name
    assert package.llr_response is scorers.llr_response and "llr_response" not in package.__all__
