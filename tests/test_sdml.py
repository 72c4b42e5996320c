"""SDML (Qi et al. 2009): the metric is the graphical lasso's precision of
``M0^-1 + balance_param * sum y d d^T``; sparsity; the supervised form; errors."""

import warnings

import numpy as np
import pytest
from sklearn.covariance import graphical_lasso
from sklearn.exceptions import ConvergenceWarning

from metricfit import SDML, SDML_Supervised


def _pairs(n=80, d=5, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n, 2, d))
    P[: n // 2, 1] = P[: n // 2, 0] + 0.3 * rng.normal(size=(n // 2, d))
    return P, np.r_[np.ones(n // 2), -np.ones(n - n // 2)]


def test_metric_is_the_graphical_lasso_precision():
    P, y = _pairs()
    V = P[:, 0] - P[:, 1]
    S = np.eye(5) + 0.005 * (V * y[:, None]).T @ V
    assert np.linalg.eigvalsh(S)[0] > 0.1  # positive definite: no shift
    est = SDML(balance_param=0.005, sparsity_param=0.05).fit(P, y)
    _, M = graphical_lasso(S, alpha=0.05)
    np.testing.assert_allclose(est.get_mahalanobis_matrix(), M, rtol=1e-8, atol=1e-10)
    assert est.score(P, y) > 0.8


def test_more_sparsity_gives_a_sparser_metric():
    P, y = _pairs(d=8)
    zeros = [np.sum(np.abs(SDML(balance_param=0.005, sparsity_param=a).fit(P, y)
                           .get_mahalanobis_matrix()) < 1e-8) for a in (1e-4, 0.3)]
    assert zeros[1] > zeros[0]


def test_a_non_psd_input_is_shifted_with_a_warning():
    P, y = _pairs()
    with pytest.warns(ConvergenceWarning, match="balance_param"):
        est = SDML(balance_param=0.5).fit(P, y)
    assert np.linalg.eigvalsh(est.get_mahalanobis_matrix())[0] > 0


def test_supervised():
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = SDML_Supervised(balance_param=1e-3, random_state=0).fit(X, y)
    assert est.transform(X).shape == (150, 4)
    np.testing.assert_array_equal(est.classes_, [-1, 1])


@pytest.mark.parametrize("make, match", [
    (lambda P, y: SDML().fit(P[:, :, :1], y), "2 features"),
    (lambda P, y: SDML().fit(P[:, :1], y), "pairs"),
    (lambda P, y: SDML().fit(P, np.ones(len(y))), "y"),
    (lambda P, y: SDML(prior=np.ones((5, 5))).fit(P, y), "prior"),
    (lambda P, y: SDML().fit(P * 1e200, y), "escale"),
])
def test_bad_input_is_a_named_value_error(make, match):
    P, y = _pairs()
    with pytest.raises(ValueError, match=match):
        make(P, y)
