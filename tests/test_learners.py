"""The pair learners (TSML, CSML): the pair API, a pair-adapted set of scikit-learn checks,
Pipeline / GridSearchCV, bad input, convergence, and that learning helps on unseen identities."""

import pickle
import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline

from metricfit import CSML, TSML, WCCN, WPCA
from metricfit.learners import score_kind
from metricfit.learners._base import cosine_rows
from metricfit.learners.ddml import DDML
from metricfit.metrics import max_decision_accuracy

LEARNERS = [TSML, CSML, DDML]
IDS = [c.__name__ for c in LEARNERS]


def make_identity_pairs(n_identities=60, n_pairs=400, d=12, signal=3, seed=0):
    """Pairs of noisy samples of identities whose means live in a `signal`-dim subspace;
    the other d - signal dims carry large nuisance noise a metric should learn to damp."""
    rng = np.random.default_rng(seed)
    means = np.zeros((n_identities, d))
    means[:, :signal] = rng.normal(size=(n_identities, signal))
    ids = rng.integers(0, n_identities, size=(n_pairs, 2))
    ids[: n_pairs // 2, 1] = ids[: n_pairs // 2, 0]
    noise = 0.3 * rng.normal(size=(n_pairs, 2, d))
    noise[..., signal:] *= 5
    pairs = means[ids] + noise + 0.5
    y = np.where(ids[:, 0] == ids[:, 1], 1, -1)
    return pairs, y


@pytest.fixture(scope="module")
def data():
    return make_identity_pairs()


@pytest.mark.parametrize("Learner", LEARNERS, ids=IDS)
def test_pair_api_shapes_and_attributes(Learner, data):
    pairs, y = data
    est = Learner(n_components=5)
    assert est.fit(pairs, y) is est
    assert est.components_.shape == (5, 12)
    assert est.n_features_in_ == 12 and est.n_iter_ > 0
    np.testing.assert_array_equal(est.classes_, [-1, 1])
    assert est.transform(pairs[:, 0]).shape == (400, 5)
    assert est.transform(pairs).shape == (400, 2, 5)
    scores = est.pair_score(pairs)
    assert scores.shape == (400,)
    if score_kind(est) == "cosine":
        assert np.all(np.abs(scores) <= 1 + 1e-12)
    else:  # minus a squared distance
        assert np.all(scores <= 0)
    np.testing.assert_allclose(est.decision_function(pairs), scores - est.threshold_)
    assert set(np.unique(est.predict(pairs))) <= {-1, 1}
    assert est.score(pairs, y) == np.mean(est.predict(pairs) == y)


@pytest.mark.parametrize("Learner", LEARNERS, ids=IDS)
def test_learning_beats_cosine_on_unseen_identities(Learner):
    train, y_train = make_identity_pairs(seed=1)
    test, y_test = make_identity_pairs(seed=2)  # other identity means: never seen
    baseline, _ = max_decision_accuracy(y_test, cosine_rows(test[:, 0], test[:, 1]))
    learned, _ = max_decision_accuracy(y_test, Learner().fit(train, y_train).pair_score(test))
    assert learned > baseline + 0.05


@pytest.mark.parametrize("Learner", LEARNERS, ids=IDS)
def test_labels_zero_one_equal_minus_one_plus_one(Learner, data):
    pairs, y = data
    a = Learner().fit(pairs, y)
    b = Learner().fit(pairs, (y + 1) // 2)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.threshold_ == b.threshold_
    assert b.score(pairs, (y + 1) // 2) == a.score(pairs, y)


@pytest.mark.parametrize("Learner", LEARNERS, ids=IDS)
def test_clone_params_and_init_only_assigns(Learner):
    est = Learner(lam=0.5, n_components=3, init="wccn", similar_only=True)
    params = est.get_params()
    assert params["lam"] == 0.5 and params["init"] == "wccn"
    cloned = clone(est)
    assert cloned.get_params() == params
    assert not [k for k in vars(cloned) if k.endswith("_")]
    cloned.set_params(lam=2.0)
    assert cloned.lam == 2.0 and est.lam == 0.5


@pytest.mark.parametrize("Learner", LEARNERS, ids=IDS)
def test_pickle_round_trip_gives_identical_scores(Learner, data):
    pairs, y = data
    est = Learner(n_components=4).fit(pairs, y)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.pair_score(pairs), est.pair_score(pairs))
    np.testing.assert_array_equal(restored.predict(pairs), est.predict(pairs))


@pytest.mark.parametrize("Learner", LEARNERS, ids=IDS)
def test_cross_val_score_is_finite(Learner, data):
    pairs, y = data
    scores = cross_val_score(Learner(max_iter=30), pairs, y, cv=3)
    assert scores.shape == (3,) and np.isfinite(scores).all()


@pytest.mark.parametrize("Learner", LEARNERS, ids=IDS)
def test_float32_pairs_give_float32_components(Learner, data):
    pairs, y = data
    est32 = Learner().fit(pairs.astype(np.float32), y)
    est64 = Learner().fit(pairs, y)
    assert est32.components_.dtype == np.float32
    assert est32.transform(pairs.astype(np.float32)).dtype == np.float32
    agree = np.mean(est32.predict(pairs) == est64.predict(pairs))
    assert agree > 0.97


def test_grid_search_over_lam_in_a_pipeline(data):
    pairs, y = data
    pipe = make_pipeline(WPCA(n_components=8), TSML(max_iter=50))
    search = GridSearchCV(pipe, {"tsml__lam": [1e-3, 1e-1, 10.0]}, cv=3)
    search.fit(pairs, y)
    assert search.best_params_["tsml__lam"] in (1e-3, 1e-1, 10.0)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert 0.5 < search.score(pairs, y) <= 1.0
    assert search.predict(pairs).shape == (400,)


def test_grid_search_with_verification_scorers(data):
    from metricfit.metrics import max_accuracy_scorer, neg_eer_scorer

    pairs, y = data
    search = GridSearchCV(
        TSML(max_iter=30), {"lam": [1e-2, 1.0]}, cv=3,
        scoring={"maxda": max_accuracy_scorer, "eer": neg_eer_scorer}, refit="maxda",
    )
    search.fit(pairs, y)
    assert np.all(search.cv_results_["mean_test_eer"] <= 0)
    assert np.all(search.cv_results_["mean_test_maxda"] > 0.5)


def test_tsml_wccn_init_is_the_wccn_matrix(data):
    pairs, y = data
    wccn = WCCN().fit(pairs, y)
    est = TSML(init="wccn", lam=1e6, max_iter=5).fit(pairs, y)
    np.testing.assert_allclose(est.components_, wccn.components_, atol=1e-4)


def test_similar_only_ignores_dissimilar_pairs(data):
    pairs, y = data
    est = TSML(similar_only=True).fit(pairs, y)
    scrambled = pairs.copy()
    scrambled[y == -1] = np.random.default_rng(9).normal(size=scrambled[y == -1].shape)
    other = TSML(similar_only=True).fit(scrambled, y)
    np.testing.assert_allclose(other.components_, est.components_, rtol=1e-12)
    assert other.threshold_ != est.threshold_  # calibrated on all pairs


def test_calibrate_threshold_strategies(data):
    from metricfit.metrics import equal_error_rate

    pairs, y = data
    est = TSML().fit(pairs, y)
    acc_threshold = est.threshold_
    est.calibrate_threshold(pairs, y, strategy="eer")
    _, eer_threshold = equal_error_rate(y, est.pair_score(pairs))
    assert est.threshold_ == pytest.approx(eer_threshold)
    assert est.threshold_ != acc_threshold
    with pytest.raises(ValueError, match="strategy"):
        est.calibrate_threshold(pairs, y, strategy="nonsense")


def test_warm_start_continues_from_the_previous_fit(data):
    pairs, y = data
    est = TSML(max_iter=5, warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        first = est.fit(pairs, y).components_.copy()
        second = est.fit(pairs, y).components_
        cold = TSML(max_iter=10).fit(pairs, y).components_
    assert not np.allclose(first, second)
    assert np.linalg.norm(second - cold) < np.linalg.norm(first - cold)


def test_convergence_warning_and_callback_and_verbose(data, capsys):
    pairs, y = data
    seen = []
    est = TSML(max_iter=3, verbose=1, callback=lambda A, it: seen.append((A.shape, it)))
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        est.fit(pairs, y)
    assert seen == [((12, 12), 1), ((12, 12), 2), ((12, 12), 3)]
    assert "iteration      3  cost" in capsys.readouterr().out


@pytest.mark.parametrize("Learner", LEARNERS, ids=IDS)
def test_bad_input_raises_value_error(Learner, data):
    pairs, y = data
    est = Learner()
    nan_pairs = pairs.copy()
    nan_pairs[3, 1, 2] = np.nan
    inf_pairs = pairs.copy()
    inf_pairs[0, 0, 0] = np.inf
    zero_pairs = pairs.copy()
    zero_pairs[5, 0] = 0.0
    cases = [
        (nan_pairs, y, "NaN"),
        (inf_pairs, y, "infinity"),
        (pairs[:, 0], y, "3-D array"),
        (pairs[None], y, "3-D array"),
        (np.swapaxes(pairs, 1, 2), y, "swapaxes"),
        (np.concatenate([pairs, pairs[:, :1]], axis=1), y, "pair axis"),
        (pairs, y * 2, "labels must be in"),
        (pairs, np.where(y > 0, 1, 0) - (np.arange(400) % 3 == 0), "labels must be in"),
        (pairs, np.ones(400), "single class"),
        (pairs, y[:-1], "400 pairs"),
    ]
    if score_kind(Learner()) == "cosine":  # distance learners take zero vectors (test_scale.py)
        cases.append((zero_pairs, y, "zero vector"))
    for X, labels, message in cases:
        with pytest.raises(ValueError, match=message):
            clone(est).fit(X, labels)
    with pytest.raises(ValueError, match=re.escape("n_components=13 must be <= n_features=12")):
        Learner(n_components=13).fit(pairs, y)
    with pytest.raises(ValueError, match="'lam' parameter"):
        Learner(lam=-1.0).fit(pairs, y)
    with pytest.raises(ValueError, match="'init' parameter"):
        Learner(init="random").fit(pairs, y)
    with pytest.raises(ValueError, match=r"init must have shape"):
        Learner(init=np.eye(3)).fit(pairs, y)
    fitted = Learner(max_iter=20).fit(pairs, y)
    with pytest.raises(ValueError, match="11 features, but the estimator was fitted with 12"):
        fitted.transform(pairs[:, 0, :11])
    with pytest.raises(ValueError, match="11 features, but the estimator was fitted with 12"):
        fitted.pair_score(pairs[:, :, :11])
    with pytest.raises(ValueError, match="NaN"):
        fitted.predict(nan_pairs)


@pytest.mark.parametrize("Learner", LEARNERS, ids=IDS)
def test_unfitted_learner_raises(Learner, data):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        Learner().pair_score(data[0])
