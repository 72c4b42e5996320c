"""NCA (seed 003): the blocked kernel against the plain-NumPy twin and scikit-learn's formula,
finite differences (linear and MLP), memory, the estimator and its bad-input set."""

import tracemalloc

import numpy as np
import pytest
from _reference import central_differences, nca_cost_grad_ref, relative_error
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import NeighborhoodComponentsAnalysis

from metricfit import NCA
from metricfit.losses import nca
from metricfit.losses._nca_kernels import KEPT_FACTOR, SKIPPED_BELOW_FLOOR
from metricfit.losses._simd_rows import dot_lanes_twin
from metricfit.mappings import MLP, Linear, Tanh


def sklearn_formula(A, X, y):
    """scikit-learn's ``NeighborhoodComponentsAnalysis._loss_grad_lbfgs`` (sign=-1, the one
    its fit minimises), rewritten from its formula with the full n x n matrices."""
    Z = X @ A.T
    D = np.sum((Z[:, None] - Z[None]) ** 2, axis=-1)
    np.fill_diagonal(D, np.inf)
    P = softmax(-D, axis=1)
    masked = P * (y[:, None] == y[None])
    p = masked.sum(axis=1, keepdims=True)
    W = masked - P * p
    W_sym = W + W.T
    np.fill_diagonal(W_sym, -W.sum(axis=0))
    return -p.sum(), -2 * Z.T @ W_sym @ X


def problem(rng, n, d, k, n_ids, scale=0.5):
    X = rng.normal(size=(n, d))
    y = rng.integers(0, n_ids, size=n)
    A = scale * rng.normal(size=(k, d))
    return A, X, y


SHAPES = [(30, 5, 3, 4), (41, 6, 6, 3), (25, 4, 7, 5), (60, 8, 2, 10)]  # n, d, k, ids


@pytest.mark.parametrize("n, d, k, n_ids", SHAPES)
@pytest.mark.parametrize("block_rows", [None, 1, 7])
def test_kernel_matches_twin_and_sklearn_formula(rng, n, d, k, n_ids, block_rows):
    A, X, y = problem(rng, n, d, k, n_ids)
    J, G = nca.cost_grad(A, X, y.astype(np.int64), block_rows)
    J_ref, G_ref = nca_cost_grad_ref(A, X, y)
    J_sk, G_sk = sklearn_formula(A, X, y)
    assert J == pytest.approx(J_ref, rel=1e-12)
    assert relative_error(G, G_ref) < 1e-12
    assert abs(J - J_sk) <= 1e-8 * abs(J_sk)
    assert np.max(np.abs(G - G_sk)) <= 1e-8 * np.max(np.abs(G_sk))


def test_kernel_float32_follows_float64(rng):
    A, X, y = problem(rng, 80, 10, 4, 6)
    J, G = nca.cost_grad(A, X, y.astype(np.int64), 16)
    J32, G32 = nca.cost_grad(A.astype(np.float32), X.astype(np.float32), y.astype(np.int64), 16)
    assert G32.dtype == np.float32
    assert J32 == pytest.approx(J, rel=1e-5)
    assert relative_error(G32, G) < 1e-4


def test_far_apart_points_underflow_cleanly(rng):
    """Distances of ~1e6: every softmax picks the nearest point only; no NaN, no warning."""
    centres = 1e3 * rng.normal(size=(5, 3))
    y = np.repeat(np.arange(5), 4)
    X = centres[y] + rng.normal(size=(20, 3))
    with np.errstate(all="raise"):
        J, G = nca.cost_grad(np.eye(3), X, y.astype(np.int64), 6)
    assert np.isfinite(G).all()
    assert J == pytest.approx(-20, abs=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_no_subnormal_weight_reaches_the_products(rng, dtype):
    """Points spread so far that most logits lie under float32's floor (exp would be
    subnormal, which slows the GEMMs many times): those weights are 0, none is subnormal, and
    the float32 cost and gradient still follow float64's."""
    X = 6.0 * rng.normal(size=(60, 4))
    codes = rng.integers(0, 3, size=60).astype(np.int64)
    Z = X.astype(dtype)
    S = Z[:20] @ Z.T
    nca.shifted_logits(S, np.einsum("ij,ij->i", Z, Z), 0, nca.logit_floor(dtype))
    with np.errstate(under="ignore"):
        E = np.exp(S)
    p, r = np.empty(20), np.empty(20)
    tiny = np.finfo(dtype).tiny
    nca.neighbour_weights(E, codes, 0, *nca.identity_members(codes),
                          np.ones((1, 60), dtype), float(tiny), p, r)
    assert not ((E != 0) & (np.abs(E) < tiny)).any()
    if dtype == np.float32:
        skipped = nca.logit_floor(dtype) - SKIPPED_BELOW_FLOOR
        assert (S == np.float32(skipped)).mean() > 0.2  # the floor did cut
        J, G = nca.cost_grad(np.eye(4, dtype=dtype), Z, codes)
        J64, G64 = nca.cost_grad(np.eye(4), X, codes)
        assert J == pytest.approx(J64, rel=1e-5)
        np.testing.assert_allclose(G, G64, rtol=1e-4, atol=1e-4 * np.abs(G64).max())


def shifted_logits_twin(S, sq_norms, start, floor):
    """The plain loop ``shifted_logits`` replaced, in NumPy: each distance formed in float64
    (``(sq_i + sq_j)`` in the rows' dtype, then ``- 2.0 S``), clamped at 0, stored in S's
    dtype; ``min_{l != i} d_il`` of the float64 distances minus the stored ones, ``floor -
    SKIPPED_BELOW_FLOOR`` under ``floor`` and on the diagonal."""
    out = np.empty_like(S)
    for i in range(S.shape[0]):
        g = start + i
        d = np.maximum((sq_norms[g] + sq_norms).astype(np.float64) - 2.0 * S[i], 0.0)
        nearest = np.min(np.delete(d, g)) if d.size > 1 else np.inf
        logits = nearest - d.astype(S.dtype).astype(np.float64)
        out[i] = np.where(logits >= floor, logits, floor - SKIPPED_BELOW_FLOOR)
        out[i, g] = floor - SKIPPED_BELOW_FLOOR
    return out


def dot_lanes(row):
    """The sum of a row in ``pair_dot``'s lane order (``dot_lanes_twin`` with ones)."""
    return dot_lanes_twin(row, np.ones_like(row))


def neighbour_weights_twin(E, codes, start, tiny):
    """``neighbour_weights`` in NumPy: W in E's dtype and p; the row's total in ``pair_dot``'s
    lane order, the identity's share one entry after the other (``r_i``: ``dot_lanes`` of
    W's stored rows); the skipped entries (under KEPT_FACTOR times the smallest normal
    number) set to 0 first, in E too."""
    E[:] = np.where(E >= np.finfo(E.dtype).tiny * KEPT_FACTOR, E, 0.0)
    W, p = np.empty_like(E), np.empty(E.shape[0])
    for i in range(E.shape[0]):
        g = start + i
        total = dot_lanes(E[i])
        same = 0.0
        for j in np.flatnonzero(codes == codes[g]):
            same = same + float(E[i, j])
        p[i] = same / total
        m = (codes == codes[g]).astype(np.float64)
        m[g] = 0.0
        w = (E[i].astype(np.float64) * (1.0 / total)) * (m - p[i])
        W[i] = np.where(np.abs(w) >= tiny, w, 0.0)
    return W, p


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 16), n=st.integers(2, 70), k=st.integers(1, 6),
       n_ids=st.integers(1, 5), dtype=st.sampled_from([np.float32, np.float64]),
       spread=st.sampled_from([1.0, 8.0]))
def test_the_weight_kernels_equal_their_numpy_twins(seed, n, k, n_ids, dtype, spread):
    """shifted_logits (a row minimum on 16 lanes: the same number as the plain loop's) and
    neighbour_weights (sums on vector lanes in a fixed order), bit for bit, on rows of any
    length around the lanes (n from 2 to 70) and a block that starts inside the points."""
    rng = np.random.default_rng(seed)
    Z = (spread * rng.normal(size=(n, k))).astype(dtype)  # 8: logits under the floor
    codes = rng.integers(0, n_ids, size=n).astype(np.int64)
    start = int(rng.integers(0, n))
    rows = Z[start:start + int(rng.integers(1, n - start + 1))]
    sq_norms = np.einsum("ij,ij->i", Z, Z)
    S = rows @ Z.T
    floor, tiny = nca.logit_floor(dtype), float(np.finfo(dtype).tiny)
    want = shifted_logits_twin(S, sq_norms, start, floor)
    nca.shifted_logits(S, sq_norms, start, floor)
    np.testing.assert_array_equal(S, want)
    E = np.exp(S)
    W, p = neighbour_weights_twin(E, codes, start, tiny)
    got_p, got_r = np.empty(E.shape[0]), np.empty(E.shape[0])
    members = nca.identity_members(codes)
    nca.neighbour_weights(E, codes, start, *members, np.ones((1, n), dtype), tiny, got_p,
                          got_r)
    np.testing.assert_array_equal(E, W)
    np.testing.assert_array_equal(got_p, p)
    np.testing.assert_array_equal(got_r, [dot_lanes(row) for row in E])


@pytest.mark.parametrize("n, d, k, n_ids", SHAPES)
def test_linear_gradient_finite_differences(rng, n, d, k, n_ids):
    A, X, y = problem(rng, n, d, k, n_ids)
    codes = y.astype(np.int64)
    _, G = nca.cost_grad(A, X, codes, 8)
    num = central_differences(lambda B: nca.cost_grad(B, X, codes, 8)[0], A)
    assert relative_error(G, num) < 1e-6


@pytest.mark.parametrize("make", [lambda d, k: MLP(d, 4, k), lambda d, k: Tanh(d, k),
                                  lambda d, k: Linear(d, k)])
@pytest.mark.parametrize("n, d, k, n_ids", [(20, 4, 3, 3), (26, 3, 5, 4)])
def test_mapped_gradient_finite_differences(rng, make, n, d, k, n_ids):
    mapping = make(d, k)
    X = rng.normal(size=(n, d))
    codes = rng.integers(0, n_ids, size=n).astype(np.int64)
    theta = mapping.init(random_state=1) + 0.1 * rng.normal(size=mapping.n_params)
    f = nca.objective(mapping, X, codes, block_rows=5)
    _, G = f(theta)
    num = central_differences(lambda t: f(t)[0], theta)
    assert relative_error(G, num) < 1e-6


def test_block_memory_is_linear_in_n(rng):
    """n = 3000, 40 rows a block: the traced peak stays far below one n x n float64 (72 MB)."""
    n, k = 3000, 8
    Z = rng.normal(size=(n, k))
    codes = rng.integers(0, 50, size=n).astype(np.int64)
    nca.cost_grad_embedded(Z[:50], codes[:50], 10)  # compile outside the trace
    tracemalloc.start()
    nca.cost_grad_embedded(Z, codes, 40)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3e6  # (40 x 3000) buffer ~1 MB + a few (n, k) arrays


def clustered(rng, n_ids=12, per_id=6, d=5, spread=3.0):
    y = np.repeat(np.arange(n_ids), per_id)
    X = spread * rng.normal(size=(n_ids, d))[y] + rng.normal(size=(y.size, d))
    return X, y


def test_fit_matches_sklearn_estimator(rng):
    """Same start, same objective and gradient: five L-BFGS iterations land on the same
    matrix as scikit-learn's NeighborhoodComponentsAnalysis (public API only)."""
    X, y = clustered(rng)
    A0 = 0.3 * rng.normal(size=(3, X.shape[1]))
    ours = NCA(n_components=3, init=A0, max_iter=5, tol=0.0)
    with pytest.warns(ConvergenceWarning):
        ours.fit(X, y)
    theirs = NeighborhoodComponentsAnalysis(n_components=3, init=A0, max_iter=5, tol=0.0)
    theirs.fit(X, y)  # it warns only when verbose
    assert ours.n_iter_ == 5  # theirs counts its callback calls (6 here)
    np.testing.assert_allclose(ours.components_, theirs.components_, rtol=1e-7, atol=1e-9)
    assert ours.objective_ == pytest.approx(sklearn_formula(ours.components_, X, y)[0], rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fit_verifies_unseen_identities(rng, dtype):
    X, y = clustered(rng, n_ids=30)
    train, test = y < 20, y >= 20
    est = NCA(n_components=3, max_iter=100).fit(X[train].astype(dtype), y[train])
    assert est.components_.dtype == dtype
    Xt, yt = X[test], y[test]
    i, j = np.triu_indices(yt.size, 1)
    pairs, s = np.stack([Xt[i], Xt[j]], axis=1), np.where(yt[i] == yt[j], 1, -1)
    assert roc_auc_score(s, est.pair_score(pairs)) > 0.9
    balanced = np.concatenate([np.flatnonzero(s == 1), np.flatnonzero(s == -1)[:150]])
    assert est.score(pairs[balanced], s[balanced]) > 0.8  # threshold_ from training pairs
    assert est.decision_function(pairs).shape == (i.size,)
    np.testing.assert_allclose(est.pair_score(pairs),
                               -np.sum((Xt[i] @ est.components_.T
                                        - Xt[j] @ est.components_.T) ** 2, axis=1), rtol=1e-4)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fit_lowers_objective_and_mlp(rng):
    X, y = clustered(rng)
    codes = np.unique(y, return_inverse=True)[1].astype(np.int64)
    lin = NCA(n_components=2, init="identity", max_iter=30).fit(X, y)
    J_start = nca.cost_grad(np.eye(2, X.shape[1]), X, codes)[0]
    assert lin.objective_ < J_start
    mlp = NCA(n_components=2, mapping="mlp", n_hidden=8, max_iter=60, random_state=0).fit(X, y)
    J0 = nca.objective(MLP(5, 8, 2), X, codes)(MLP(5, 8, 2).init(0))[0]
    assert mlp.objective_ < J0 - 5
    assert mlp.params_.shape == (MLP(5, 8, 2).n_params,)
    assert mlp.transform(X).shape == (X.shape[0], 2)
    assert not hasattr(mlp, "components_")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_index_pairs_callback_clone_and_labels(rng):
    X, y = clustered(rng)
    seen = []
    est = NCA(n_components=2, max_iter=10, preprocessor=X, init="pca",
              callback=lambda params, it: seen.append((params.shape, it)))
    est.fit(X, np.array([f"id{v}" for v in y]))  # any label values
    assert seen[0] == ((2, 5), 1)
    index = np.array([[0, 1], [0, 20]])
    np.testing.assert_allclose(est.pair_score(index), est.pair_score(X[index]))
    assert clone(est).get_params()["n_components"] == 2


# -- bad input -------------------------------------------------------------------------------

def test_bad_points(rng):
    X, y = clustered(rng)
    for bad in (np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X),
                np.where(np.arange(X.size).reshape(X.shape) == 3, np.inf, X)):
        with pytest.raises(ValueError, match="NaN|inf"):
            NCA().fit(bad, y)
    with pytest.raises(ValueError, match="2-D"):
        NCA().fit(X[0], y)
    with pytest.raises(ValueError, match="2-D"):
        NCA().fit(X[:, :, None], y)


def test_bad_labels(rng):
    X, y = clustered(rng)
    with pytest.raises(ValueError, match="shape"):
        NCA().fit(X, y[:-1])
    with pytest.raises(ValueError, match="shape"):
        NCA().fit(X, y[:, None])
    with pytest.raises(ValueError, match="NaN"):
        NCA().fit(X, np.where(np.arange(y.size) == 2, np.nan, y.astype(float)))
    with pytest.raises(ValueError, match="1 identity .*at least 2"):
        NCA().fit(X, np.zeros(y.size))
    with pytest.raises(ValueError, match="two points"):
        NCA().fit(X, np.arange(y.size))


def test_bad_parameters_and_transform(rng):
    X, y = clustered(rng)
    with pytest.raises(ValueError, match="'linear'.*'mlp'.*'tanh'"):
        NCA(mapping="convnet").fit(X, y)
    with pytest.raises(ValueError, match="n_components=6 must be <= n_features=5"):
        NCA(n_components=6).fit(X, y)
    with pytest.raises(ValueError, match="init must have shape"):
        NCA(n_components=2, init=np.eye(3)).fit(X, y)
    with pytest.raises(ValueError, match="needs mapping='linear'"):
        NCA(mapping="mlp", init="pca").fit(X, y)
    est = NCA(n_components=2, max_iter=5)
    with pytest.warns(ConvergenceWarning):
        est.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :4])
    with pytest.raises(ValueError, match="features"):
        est.predict(np.stack([X[:3, :4], X[3:6, :4]], axis=1))


@pytest.mark.parametrize("k", [3, 5])
def test_linear_fast_form_equals_embedding_route(rng, k):
    """``2 A (X^T diag(r + c) X - M - M^T)`` (taken when d < 2k) against ``dJ/dZ^T X``."""
    A, X, y = problem(rng, 45, 6, k, 4)
    codes = y.astype(np.int64)
    J, G = nca.cost_grad(A, X, codes, 10)
    J_z, dZ = nca.cost_grad_embedded(X @ A.T, codes, 10)
    assert J == pytest.approx(J_z, rel=1e-14)
    assert relative_error(G, dZ.T @ X) < 1e-12


def test_calibration_pairs_are_labelled_right(rng):
    from metricfit.learners._base import calibration_pairs

    codes = np.concatenate([[0, 0, 0], np.arange(1, 50), [50, 50]])  # few repeated identities
    rng_state = np.random.RandomState(3)
    pairs, s = calibration_pairs(codes, 300, rng_state)
    same = codes[pairs[:, 0]] == codes[pairs[:, 1]]
    assert (pairs[:, 0] != pairs[:, 1]).all()
    np.testing.assert_array_equal(np.where(same, 1, -1), s)
    assert set(np.unique(pairs[s == 1])) == {0, 1, 2, 52, 53}


def test_report_and_warning_are_the_solver_mixins(capsys):
    """NCA reports its iterations and warns through SolverMixin, as every optimised learner."""
    from metricfit.learners._solver import SolverMixin

    assert NCA._on_iteration is SolverMixin._on_iteration
    assert NCA._warn_if_failed is SolverMixin._warn_if_failed
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 4)), np.repeat(np.arange(6), 5)
    seen = []
    with pytest.warns(ConvergenceWarning, match=r"\[NCA\] lbfgs did not converge after 2"):
        NCA(n_components=2, max_iter=2, verbose=1,
            callback=lambda params, it: seen.append((params.shape, it))).fit(X, y)
    assert "[NCA] iteration      1  cost" in capsys.readouterr().out
    assert seen == [((2, 4), 1), ((2, 4), 2)]


def test_linear_algebra_is_declared_by_the_mapping():
    """nca.objective takes the linear form for a mapping that declares ``is_linear``."""
    rng = np.random.default_rng(1)
    X, codes = rng.normal(size=(20, 5)), np.repeat(np.arange(4), 5)
    A = rng.normal(size=(2, 5))
    J, G = nca.objective(Linear(5, 2), X, codes)(A.ravel())
    J_ref, G_ref = nca.cost_grad(A, X, codes)
    assert J == J_ref and np.array_equal(G, G_ref.ravel())
    assert Linear.is_linear and not Tanh.is_linear and not MLP.is_linear


@pytest.mark.parametrize("mapping", ["linear", "mlp"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_threshold_is_calibrated_on_the_pair_scores_of_the_training_pairs(rng, dtype, mapping):
    """fit embeds each point of its 4,000 calibration pairs once; ``threshold_`` is what the
    pairs' own scores give, the (n_pairs, 2, d) vectors through ``pair_score``."""
    from metricfit.learners._base import calibration_pairs
    from metricfit.metrics import calibrate_threshold

    X, y = clustered(rng, n_ids=12)
    X = X.astype(dtype)
    est = NCA(n_components=3, max_iter=5, mapping=mapping, random_state=0).fit(X, y)
    pairs, s = calibration_pairs(np.unique(y, return_inverse=True)[1], what="NCA")
    assert est.threshold_ == float(calibrate_threshold(s, est.pair_score(X[pairs])))
