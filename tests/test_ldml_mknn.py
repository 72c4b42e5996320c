"""LDML (seed 001 2.3, eqs. 1-4), its projected gradient solver (Bertsekas 1976) and MkNN
(seed 001 section 3, eq. 5): known solutions, constraints, probabilities, the embedding, the
pair-adapted scikit-learn checks, leave-one-out calibration and bad input."""

import pickle
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize as scipy_minimize
from scipy.special import expit
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline

from metricfit import LDML, TSML, WPCA, MkNN
from metricfit.learners.ddml import DDML
from metricfit.losses import ldml as ldml_loss
from metricfit.optim.projected import minimize_projected, project_diagonal, project_psd

# ---------------------------------------------------------------- data


def make_identity_pairs(n_identities=60, n_pairs=400, d=12, signal=3, seed=0):
    """Pairs of noisy samples of identities whose means live in a `signal`-dim subspace; the
    other dims carry large nuisance noise (as in test_learners)."""
    rng = np.random.default_rng(seed)
    means = np.zeros((n_identities, d))
    means[:, :signal] = rng.normal(size=(n_identities, signal))
    ids = rng.integers(0, n_identities, size=(n_pairs, 2))
    ids[: n_pairs // 2, 1] = ids[: n_pairs // 2, 0]
    noise = 0.3 * rng.normal(size=(n_pairs, 2, d))
    noise[..., signal:] *= 5
    return means[ids] + noise + 0.5, np.where(ids[:, 0] == ids[:, 1], 1, -1)


def make_metric_pairs(weights, b=None, n=1500, seed=0, M=None):
    """Pairs labelled by the LDML model of a known metric: s = +1 w.p. sigma(b - d_M)."""
    rng = np.random.default_rng(seed)
    M = np.diag(weights) if M is None else M
    X1 = rng.normal(size=(n, M.shape[0]))
    X2 = X1 + rng.normal(size=X1.shape) * rng.uniform(0.2, 1.5, size=(n, 1))
    dist = np.einsum("ij,jk,ik->i", X1 - X2, M, X1 - X2)
    b = np.median(dist) if b is None else b
    y = np.where(rng.uniform(size=n) < expit(4 * (b - dist)), 1, -1)
    return np.stack([X1, X2], axis=1), y


def make_points(n_identities=8, per=12, d=4, spread=4.0, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_identities), per)
    X = spread * rng.normal(size=(n_identities, d))[y] + rng.normal(size=(y.size, d)) + 1.0
    return X, y


@pytest.fixture(scope="module")
def data():
    return make_identity_pairs()


@pytest.fixture(scope="module")
def points():
    return make_points()


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # negative-eigenvalue notice
        return fn(*args, **kwargs)


# ---------------------------------------------------------------- projected gradient solver


def box_quadratic(A, c):
    def f(x):
        return 0.5 * x @ A @ x - c @ x, A @ x - c
    return f


def test_projected_gradient_solves_a_box_constrained_quadratic():
    scales = np.array([0.5, 1.0, 3.0, 10.0, 2.0])
    c = np.array([2.0, -1.0, 6.0, 4.0, 0.5])  # unconstrained optimum c / scales
    result = minimize_projected(box_quadratic(np.diag(scales), c), np.full(5, 0.5),
                                lambda x: np.clip(x, 0, 1), tol=1e-10, max_iter=1000)
    assert result.success and result.status == 0 and result.residual < 1e-10
    np.testing.assert_allclose(result.x, np.clip(c / scales, 0, 1), atol=1e-9)


def test_projected_gradient_matches_bounded_lbfgs_on_a_coupled_quadratic(rng):
    B = rng.normal(size=(6, 6))
    A = B @ B.T + np.eye(6)
    c = 3 * rng.normal(size=6)
    result = minimize_projected(box_quadratic(A, c), np.zeros(6), lambda x: np.clip(x, -1, 1),
                                tol=1e-9, max_iter=5000)
    reference = scipy_minimize(box_quadratic(A, c), np.zeros(6), jac=True, method="L-BFGS-B",
                               bounds=[(-1, 1)] * 6, options={"gtol": 1e-12, "ftol": 1e-15})
    assert result.success
    np.testing.assert_allclose(result.x, reference.x, atol=1e-6)
    assert result.fun <= reference.fun + 1e-10


def test_projected_gradient_is_monotone_and_projects_the_start(rng):
    A = np.diag([1.0, 50.0, 0.1])
    seen = []
    result = minimize_projected(box_quadratic(A, np.array([5.0, 5.0, -5.0])), [9.0, -9.0, 9.0],
                                lambda x: np.clip(x, 0, 2), max_iter=500,
                                callback=lambda x, J, it: seen.append((J, it, x.copy())))
    costs = [J for J, _, _ in seen]
    assert np.all(np.diff(costs) <= 0)
    assert [it for _, it, _ in seen] == list(range(1, result.nit + 1))
    assert all(np.all((x >= 0) & (x <= 2)) for _, _, x in seen)
    np.testing.assert_allclose(result.x, [2.0, 0.1, 0.0], atol=1e-6)


def test_projected_gradient_reports_limits_and_bad_options():
    f = box_quadratic(np.diag([1.0, 100.0]), np.array([1.0, 1.0]))
    result = minimize_projected(f, [5.0, 5.0], lambda x: x, max_iter=2)
    assert result.status == 1 and not result.success and result.nit == 2
    nan = minimize_projected(lambda x: (np.nan, x), [1.0], lambda x: x)
    assert nan.status == 3 and not nan.success
    with pytest.raises(ValueError, match="sigma"):
        minimize_projected(f, [0.0, 0.0], lambda x: x, sigma=2.0)
    with pytest.raises(ValueError, match="NaN"):
        minimize_projected(f, [np.nan, 0.0], lambda x: x)


def test_matrix_projections(rng):
    M = rng.normal(size=(5, 5))
    P = project_psd(M)
    np.testing.assert_allclose(P, P.T)
    assert np.linalg.eigvalsh(P).min() >= -1e-12
    np.testing.assert_allclose(project_psd(P), P, atol=1e-12)  # idempotent
    np.testing.assert_array_equal(project_diagonal(M), np.diag(np.diag(M)))


def test_projected_gradient_lowers_the_ldml_objective_monotonically():
    pairs, y = make_identity_pairs(n_pairs=200, d=5, signal=2)
    f = ldml_loss.objective(pairs[:, 0], pairs[:, 1], y, lam=1e-3)
    d = 5

    def project(theta):
        out = theta.copy()
        out[:-1] = project_psd(theta[:-1].reshape(d, d)).ravel()
        return out

    costs = []
    result = minimize_projected(f, ldml_loss.pack(np.eye(d), 3.0), project, max_iter=100,
                                callback=lambda x, J, it: costs.append(J))
    assert len(costs) == result.nit > 5
    assert np.all(np.diff(costs) <= 1e-12 * abs(costs[0]))
    assert costs[-1] < float(f(ldml_loss.pack(np.eye(d), 3.0))[0])


# ---------------------------------------------------------------- LDML: the model


@pytest.mark.parametrize("constraint", [None, "diagonal", "psd"])
def test_ldml_recovers_a_known_diagonal_metric(constraint):
    weights = np.array([3.0, 0.2, 1.0, 0.0, 2.0, 0.5])
    pairs, y = make_metric_pairs(weights)
    est = quiet(LDML(lam=1e-4, constraint=constraint).fit, pairs, y)
    learned = np.diag(est.metric_)
    assert np.corrcoef(learned, weights)[0, 1] > 0.95
    off = est.metric_ - np.diag(learned)
    assert np.abs(off).max() < 0.2 * learned.max()
    assert est.score(pairs, y) > 0.75


def test_psd_and_diagonal_constraints_hold_where_the_free_metric_breaks_them():
    # similar pairs differ *more* along feature 0: the free M wants a negative weight there
    pairs, y = make_metric_pairs(None, M=np.diag([-1.0, 1.0, 2.0, 0.5]), b=0.0)
    with pytest.warns(UserWarning, match="negative eigenvalues"):
        free = LDML().fit(pairs, y)
    assert np.linalg.eigvalsh(0.5 * (free.metric_ + free.metric_.T)).min() < -0.1
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no negative-eigenvalue warning
        psd = LDML(constraint="psd").fit(pairs, y)
    with pytest.warns(UserWarning, match="negative eigenvalues"):
        diag = LDML(constraint="diagonal", init=np.ones((4, 4))).fit(pairs, y)
    np.testing.assert_allclose(psd.metric_, psd.metric_.T, atol=1e-12)
    assert np.linalg.eigvalsh(psd.metric_).min() >= -1e-10
    assert np.count_nonzero(diag.metric_ - np.diag(np.diag(diag.metric_))) == 0
    assert np.diag(diag.metric_).min() < 0  # diagonal, not PSD: negative weights allowed


def test_ldml_callback_sees_a_monotone_objective_under_a_constraint(data):
    pairs, y = data
    seen = []
    est = LDML(constraint="psd", max_iter=40, tol=0.0,
               callback=lambda M, b, it: seen.append((M, b, it)))
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        est.fit(pairs, y)
    f = ldml_loss.objective(pairs[:, 0], pairs[:, 1], y, lam=est.lam)
    costs = [float(f(ldml_loss.pack(M, b))[0]) for M, b, _ in seen]
    assert [it for _, _, it in seen] == list(range(1, 41)) and est.n_iter_ == 40
    assert np.all(np.diff(costs) <= 1e-12 * costs[0])


def test_predict_proba_pair_score_and_the_half_probability_rule(data):
    pairs, y = data
    est = quiet(LDML().fit, pairs, y)
    proba = est.predict_proba(pairs)
    assert proba.shape == (400, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    p = ldml_loss.pair_probability(est.metric_, est.bias_, pairs[:, 0], pairs[:, 1])
    np.testing.assert_allclose(proba[:, 1], p, rtol=1e-10, atol=1e-15)
    scores = est.pair_score(pairs)
    np.testing.assert_allclose(scores, est.bias_ - est.pair_distance(pairs))
    np.testing.assert_allclose(expit(scores), p, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(est.decision_function(pairs), scores - est.threshold_)
    est.threshold_ = 0.0  # the model's own rule: similar iff p >= 0.5
    np.testing.assert_array_equal(est.predict(pairs) == 1, p >= 0.5)


def test_transform_reproduces_a_psd_metric_and_only_the_psd_part_otherwise(data):
    pairs, y = data
    est = LDML(constraint="psd").fit(pairs, y)
    L = est.components_
    assert L.shape == (12, 12)
    np.testing.assert_allclose(L.T @ L, est.metric_, atol=1e-10)
    embedded = est.transform(pairs)
    assert embedded.shape == (400, 2, 12)
    np.testing.assert_allclose(est.transform(pairs[:, 0]), embedded[:, 0])
    dist = np.sum((embedded[:, 0] - embedded[:, 1]) ** 2, axis=1)
    np.testing.assert_allclose(dist, est.pair_distance(pairs), rtol=1e-8, atol=1e-8)

    broken, s = make_metric_pairs(None, M=np.diag([-1.0, 1.0, 2.0]), b=0.0, n=600)
    with pytest.warns(UserWarning, match="PSD part only"):
        free = LDML().fit(broken, s)
    D = broken[:, 0] - broken[:, 1]
    np.testing.assert_allclose(free.pair_distance(broken),  # M itself, not its PSD part
                               np.einsum("ij,jk,ik->i", D, free.metric_, D), rtol=1e-10)
    E = free.transform(broken)
    assert not np.allclose(np.sum((E[:, 0] - E[:, 1]) ** 2, axis=1), free.pair_distance(broken))


def test_ldml_attributes_labels_and_float32(data):
    pairs, y = data
    est = quiet(LDML().fit, pairs, y)
    assert est.metric_.shape == (12, 12) and isinstance(est.bias_, float)
    assert est.n_features_in_ == 12 and est.n_iter_ > 0
    np.testing.assert_array_equal(est.classes_, [-1, 1])
    other = quiet(LDML().fit, pairs, (y + 1) // 2)
    np.testing.assert_array_equal(other.metric_, est.metric_)
    assert other.threshold_ == est.threshold_
    est32 = quiet(LDML().fit, pairs.astype(np.float32), y)
    assert est32.metric_.dtype == np.float32 and est32.components_.dtype == np.float32
    assert np.mean(est32.predict(pairs) == est.predict(pairs)) > 0.97


def test_ldml_sgd_zeros_init_and_warm_start(data):
    pairs, y = data
    sgd = quiet(LDML(solver="sgd", learning_rate=1e-3, momentum=0.99, batch_size=20,
                     max_iter=3000, validation_interval=100, random_state=0).fit, pairs, y)
    assert sgd.score(pairs, y) > 0.75 and 0 < sgd.n_iter_ <= 3000
    again = quiet(LDML(solver="sgd", learning_rate=1e-3, momentum=0.99, batch_size=20,
                       max_iter=3000, validation_interval=100, random_state=0).fit, pairs, y)
    np.testing.assert_array_equal(again.metric_, sgd.metric_)
    zeros = quiet(LDML(init="zeros", constraint="diagonal").fit, pairs, y)
    assert zeros.score(pairs, y) > 0.75
    warm = LDML(constraint="psd", max_iter=3, warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        first = warm.fit(pairs, y).metric_.copy()
        second = warm.fit(pairs, y).metric_
        cold = LDML(constraint="psd", max_iter=6).fit(pairs, y).metric_
    assert not np.allclose(first, second)
    assert np.linalg.norm(second - cold) < np.linalg.norm(first - cold)


# ---------------------------------------------------------------- LDML: scikit-learn checks


def test_ldml_clone_params_and_init_only_assigns():
    est = LDML(lam=0.5, constraint="psd", init="zeros", max_iter=7)
    params = est.get_params()
    assert params["lam"] == 0.5 and params["constraint"] == "psd" and params["init"] == "zeros"
    cloned = clone(est)
    assert cloned.get_params() == params
    assert not [k for k in vars(cloned) if k.endswith("_")]
    cloned.set_params(lam=2.0)
    assert cloned.lam == 2.0 and est.lam == 0.5


@pytest.mark.parametrize("constraint", [None, "psd"])
def test_ldml_fit_returns_self_and_pickle_gives_identical_scores(constraint, data):
    pairs, y = data
    est = LDML(constraint=constraint)
    assert quiet(est.fit, pairs, y) is est
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.pair_score(pairs), est.pair_score(pairs))
    np.testing.assert_array_equal(restored.predict_proba(pairs), est.predict_proba(pairs))
    np.testing.assert_array_equal(restored.transform(pairs), est.transform(pairs))


def test_ldml_cross_val_score_and_grid_search_in_a_pipeline(data):
    pairs, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        scores = cross_val_score(LDML(max_iter=30), pairs, y, cv=3)
        pipe = make_pipeline(WPCA(n_components=6), LDML(max_iter=50))
        search = GridSearchCV(pipe, {"ldml__lam": [1e-3, 1e-1, 10.0]}, cv=3).fit(pairs, y)
    assert scores.shape == (3,) and np.isfinite(scores).all()
    assert search.best_params_["ldml__lam"] in (1e-3, 1e-1, 10.0)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert 0.5 < search.score(pairs, y) <= 1.0
    assert search.predict_proba(pairs).shape == (400, 2)


def test_ldml_bad_input_raises_value_error(data):
    pairs, y = data
    nan_pairs = pairs.copy()
    nan_pairs[3, 1, 2] = np.nan
    cases = [
        (nan_pairs, y, "NaN"),
        (pairs[:, 0], y, "3-D array"),
        (np.swapaxes(pairs, 1, 2), y, "swapaxes"),
        (np.concatenate([pairs, pairs[:, :1]], axis=1), y, "pair axis"),
        (pairs, y * 2, "labels must be in"),
        (pairs, np.where(y > 0, 1, 0) - (np.arange(400) % 3 == 0), "labels must be in"),
        (pairs, np.ones(400), "single class"),
        (pairs, y[:-1], "400 pairs"),
    ]
    for X, labels, message in cases:
        with pytest.raises(ValueError, match=message):
            LDML().fit(X, labels)
    with pytest.raises(ValueError, match=r"init must have shape \(n_features, n_features\)"):
        LDML(init=np.eye(3)).fit(pairs, y)
    with pytest.raises(ValueError, match="finite"):
        LDML(init=np.full((12, 12), np.nan)).fit(pairs, y)
    with pytest.raises(ValueError, match="'init' parameter"):
        LDML(init="random").fit(pairs, y)
    with pytest.raises(ValueError, match="'constraint' parameter"):
        LDML(constraint="low-rank").fit(pairs, y)
    with pytest.raises(ValueError, match="'lam' parameter"):
        LDML(lam=-1.0).fit(pairs, y)
    with pytest.raises(NotFittedError):
        LDML().pair_score(pairs)
    fitted = LDML(constraint="psd", max_iter=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted.fit(pairs, y)
    for method in (fitted.pair_score, fitted.predict_proba, fitted.pair_distance):
        with pytest.raises(ValueError, match="11 features, but the estimator was fitted with 12"):
            method(pairs[:, :, :11])
    with pytest.raises(ValueError, match="11 features, but the estimator was fitted with 12"):
        fitted.transform(pairs[:, 0, :11])
    with pytest.raises(ValueError, match="NaN"):
        fitted.predict(nan_pairs)


# ---------------------------------------------------------------- MkNN


def brute_force_mknn(E_train, labels, A, B, k):
    """Eq. 5 by a loop over the classes, neighbours by full sorting."""
    out = np.empty(len(A))
    for row, (a, b) in enumerate(zip(A, B, strict=True)):
        na = labels[np.argsort(np.sum((E_train - a) ** 2, axis=1))[:k]]
        nb = labels[np.argsort(np.sum((E_train - b) ** 2, axis=1))[:k]]
        out[row] = sum(np.sum(na == c) * np.sum(nb == c) for c in np.unique(labels)) / k ** 2
    return out


def normalise(E):
    return E / np.linalg.norm(E, axis=1, keepdims=True)


def query_pairs(X, y, n=60, seed=1):
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, len(X), size=(2, n))
    jitter = 0.3 * rng.normal(size=(n, 2, X.shape[1]))
    return np.stack([X[i], X[j]], axis=1) + jitter, np.where(y[i] == y[j], 1, -1)


@pytest.mark.parametrize("k", [1, 5, 11])
def test_mknn_equation_5_against_a_brute_force_twin(k, points):
    X, y = points
    labels = np.array(list("abcdefgh"))[y]  # any label values
    est = MkNN(n_neighbors=k).fit(X, labels)
    pairs, _ = query_pairs(X, y)
    p = est.pair_score(pairs)
    np.testing.assert_allclose(p, brute_force_mknn(X, labels, pairs[:, 0], pairs[:, 1], k),
                               atol=1e-12)
    assert np.all((p >= 0) & (p <= 1))
    proba = est.predict_proba(pairs)
    np.testing.assert_allclose(proba[:, 1], p)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(est.decision_function(pairs), p - est.threshold_)
    np.testing.assert_array_equal(est.classes_, [-1, 1])
    np.testing.assert_array_equal(est.identities_, list("abcdefgh"))
    np.testing.assert_array_equal(est.transform(pairs), pairs)  # metric None: identity


def test_mknn_is_one_for_single_class_neighbourhoods_and_separates_identities(points):
    X, y = points
    far = np.vstack([X, [[100.0] * 4] * 3 + np.arange(3)[:, None]])
    labels = np.r_[y, [99] * 3]
    est = MkNN(n_neighbors=3).fit(far, labels)
    pair = np.array([[[100.2] * 4, [101.1] * 4]])
    assert est.pair_score(pair)[0] == 1.0
    assert est.pair_score(np.array([[[100.2] * 4, X[0]]]))[0] == 0.0
    pairs, s = query_pairs(X, y, n=200)
    assert MkNN(n_neighbors=5).fit(X, y).score(pairs, s) > 0.85


def test_mknn_calibrates_leave_one_out():
    # 1-D, k = 1: each point's nearest *other* point has another identity, except B and C
    # whose nearest others are both A. Counting itself, every pair would be scored exactly.
    X = np.array([[0.0], [10.0], [0.1], [10.1]])
    labels = np.array(["A", "A", "B", "C"])
    est = MkNN(n_neighbors=1).fit(X, labels)
    index_pairs = np.array([[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]])
    np.testing.assert_array_equal(est._loo_pair_score(index_pairs), [0, 0, 0, 0, 0, 1])
    assert est.threshold_ > 1  # leave-one-out: rejecting every pair is the most accurate
    np.testing.assert_array_equal(est.pair_score(X[index_pairs]), [1, 0, 0, 0, 0, 0])
    # exact duplicates of another identity: the point itself is left out, not its twin
    twins = MkNN(n_neighbors=1).fit(np.array([[0.0], [0.0], [5.0], [5.2]]), [0, 1, 2, 2])
    np.testing.assert_array_equal(twins._loo_pair_score(np.array([[0, 1], [2, 3]])), [0, 1])


def test_mknn_and_nca_calibrate_on_the_shared_training_pairs():
    """One home for the calibration pairs (issue 25): MkNN draws distinct pairs among at most
    MAX_CALIBRATION_POINTS points, NCA pairs with replacement, both from the fixed seed."""
    from metricfit.learners import mknn, nca
    from metricfit.learners._base import calibration_pairs

    assert mknn.calibration_pairs is nca.calibration_pairs is calibration_pairs
    codes = np.repeat(np.arange(40), 30)
    pairs, s = calibration_pairs(codes, 500, replace=False, max_points=300)
    assert np.unique(pairs).size <= 300 and len(set(map(tuple, pairs))) == pairs.shape[0]
    np.testing.assert_array_equal(np.where(codes[pairs[:, 0]] == codes[pairs[:, 1]], 1, -1), s)
    again, _ = calibration_pairs(codes, 500, replace=False, max_points=300)
    np.testing.assert_array_equal(pairs, again)  # the fixed seed: the same pairs on every fit
    with pytest.raises(ValueError, match="MkNN needs at least two identities"):
        calibration_pairs(np.arange(5), replace=False, what="MkNN")


def test_mknn_with_a_fitted_cosine_tsml_uses_normalised_embeddings(data, points):
    X, y = points
    tsml = TSML(n_components=3).fit(make_identity_pairs(d=4, signal=2)[0],
                                    make_identity_pairs(d=4, signal=2)[1])
    est = MkNN(n_neighbors=4, metric=tsml).fit(X, y)
    assert est.metric_ is tsml  # used as given, not cloned
    pairs, _ = query_pairs(X, y)
    E = normalise(tsml.transform(X))
    expected = brute_force_mknn(E, y, normalise(tsml.transform(pairs[:, 0])),
                                normalise(tsml.transform(pairs[:, 1])), 4)
    np.testing.assert_allclose(est.pair_score(pairs), expected, atol=1e-12)
    np.testing.assert_allclose(est.pair_score(3.0 * pairs), est.pair_score(pairs))  # cosine
    np.testing.assert_allclose(est.embedding_, E, atol=1e-12)
    np.testing.assert_allclose(est.transform(X), tsml.transform(X))


@pytest.mark.parametrize("Metric", [DDML, LDML])
def test_mknn_with_a_fitted_distance_metric(Metric, points):
    X, y = points
    pairs_train, s_train = make_identity_pairs(d=4, signal=2)
    metric = quiet(Metric(max_iter=50).fit, pairs_train, s_train)
    est = MkNN(n_neighbors=4, metric=metric).fit(X, y)
    pairs, _ = query_pairs(X, y)
    E = metric.transform(X)
    expected = brute_force_mknn(E, y, metric.transform(pairs[:, 0]),
                                metric.transform(pairs[:, 1]), 4)
    np.testing.assert_allclose(est.pair_score(pairs), expected, atol=1e-12)
    np.testing.assert_allclose(est.embedding_, E)  # distance metric: no normalisation


def test_mknn_with_a_pipeline_metric_and_frozen_for_model_selection(points):
    X, y = points
    pairs_train, s_train = make_identity_pairs(d=4, signal=2)
    pipe = make_pipeline(WPCA(n_components=3), TSML()).fit(pairs_train, s_train)
    est = MkNN(n_neighbors=3, metric=pipe).fit(X, y)
    np.testing.assert_allclose(est.embedding_, normalise(pipe.transform(X)), atol=1e-12)
    with pytest.raises(ValueError, match="not fitted"):
        clone(MkNN(metric=pipe)).fit(X, y)  # clone unfits an estimator parameter
    frozen = clone(MkNN(n_neighbors=3, metric=FrozenEstimator(pipe))).fit(X, y)
    pairs, _ = query_pairs(X, y)
    np.testing.assert_array_equal(frozen.pair_score(pairs), est.pair_score(pairs))


def test_mknn_calibrate_threshold_clone_and_pickle(points):
    X, y = points
    est = MkNN(n_neighbors=5).fit(X, y)
    pairs, s = query_pairs(X, y, n=100)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.pair_score(pairs), est.pair_score(pairs))
    np.testing.assert_array_equal(restored.predict(pairs), est.predict(pairs))
    assert est.calibrate_threshold(pairs, s, strategy="eer") is est
    assert 0 <= est.threshold_ <= 1
    cloned = clone(MkNN(n_neighbors=7))
    assert cloned.get_params() == {"n_neighbors": 7, "metric": None, "preprocessor": None}
    assert not [k for k in vars(cloned) if k.endswith("_")]


def test_mknn_bad_input_raises_value_error(points):
    X, y = points
    with pytest.raises(ValueError, match="not fitted"):
        MkNN(metric=TSML()).fit(X, y)
    with pytest.raises(ValueError, match="transform method"):
        MkNN(metric="euclidean").fit(X, y)
    with pytest.raises(ValueError, match=r"n_neighbors=96 must be <= n_samples - 1 = 95"):
        MkNN(n_neighbors=96).fit(X, y)
    with pytest.raises(ValueError, match="'n_neighbors' parameter"):
        MkNN(n_neighbors=0).fit(X, y)
    nan = X.copy()
    nan[4, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MkNN().fit(nan, y)
    with pytest.raises(ValueError, match="2-D array"):
        MkNN().fit(X[None], y)
    with pytest.raises(ValueError, match="shape"):
        MkNN().fit(X, y[:-1])
    with pytest.raises(ValueError, match="two identities"):
        MkNN().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="two identities"):
        MkNN(n_neighbors=2).fit(X[:5], np.arange(5))  # no similar pair
    with pytest.raises(NotFittedError):
        MkNN().pair_score(np.stack([X, X], axis=1))
    est = MkNN().fit(X, y)
    with pytest.raises(ValueError, match="3 features, but the estimator was fitted with 4"):
        est.pair_score(np.stack([X[:, :3], X[:, :3]], axis=1))
    with pytest.raises(ValueError, match="pair axis"):
        est.pair_score(np.stack([X, X, X], axis=1))
    pairs = np.stack([X, X], axis=1)
    pairs[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.predict(pairs)
