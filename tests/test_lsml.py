"""LSML (Liu et al. 2012): the hand-derived gradient against central differences, the fit on
quadruplets (vector and index), scikit-learn's conventions, the supervised form, errors."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from metricfit import LSML, LSML_Supervised
from metricfit.losses.lsml import LSMLObjective


def central_differences(f, theta, eps=1e-6):
    g = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = eps
        g[i] = (f(theta + e)[0] - f(theta - e)[0]) / (2 * eps)
    return g


def test_gradient_matches_central_differences():
    rng = np.random.default_rng(0)
    prior = rng.normal(size=(5, 5))
    prior = prior @ prior.T + np.eye(5)
    w = rng.random(40)
    f = LSMLObjective(rng.normal(size=(40, 5)), rng.normal(size=(40, 5)), w / w.sum(),
                      np.linalg.inv(prior))
    theta = (np.eye(5) + 0.3 * rng.normal(size=(5, 5))).ravel()
    _, grad = f(theta)
    assert np.abs(grad).max() > 1e-3
    np.testing.assert_allclose(grad, central_differences(f, theta), rtol=1e-6, atol=1e-8)


def test_objective_is_the_papers():
    rng = np.random.default_rng(1)
    ab, cd = rng.normal(size=(30, 3)), rng.normal(size=(30, 3))
    w = np.full(30, 1 / 30)
    L = np.eye(3) + 0.2 * rng.normal(size=(3, 3))
    M = L.T @ L
    Dab = np.sqrt(np.einsum("ij,jk,ik->i", ab, M, ab))
    Dcd = np.sqrt(np.einsum("ij,jk,ik->i", cd, M, cd))
    hinge = np.where(Dab > Dcd, (Dab - Dcd) ** 2, 0.0)
    expected = w @ hinge + np.trace(M) - np.linalg.slogdet(M)[1]
    assert LSMLObjective(ab, cd, w, np.eye(3))(L.ravel())[0] == pytest.approx(expected)


def _quadruplets(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(n, 4, d))
    Q[:, 1, 0] = Q[:, 0, 0] + 0.05 * rng.normal(size=n)  # (a, b) close along feature 0
    Q[:, 3, 0] = Q[:, 2, 0] + 3.0  # (c, d) far along feature 0
    return Q


def test_fit_orders_the_quadruplets():
    Q = _quadruplets()
    est = LSML().fit(Q)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        one_step = LSML(max_iter=1).fit(Q)
    assert est.score(Q) >= one_step.score(Q)
    assert est.score(Q) > 0.9
    np.testing.assert_array_equal(est.predict(Q), np.where(est.decision_function(Q) > 0, 1, -1))
    assert est.transform(Q[:, 0]).shape == (120, 3)
    assert clone(est).get_params() == LSML().get_params()


def test_index_quadruplets_give_the_vector_fit():
    Q = _quadruplets()
    points = Q.reshape(-1, 3)
    index = np.arange(points.shape[0]).reshape(-1, 4)
    np.testing.assert_allclose(LSML(preprocessor=points).fit(index).components_,
                               LSML().fit(Q).components_, rtol=1e-12)


def test_weights_are_normalised():
    Q = _quadruplets()
    a = LSML().fit(Q, weights=np.full(len(Q), 3.0))
    b = LSML().fit(Q)
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-10)


def test_supervised():
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    est = LSML_Supervised(random_state=0).fit(X, y)
    assert est.transform(X).shape == (150, 4)
    np.testing.assert_array_equal(est.classes_, [-1, 1])


@pytest.mark.parametrize("make, match", [
    (lambda Q: LSML().fit(Q[:, :3]), "quadruplets"),  # triplets given
    (lambda Q: LSML().fit(Q, weights=np.ones(3)), "weights"),
    (lambda Q: LSML().fit(Q, weights=-np.ones(len(Q))), "weights"),
    (lambda Q: LSML(preprocessor=Q.reshape(-1, 3)).fit(np.array([[0, 1, 2, 10 ** 6]])),
     "quadruplets|range|index"),
    (lambda Q: LSML(prior=np.eye(2)).fit(Q), "prior"),
    (lambda Q: LSML().fit(Q * 1e200), "escale"),
])
def test_bad_input_is_a_named_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make(_quadruplets())


def _tuple_cases():
    from metricfit import SCML
    rng = np.random.default_rng(3)
    T = rng.normal(size=(150, 3, 4))
    T[:, 1] = T[:, 0] + 0.2 * rng.normal(size=(150, 4))
    return [(lambda: LSML(max_iter=50), _quadruplets(d=4)),
            (lambda: SCML(n_basis=20, max_iter=500, output_iter=100, random_state=0), T)]


@pytest.mark.parametrize("case", range(2), ids=["LSML", "SCML"])
def test_tuple_learners_follow_the_common_conventions(case):
    """What tests/test_common.py checks of the registry's estimators, for the learners of
    quadruplets and triplets (the registry's suites feed pairs or labelled points)."""
    import pickle

    from sklearn.exceptions import NotFittedError

    make, tuples = _tuple_cases()[case]
    est = make()
    assert set(vars(est)) == set(est.get_params(deep=False))  # __init__ stores, nothing else
    assert clone(est).get_params() == est.get_params()
    for method in ("predict", "decision_function", "score", "transform"):
        with pytest.raises(NotFittedError):
            getattr(est, method)(tuples if method != "transform" else tuples[:, 0])
    assert est.fit(tuples) is est
    copy = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(copy.decision_function(tuples), est.decision_function(tuples))
    est32 = make().fit(tuples.astype(np.float32))
    assert est32.transform(tuples[:, 0].astype(np.float32)).dtype == np.float32
    with pytest.raises(ValueError, match=r"\d+"):
        est.decision_function(np.concatenate([tuples, tuples[..., :1]], axis=-1))
