"""``init=`` of TSML / CSML accepts a transformer with ``components_`` (fitted LDA, PLDA,
WCCN), or one to fit on the training pairs, as well as arrays."""

import numpy as np
import pytest
from sklearn.base import clone

from metricfit import CSML, PLDA, TSML, WCCN
from metricfit.backend import LDA


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.RandomState(0)
    X = rng.randn(120, 2, 6)
    X[:60, 1] = X[:60, 0] + 0.4 * rng.randn(60, 6)
    y = np.r_[np.ones(60), -np.ones(60)]
    return X, y


@pytest.mark.parametrize("learner", [TSML, CSML])
@pytest.mark.parametrize("transformer", [LDA(), PLDA(), WCCN()])
def test_fitted_transformer_is_its_components(pairs, learner, transformer):
    X, y = pairs
    fitted = clone(transformer).fit(X, y)
    a = learner(init=fitted, lam=1e-2, max_iter=30).fit(X, y)
    b = learner(init=fitted.components_, lam=1e-2, max_iter=30).fit(X, y)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert not np.allclose(a.components_, np.eye(6))


@pytest.mark.parametrize("learner", [TSML, CSML])
def test_unfitted_transformer_is_fitted_on_the_training_pairs(pairs, learner):
    X, y = pairs
    lda = LDA()
    a = learner(init=lda, lam=1e-2, max_iter=30).fit(X, y)
    assert not hasattr(lda, "components_")  # a clone was fitted, not the user's object
    expected = LDA().fit(X, y).components_
    b = learner(init=expected, lam=1e-2, max_iter=30).fit(X, y)
    np.testing.assert_array_equal(a.components_, b.components_)


def test_transformer_start_is_the_regulariser_target(pairs):
    """With a huge lambda the learned map stays at the transformer's components."""
    X, y = pairs
    lda = LDA().fit(X, y)
    est = TSML(init=lda, lam=1e8, max_iter=50).fit(X, y)
    np.testing.assert_allclose(est.components_, lda.components_, atol=1e-6)


@pytest.mark.parametrize("learner", [TSML, CSML])
def test_transformer_shape_mismatch(pairs, learner):
    X, y = pairs
    lda = LDA(n_components=3).fit(X, y)
    with pytest.raises(ValueError, match=r"init must have shape \(n_components, n_features\) "
                                         r"= \(6, 6\), got \(3, 6\)"):
        learner(init=lda).fit(X, y)
    est = learner(init=lda, n_components=3, lam=1e-2, max_iter=10).fit(X, y)
    assert est.components_.shape == (3, 6)


def test_transformer_with_other_features(pairs):
    X, y = pairs
    lda = LDA().fit(X[:, :, :4], y)
    with pytest.raises(ValueError, match=r"got \(4, 4\)"):
        TSML(init=lda).fit(X, y)


def test_not_a_transformer(pairs):
    with pytest.raises(ValueError, match="'init' parameter"):
        TSML(init=object()).fit(*pairs)


def test_transformer_init_in_grid_search(pairs):
    """GridSearchCV clones the learner, un-fitting the transformer: it is refitted on each
    training set, and the search still runs."""
    from sklearn.model_selection import GridSearchCV

    X, y = pairs
    search = GridSearchCV(TSML(init=LDA(), max_iter=10), {"lam": [1e-2, 1.0]}, cv=2).fit(X, y)
    assert search.best_params_["lam"] in (1e-2, 1.0)
