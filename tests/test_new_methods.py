"""The methods added by issue 15 (tsml-wccn-sim, csml-sim, ddml-wccn): built as documented and
run end to end on the embedded digits protocol, like the Table I methods."""

import numpy as np
import pytest
from sklearn.datasets import load_digits

from metricfit.experiments import verification
from metricfit.learners import CSML, DDML, TSML

NEW = {
    "tsml-wccn-sim": (TSML, "wccn", True),
    "csml-sim": (CSML, "auto", True),
    "ddml-wccn": (DDML, "wccn", False),
}


@pytest.mark.parametrize("name", sorted(NEW))
def test_new_methods_are_listed_and_built_as_documented(name):
    cls, init, similar_only = NEW[name]
    assert name in verification.METHODS and verification.has_lam(name)
    est = verification.make_method(name, lam=0.1, max_iter=7)
    assert type(est) is cls
    assert (est.init, est.similar_only, est.lam, est.max_iter) == (init, similar_only, 0.1, 7)
    assert verification.resolve_methods([name]) == [name]


@pytest.fixture(scope="module")
def digits_run():
    digits = load_digits()
    vectors = digits.images.reshape(len(digits.images), -1).astype(np.float64)
    config = verification.ExperimentConfig(methods=("baseline", "wccn", *sorted(NEW)),
                                           n_components=16, lams=(0.01, 0.1), max_iter=50)
    (results,) = verification.run_digits(vectors, digits.target, config=config, n_repeats=1)
    return {r.method: r for r in results}


@pytest.mark.parametrize("name", sorted(NEW))
def test_new_methods_run_on_digits_and_learn(digits_run, name):
    r = digits_run[name]
    assert r.lam in (0.01, 0.1) and np.isfinite(r.threshold)
    assert np.isfinite(r.scores).all() and r.scores.shape == r.y.shape
    assert 0.5 < r.accuracy <= 1 and 0 <= r.eer < 0.5
    # learned from pairs of seen digit classes: better than the raw cosine on new images
    assert r.maxda > digits_run["baseline"].maxda


@pytest.mark.parametrize("new, old", [("tsml-wccn-sim", "tsml-wccn"), ("csml-sim", "csml-i"),
                                      ("ddml-wccn", "ddml-i")])
def test_the_new_flags_change_the_fit(new, old):
    """The similar-only flag and the WCCN start are not ignored: on the same pairs the new
    method's matrix differs from the Table I method it varies."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2, 6))
    X[:30, 1] = X[:30, 0] + 0.3 * rng.normal(size=(30, 6))
    y = np.r_[np.ones(30), -np.ones(30)]
    a = verification.make_method(new, lam=0.1, max_iter=20).fit(X, y)
    b = verification.make_method(old, lam=0.1, max_iter=20).fit(X, y)
    assert a.components_.shape == b.components_.shape == (6, 6)
    assert not np.allclose(a.components_, b.components_, atol=1e-3)
