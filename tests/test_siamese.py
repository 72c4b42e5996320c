"""The siamese learner base at estimator level: mappings, SGD (reproducible, early stopping keeps
the best validation model, learning curves), distance learners, input normalisation."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from test_learners import make_identity_pairs

from metricfit import TSML
from metricfit.learners.ddml import DDML
from metricfit.metrics import max_decision_accuracy


@pytest.fixture(scope="module")
def data():
    return make_identity_pairs(n_pairs=300, d=8, seed=3)


SGD = dict(solver="sgd", max_iter=1500, learning_rate=1e-3, batch_size=8,
           validation_interval=50, n_iter_no_change=5)


@pytest.mark.parametrize("Learner", [TSML, DDML])
def test_sgd_is_reproducible_bit_for_bit(Learner, data):
    pairs, y = data
    a = Learner(random_state=7, **SGD).fit(pairs, y)
    b = Learner(random_state=7, **SGD).fit(pairs, y)
    c = Learner(random_state=8, **SGD).fit(pairs, y)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.curves_ == b.curves_ and a.threshold_ == b.threshold_
    assert not np.array_equal(a.components_, c.components_)


@pytest.mark.parametrize("Learner", [TSML, DDML])
def test_sgd_keeps_the_best_validation_model(Learner, data):
    pairs, y = data
    est = Learner(random_state=0, validation_fraction=0.2, **SGD).fit(pairs, y)
    curves = est.curves_
    assert len(curves["step"]) == len(curves["validation"]) == len(curves["train"]) >= 2
    _, held_out = train_test_split(np.arange(len(y)), test_size=0.2, stratify=y, random_state=0)
    accuracy, _ = max_decision_accuracy(y[held_out], est.pair_score(pairs[held_out]))
    assert accuracy == max(curves["validation"])


def test_sgd_learns(data):
    pairs, y = data
    est = TSML(random_state=0, **SGD).fit(pairs, y)
    assert max(est.curves_["validation"]) >= est.curves_["validation"][0]
    assert est.n_iter_ > 0


@pytest.mark.parametrize("mapping, n_params", [("tanh", 5 * 8 + 5), ("mlp", 6 * 8 + 6 + 5 * 6 + 5)])
@pytest.mark.parametrize("Learner", [TSML, DDML])
def test_nonlinear_mappings_fit_transform_and_pickle(Learner, mapping, n_params, data):
    pairs, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = Learner(n_components=5, mapping=mapping, n_hidden=6, random_state=0,
                      max_iter=50).fit(pairs, y)
    assert est.params_.shape == (n_params,) and not hasattr(est, "components_")
    assert est.transform(pairs[:, 0]).shape == (300, 5)
    assert est.transform(pairs).shape == (300, 2, 5)
    assert np.all(np.abs(est.transform(pairs)) <= 1)  # tanh outputs
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.pair_score(pairs), est.pair_score(pairs))
    assert est.score(pairs, y) > 0.6


def test_refit_with_another_mapping_drops_stale_parameters(data):
    pairs, y = data
    est = TSML(n_components=3, max_iter=20).fit(pairs, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.set_params(mapping="tanh").fit(pairs, y)
    assert hasattr(est, "params_") and not hasattr(est, "components_")


def test_ddml_scores_are_minus_squared_distances(data):
    pairs, y = data
    est = DDML(n_components=4).fit(pairs, y)
    diff = (pairs[:, 0] - pairs[:, 1]) @ est.components_.T
    np.testing.assert_allclose(est.pair_distance(pairs), np.sum(diff**2, axis=1), rtol=1e-10)
    np.testing.assert_allclose(est.pair_score(pairs), -est.pair_distance(pairs))
    assert np.mean(est.predict(pairs) == y) == est.score(pairs, y)


def test_normalize_makes_the_model_scale_invariant(data):
    pairs, y = data
    est = DDML(normalize=True, n_components=4).fit(pairs, y)
    np.testing.assert_allclose(est.transform(3 * pairs), est.transform(pairs), rtol=1e-10)
    scaled = DDML(normalize=True, n_components=4).fit(5 * pairs, y)
    np.testing.assert_allclose(scaled.components_, est.components_, rtol=1e-8, atol=1e-10)


def test_bad_parameter_combinations(data):
    pairs, y = data
    with pytest.raises(ValueError, match="needs mapping='linear'"):
        TSML(mapping="tanh", init="wccn").fit(pairs, y)
    with pytest.raises(ValueError, match="flat parameter vector of length 45"):
        TSML(n_components=5, mapping="tanh", init=np.zeros(3)).fit(pairs, y)
    with pytest.raises(ValueError, match="'mapping' parameter"):
        TSML(mapping="cnn").fit(pairs, y)
    with pytest.raises(ValueError, match="'T' parameter"):
        DDML(T=0.0).fit(pairs, y)
    with pytest.raises(ValueError, match="'solver' parameter"):
        TSML(solver="adam").fit(pairs, y)
    with pytest.raises(ValueError, match="'validation_fraction' parameter"):
        TSML(solver="sgd", validation_fraction=1.0).fit(pairs, y)


def test_warm_start_after_a_change_of_mapping_starts_cold(data):
    pairs, y = data
    est = TSML(n_components=3, warm_start=True, max_iter=20).fit(pairs, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.set_params(mapping="tanh").fit(pairs, y)  # different parameter vector: cold start
        est.set_params(n_components=4, mapping="linear").fit(pairs, y)
    assert est.components_.shape == (4, 8)
