"""PLDA EM to convergence (``tol``, ``n_iter_``) against a plain-NumPy twin and the closed-form
maximum-likelihood estimate, and training on the identities of vector pairs
(``identities='components'``) (issue 28 item 5)."""

import warnings

import numpy as np
import pytest
from _reference import plda_em_ref
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.exceptions import ConvergenceWarning

from metricfit import PLDA
from metricfit.backend import plda as core
from metricfit.pairs import sample_pairs
from metricfit.pairs.identity import similar_pair_classes
from metricfit.pairs.index import IndexPairs


def _data(seed=0, n_identities=60, per_identity=3, d=4):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_identities), per_identity)
    scale = rng.uniform(0.5, 3.0, size=d)
    X = scale * rng.normal(size=(n_identities, d))[labels] + rng.normal(size=(labels.size, d))
    return X, labels


@pytest.mark.parametrize("tol", [1e-2, 1e-4])
def test_tol_stops_em_where_the_numpy_twin_stops(tol):
    X, labels = _data()
    labels[:12] = 1000 + np.arange(12)  # some classes of one sample (the per-class path)
    est = PLDA(n_iter=500, tol=tol).fit(X, labels)
    B, W, history = plda_em_ref(X, labels, 500, tol)
    assert est.n_iter_ == len(history) - 1 < 500
    assert len(est.log_likelihood_) == est.n_iter_ + 1
    assert_allclose(est.log_likelihood_, history, rtol=1e-9)
    assert_allclose(est.between_covariance_, B, rtol=1e-7, atol=1e-9)
    assert_allclose(est.within_covariance_, W, rtol=1e-7, atol=1e-9)
    gains = np.diff(est.log_likelihood_) / X.shape[0]
    assert gains[-1] < tol and (gains[:-1] >= tol).all()


def test_tol_none_runs_n_iter_and_tol_is_a_prefix_of_it():
    X, labels = _data(1)
    fixed = PLDA(n_iter=40).fit(X, labels)
    stopped = PLDA(n_iter=40, tol=1e-3).fit(X, labels)
    assert fixed.n_iter_ == 40 and 0 < stopped.n_iter_ < 40
    same = PLDA(n_iter=stopped.n_iter_).fit(X, labels)
    assert_allclose(stopped.log_likelihood_, fixed.log_likelihood_[:stopped.n_iter_ + 1])
    assert_allclose(stopped.psi_, same.psi_, rtol=1e-12)


def test_converged_em_on_classes_of_two_is_the_closed_form_ml():
    """All classes of n samples: the class means are N(0, B + W / n), the offsets give W, so
    the ML estimate is ``W = S_off / (N - K)``, ``B = M / K - W / n`` (where PSD), which EM
    reaches at convergence (a check of the EM fixed point independent of its updates)."""
    rng = np.random.default_rng(2)
    d, K = 3, 4000
    labels = np.repeat(np.arange(K), 2)
    X = 2.0 * rng.normal(size=(K, d))[labels] + rng.normal(size=(2 * K, d))
    counts, means, mu, S_off = core.class_statistics(X, labels)
    W = S_off / (2 * K - K)
    B = means.T @ means / K - W / 2
    assert np.linalg.eigvalsh(B)[0] > 0
    est = PLDA(n_iter=5000, tol=1e-12).fit(X, labels)
    assert est.n_iter_ < 5000
    assert_allclose(est.within_covariance_, W, rtol=1e-5)
    assert_allclose(est.between_covariance_, B, rtol=1e-5)


def test_simplified_plda_stops_at_tol():
    X, labels = _data(3, d=5)
    est = PLDA(n_components=2, n_iter=500, tol=1e-3).fit(X, labels)
    gains = np.diff(est.log_likelihood_) / X.shape[0]
    assert 0 < est.n_iter_ < 500 and len(gains) == est.n_iter_
    assert gains[-1] < 1e-3 and (gains[:-1] >= 1e-3).all()


def test_not_converged_warns():
    X, labels = _data()
    with pytest.warns(ConvergenceWarning, match="did not converge in n_iter=3"):
        est = PLDA(n_iter=3, tol=1e-9).fit(X, labels)
    assert est.n_iter_ == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PLDA(n_iter=3).fit(X, labels)  # Kaldi's fixed iterations: nothing to warn about


@pytest.mark.parametrize("params, message", [
    ({"tol": 0.0}, "tol"), ({"tol": -1e-3}, "tol"), ({"tol": float("nan")}, "tol"),
    ({"tol": "1e-3"}, "tol"), ({"identities": "images"}, "identities"),
])
def test_bad_parameters(params, message):
    X, labels = _data()
    with pytest.raises(ValueError, match=message):
        PLDA(**params).fit(X, labels)


def test_components_on_vector_pairs_equal_index_pairs():
    X, labels = _data(4, n_identities=40, per_identity=4)
    index, y = sample_pairs(labels, 150, 150, random_state=0)
    on_index = PLDA(preprocessor=X).fit(index, y)
    on_vectors = PLDA(identities="components").fit(X[index], y)
    as_pairs = PLDA().fit(X[index], y)
    assert on_vectors.n_identities_ == on_index.n_identities_ < as_pairs.n_identities_
    assert_allclose(on_vectors.psi_, on_index.psi_, rtol=1e-10)
    pairs = X[index[:20]]
    assert_allclose(on_vectors.pair_score(pairs), on_index.pair_score(pairs), rtol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.booleans())
def test_similar_pair_classes_components_are_the_index_components(seed, singletons):
    """Vector pairs with ``components`` give the classes of index pairs into the distinct
    points: the same partition of the same points, whatever the codes' order."""
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(12, 2))
    index = rng.integers(0, 12, size=(15, 2))
    s = np.where(rng.random(15) < 0.5, 1, -1)
    s[0] = 1
    Xa, ca = similar_pair_classes(points[index], s, singletons, components=True)
    Xb, cb = similar_pair_classes(IndexPairs(points, index), s, singletons)
    order_a, order_b = np.lexsort(Xa.T), np.lexsort(Xb.T)
    assert_allclose(Xa[order_a], Xb[order_b])
    pa, pb = ca[order_a], cb[order_b]
    assert (np.equal.outer(pa, pa) == np.equal.outer(pb, pb)).all()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16), d=st.integers(1, 40), spread=st.floats(1.0, 1e6))
def test_the_cholesky_inverse_and_log_determinant_match_the_lu_ones(seed, d, spread):
    """EM's ``(S^-1, log|S|)`` on NumPy (one Cholesky factorisation, LAPACK potrf / potri)
    against ``inv`` and ``slogdet`` (LU): the same to rounding, and S^-1 exactly symmetric."""
    from metricfit.backend.plda_em import inverse_and_logdet

    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    S = (Q * rng.uniform(1.0, spread, size=d)) @ Q.T  # SPD, condition number <= spread
    S = 0.5 * (S + S.T)
    inverse, logdet = inverse_and_logdet(np, S, np.eye(d))
    assert np.array_equal(inverse, inverse.T)
    assert_allclose(inverse, np.linalg.inv(S), rtol=1e-9, atol=1e-9 * np.abs(inverse).max())
    assert logdet == pytest.approx(np.linalg.slogdet(S)[1], rel=1e-10, abs=1e-9)


def test_a_covariance_that_is_not_positive_definite_is_an_error():
    from metricfit.backend.plda_em import inverse_and_logdet

    for S in (np.diag([1.0, -1.0]), np.zeros((2, 2))):
        with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
            inverse_and_logdet(np, S, np.eye(2))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2 ** 16), d=st.integers(1, 30))
def test_mirror_kernel_equals_its_numpy_twin(seed, d):
    """``mirror_upper`` = ``triu(a) + triu(a, 1).T``, in place, on the C-ordered transpose of a
    Fortran array (how the EM calls it on potri's output)."""
    from metricfit.backend._symmetric_kernels import mirror_upper

    a = np.asfortranarray(np.random.default_rng(seed).normal(size=(d, d)))
    expected = np.triu(a.T) + np.triu(a.T, 1).T
    out = mirror_upper(a.T)
    assert np.shares_memory(out, a) and out.flags.c_contiguous
    assert np.array_equal(out, expected)
