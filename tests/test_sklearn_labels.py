"""Label coding as scikit-learn does it: ``classes_`` from y, ``predict`` in the user's coding,
and scikit-learn's built-in scorers right with every coding, in ``cross_validate`` /
``cross_val_score`` and ``GridSearchCV``, checked against a hand computation (plain NumPy
from ``decision_function`` / ``predict_proba``, no sklearn.metrics) over every estimator of
tests/estimator_registry.py.

``python tests/test_sklearn_labels.py`` prints the table scorer x coding (estimator vs hand).
"""

import warnings

import numpy as np
import pytest
from estimator_registry import NAMES, POINTS, Case
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import get_scorer
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score, cross_validate

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

SCORERS = ["accuracy", "balanced_accuracy", "f1", "precision", "recall", "roc_auc",
           "average_precision", "neg_log_loss"]
CODINGS = {"-1/+1": lambda s: s, "0/1": lambda s: (s + 1) // 2, "bool": lambda s: s > 0}
CV = StratifiedKFold(3, shuffle=True, random_state=0)


# -- the hand computation ------------------------------------------------------------------

def roc_auc_by_hand(positive, score):
    """P(score of a positive > score of a negative), ties counted 1/2 (Mann-Whitney)."""
    pos, neg = score[positive], score[~positive]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return greater / (pos.size * neg.size)


def average_precision_by_hand(positive, score):
    """sum_n (R_n - R_{n-1}) P_n over the distinct thresholds, highest first."""
    ap, previous_recall = 0.0, 0.0
    for t in np.unique(score)[::-1]:
        accepted = score >= t
        tp = np.sum(accepted & positive)
        recall, precision = tp / positive.sum(), tp / accepted.sum()
        ap += (recall - previous_recall) * precision
        previous_recall = recall
    return ap


def by_hand(name, est, X, y):
    """The scorer ``name`` for fitted ``est`` on (X, y), from first principles."""
    positive = np.asarray(y) == est.classes_[1]  # the user's "same" label: 1 / True
    decision = est.decision_function(X)
    accepted = decision >= 0
    tp, fp = np.sum(accepted & positive), np.sum(accepted & ~positive)
    fn, tn = np.sum(~accepted & positive), np.sum(~accepted & ~positive)
    if name == "accuracy":
        return (tp + tn) / positive.size
    if name == "balanced_accuracy":
        return (tp / (tp + fn) + tn / (tn + fp)) / 2
    if name == "precision":
        return tp / (tp + fp) if tp + fp else 0.0
    if name == "recall":
        return tp / (tp + fn)
    if name == "f1":
        return 2 * tp / (2 * tp + fp + fn)
    if name == "roc_auc":
        return roc_auc_by_hand(positive, decision)
    if name == "average_precision":
        score = est.predict_proba(X)[:, 1] if hasattr(est, "predict_proba") else decision
        return average_precision_by_hand(positive, score)
    if name == "neg_log_loss":
        p = np.clip(est.predict_proba(X)[:, 1], np.finfo(float).eps, 1 - np.finfo(float).eps)
        return np.mean(np.where(positive, np.log(p), np.log1p(-p)))
    raise KeyError(name)


def scorers_for(est):
    return [s for s in SCORERS if s != "neg_log_loss" or hasattr(est, "predict_proba")]


def quiet_fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


def hand_folds(est, X, y, names):
    """{scorer: [value per fold]} with the same folds as ``cv=CV``."""
    values = {name: [] for name in names}
    for train, test in CV.split(X, y):
        fitted = quiet_fit(clone(est), X[train], y[train])
        for name in names:
            values[name].append(by_hand(name, fitted, X[test], y[test]))
    return values


# -- the tests -------------------------------------------------------------------------------

def _one_per_class_and_kind(names):
    """The first registry entry of each (estimator class, input kind): variants of one class
    (solver, constraint) share the label-coding code, so one of each keeps the suite short."""
    seen, out = set(), []
    for name in names:
        case = Case(name)
        key = (name.split("-")[0], case.kind)  # registry names: 'Class' or 'Class-variant'
        if key not in seen:
            seen.add(key)
            out.append(name)
    return out


PAIR_NAMES = _one_per_class_and_kind([n for n in NAMES if Case(n).kind != POINTS])
POINT_NAMES = [n for n in NAMES if Case(n).kind == POINTS]


@pytest.mark.parametrize("coding", CODINGS)
@pytest.mark.parametrize("name", PAIR_NAMES)
def test_cross_validate_scorers_match_hand_computation(name, coding):
    case = Case(name)
    X, s = case.pairs(seed=3)
    y = CODINGS[coding](s)
    est = case.estimator()
    names = scorers_for(est)
    result = cross_validate(est, X, y, cv=CV, scoring=names, error_score="raise")
    expected = hand_folds(est, X, y, names)
    for scorer in names:
        np.testing.assert_allclose(result[f"test_{scorer}"], expected[scorer], rtol=1e-7,
                                   atol=1e-12, err_msg=f"{name} {coding} {scorer}")


@pytest.mark.parametrize("coding", CODINGS)
@pytest.mark.parametrize("name", PAIR_NAMES)
def test_fit_keeps_the_coding(name, coding):
    case = Case(name)
    X, s = case.pairs(seed=3)
    y = CODINGS[coding](s)
    est = quiet_fit(case.estimator(), X, y)
    np.testing.assert_array_equal(est.classes_, np.unique(y))
    assert est.classes_.dtype == np.asarray(y).dtype
    predicted = est.predict(X)
    assert predicted.dtype == np.asarray(y).dtype
    np.testing.assert_array_equal(predicted == est.classes_[1], est.decision_function(X) >= 0)
    assert est.score(X, y) == pytest.approx(np.mean(predicted == y))
    assert get_scorer("accuracy")(est, X, y) == pytest.approx(est.score(X, y))


def test_issue_example_accuracy_with_zero_one_labels():
    """cross_val_score(TSML(), pairs, y01, scoring='accuracy') equals the estimator's own
    .score on each fold (it was 0.37-0.6 against 0.83-1.0)."""
    case = Case("TSML")
    X, s = case.pairs(seed=3)
    y01 = (s + 1) // 2
    est = case.estimator()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        got = cross_val_score(est, X, y01, cv=CV, scoring="accuracy")
        own = [quiet_fit(clone(est), X[tr], y01[tr]).score(X[te], y01[te])
               for tr, te in CV.split(X, y01)]
        f1 = cross_val_score(est, X, y01, cv=CV, scoring="f1")
    np.testing.assert_allclose(got, own)
    assert np.all(f1 > 0.5)


@pytest.mark.parametrize("coding", CODINGS)
@pytest.mark.parametrize("name", ["TSML", "LDML", "ScoreFusion", "TSML-index"])
def test_grid_search_scores_match_hand_computation(name, coding):
    case = Case(name)
    X, s = case.pairs(seed=3)
    y = CODINGS[coding](s)
    est = case.estimator()
    grid = {"C": [0.01, 1.0]} if "C" in est.get_params() else {"lam": [1e-3, 1.0]}
    names = scorers_for(est)
    search = GridSearchCV(est, grid, scoring=names, refit="f1", cv=CV, error_score="raise")
    quiet_fit(search, X, y)
    for i, params in enumerate(search.cv_results_["params"]):
        expected = hand_folds(clone(est).set_params(**params), X, y, names)
        for scorer in names:
            assert search.cv_results_[f"mean_test_{scorer}"][i] == pytest.approx(
                np.mean(expected[scorer]), rel=1e-7, abs=1e-12), (scorer, params)
    np.testing.assert_array_equal(search.classes_, np.unique(y))
    assert set(np.unique(search.predict(X))) <= set(np.unique(y).tolist())


@pytest.mark.parametrize("coding", CODINGS)
@pytest.mark.parametrize("name", POINT_NAMES)
def test_point_estimators_scorers_after_calibration(name, coding):
    """MkNN fits identities; calibrate_threshold(pairs, y) adopts y's coding, then every
    scorer is right on pairs."""
    case = Case(name)
    est = case.estimator().fit(*case.fit_data())
    X_cal, s_cal = case.pairs(seed=2)
    X, s = case.pairs(seed=3)
    y = CODINGS[coding](s)
    est.calibrate_threshold(X_cal, CODINGS[coding](s_cal))
    np.testing.assert_array_equal(est.classes_, np.unique(y))
    for scorer in scorers_for(est):
        assert get_scorer(scorer)(est, X, y) == pytest.approx(
            by_hand(scorer, est, X, y), rel=1e-7, abs=1e-12), scorer


def scorer_table(names=("TSML", "LDML", "CosineSimilarity", "SiameseCNN", "ScoreFusion")):
    """Rows (estimator, scorer, coding, cross_val_score mean, hand mean) for the report."""
    rows = []
    for name in names:
        case = Case(name)
        X, s = case.pairs(seed=3)
        for coding, code in CODINGS.items():
            y = code(s)
            est = case.estimator()
            names_ = scorers_for(est)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = cross_validate(est, X, y, cv=CV, scoring=names_)
                expected = hand_folds(est, X, y, names_)
            for scorer in names_:
                rows.append((name, scorer, coding, result[f"test_{scorer}"].mean(),
                             np.mean(expected[scorer])))
    return rows


if __name__ == "__main__":
    print(f"{'estimator':17s} {'scorer':18s} {'coding':6s} {'sklearn':>9s} {'hand':>9s}")
    for row in scorer_table():
        print(f"{row[0]:17s} {row[1]:18s} {row[2]:6s} {row[3]:9.4f} {row[4]:9.4f}")
