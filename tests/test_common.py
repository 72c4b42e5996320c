"""scikit-learn's common checks, adapted to pair estimators, over every estimator of
tests/estimator_registry.py (one line there adds an estimator to all of them).

scikit-learn's own ``check_estimator`` feeds (n_samples, n_features) points with class
labels; pair estimators take pairs (n_pairs, 2, ...) with pair labels, so the checks are
re-stated here on pair data: clone, get/set_params, nothing done in ``__init__``, ``fit``
returns self, NotFittedError before fit, pickle round trip, float32 kept, feature-count
mismatch, random_state reproducibility, tags.
"""

import pickle
import warnings

import numpy as np
import pytest
from estimator_registry import IMAGE_PAIRS, INDEX_PAIRS, NAMES, POINTS, REGISTRY, Case
from sklearn.base import clone, is_classifier
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils import get_tags

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def fitted(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return case.estimator().fit(*case.fit_data())


def methods(est):
    """The methods that take pairs (``transform`` takes points when pairs are indices)."""
    index = getattr(est, "preprocessor", None) is not None
    return [m for m in ("pair_score", "decision_function", "predict", "predict_proba",
                        "transform") if hasattr(est, m) and not (index and m == "transform")]


@pytest.fixture(scope="module", params=NAMES)
def case(request):
    return Case(request.param)


@pytest.fixture(scope="module")
def fit_once(case):
    return fitted(case)


def test_clone_and_params_round_trip(case):
    est = case.estimator()
    params = est.get_params(deep=False)
    copy = clone(est)
    assert copy is not est and type(copy) is type(est)
    for name, value in copy.get_params(deep=False).items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, params[name])
        elif not hasattr(value, "fit"):
            assert value == params[name] or value is params[name], name
    assert est.set_params(**params) is est
    for name, value in est.get_params(deep=False).items():
        assert value is params[name], name


def test_init_does_nothing(case):
    """``__init__`` stores its arguments and nothing else (no validation, no state)."""
    est = case.estimator()
    assert set(vars(est)) == set(est.get_params(deep=False)), set(vars(est)) ^ set(
        est.get_params(deep=False))
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]


def test_fit_returns_self_and_not_fitted_before(case):
    est = case.estimator()
    X, _ = case.pairs()
    for method in methods(est):
        with pytest.raises(NotFittedError):
            getattr(est, method)(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert est.fit(*case.fit_data()) is est


def test_binary_classifier_of_pairs(case, fit_once):
    est = fit_once
    assert is_classifier(est)
    np.testing.assert_array_equal(est.classes_, [-1, 1])
    X, y = case.pairs()
    scores = est.decision_function(X)
    assert scores.shape == (len(y),) and np.isfinite(scores).all()
    np.testing.assert_array_equal(est.predict(X), np.where(scores >= 0, 1, -1))
    assert est.score(X, y) == np.mean(est.predict(X) == y)
    if hasattr(est, "predict_proba"):
        proba = est.predict_proba(X)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        assert np.all((proba >= 0) & (proba <= 1))


def test_tags_say_what_is_taken(case):
    tags = get_tags(case.estimator())
    assert tags.estimator_type == "classifier"
    assert tags.target_tags.required
    assert not tags.classifier_tags.multi_class
    assert tags.input_tags.pairs and tags.input_tags.three_d_array
    assert not tags.input_tags.pairwise  # X is not a kernel matrix: CV must split rows
    assert tags.input_tags.index_pairs == (case.kind == INDEX_PAIRS)
    assert tags.input_tags.two_d_array == (case.kind in (INDEX_PAIRS, POINTS))
    expected = {IMAGE_PAIRS: "images", POINTS: "points"}.get(case.kind)
    if expected:
        assert tags.input_tags.pair_input == expected


def test_pickle_round_trip_gives_identical_scores(case, fit_once):
    X, _ = case.pairs()
    copy = pickle.loads(pickle.dumps(fit_once))
    for method in methods(fit_once):
        np.testing.assert_array_equal(getattr(copy, method)(X), getattr(fit_once, method)(X))


def test_float32_is_preserved(case):
    """Fitted on float32, the estimator keeps float32 where its tags say so, and its scores
    are finite and close to the float64 fit's."""
    if case.kind == INDEX_PAIRS:
        pytest.skip("the dtype is the preprocessor's: covered by the vector-pair entry")
    case32 = Case(case.name, dtype=np.float32)
    est = fitted(case32)
    X, _ = case32.pairs()
    assert np.isfinite(est.decision_function(X)).all()
    tags = get_tags(est)
    if tags.transformer_tags is not None and hasattr(est, "transform"):
        out = est.transform(X)
        if "float32" in tags.transformer_tags.preserves_dtype:
            assert out.dtype == np.float32
        assert np.isfinite(out).all()


def test_feature_count_mismatch_raises(case, fit_once):
    X, _ = case.pairs()
    wrong = case.wrong_features(X)
    if wrong is None:
        pytest.skip("index pairs have no feature axis")
    for method in methods(fit_once):
        with pytest.raises(ValueError, match=r"\d+"):
            getattr(fit_once, method)(wrong)


def test_random_state_reproducibility(case):
    est = case.estimator()
    if "random_state" not in est.get_params():
        pytest.skip("no random_state")
    X, _ = case.pairs()
    first, second = fitted(case), fitted(case)
    np.testing.assert_array_equal(first.decision_function(X), second.decision_function(X))


def test_labels_coded_zero_one_come_back_zero_one(case):
    est = case.estimator()
    X, y = case.fit_data()
    if case.kind == POINTS:
        est.fit(X, y)
        pairs, s = case.pairs()
        est.calibrate_threshold(pairs, s > 0)  # booleans: classes_ follow
        np.testing.assert_array_equal(est.classes_, [False, True])
        assert est.predict(pairs).dtype == bool
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, (y + 1) // 2)
    np.testing.assert_array_equal(est.classes_, [0, 1])
    assert set(np.unique(est.predict(case.pairs()[0]))) <= {0, 1}


def test_registry_lists_every_public_estimator():
    import metricfit
    from metricfit.learners._base import PairClassifierMixin
    from metricfit.learners.fusion import ScoreFusion

    public = {name for name in metricfit.__all__
              if isinstance(getattr(metricfit, name), type)
              and issubclass(getattr(metricfit, name), PairClassifierMixin)}
    public.add(ScoreFusion.__name__)
    registered = {type(entry.factory()).__name__ for entry in REGISTRY.values()}
    assert public <= registered, public - registered


def test_every_estimator_declares_its_score_kind(case, fit_once):
    """The kind is a declared tag (metricfit.pairs.tags), read through a Pipeline too, and the
    scores keep to its range."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from metricfit.learners import score_kind
    from metricfit.pairs.tags import SCORE_KINDS

    kind = score_kind(case.estimator())
    assert kind in SCORE_KINDS
    assert score_kind(make_pipeline(FunctionTransformer(), case.estimator())) == kind
    scores = fit_once.pair_score(case.pairs()[0])
    if kind == "cosine":
        assert np.all(np.abs(scores) <= 1 + 1e-6)
    if kind == "probability":
        assert np.all((scores >= 0) & (scores <= 1))


def test_a_learner_that_declares_no_score_kind_is_refused():
    from sklearn.base import BaseEstimator

    from metricfit.learners import score_kind
    from metricfit.learners._base import PairLearnerMixin

    class Forgetful(PairLearnerMixin, BaseEstimator):
        pass

    with pytest.raises(TypeError, match="Forgetful declares no score kind"):
        score_kind(Forgetful())
    with pytest.raises(TypeError, match="declares no score kind"):
        Forgetful()._score_embedded(np.ones((1, 2)), np.ones((1, 2)))  # no silent cosine
