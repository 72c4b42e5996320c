"""Kaldi's unsupervised PLDA adaptation (metricfit.backend.adapt_two_covariance, PLDA.adapt):
the basis-free form against a step-by-step transcription of Kaldi's UpdatePlda, the
properties the derivation gives, the estimator's fitted attributes and bad input."""

import numpy as np
import pytest
from _reference import kaldi_plda_adapt_ref
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy import linalg

from metricfit import PLDA, metrics
from metricfit.backend import adapt_two_covariance

D = 6


def model(seed, d=D, rank=None):
    """A two-covariance model: B of the given rank (None: full), W positive definite."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d if rank is None else rank))
    V = rng.normal(size=(d, d))
    return 2 * A @ A.T / d, V @ V.T / d + 0.3 * np.eye(d), rng.normal(size=d)


def points(rng, cov, n, mean):
    return rng.multivariate_normal(mean, cov, size=n)


@pytest.mark.parametrize("seed, rank, n, scales", [
    (0, None, 500, (1.0, 0.3, 0.7)),
    (1, 2, 500, (1.0, 0.3, 0.7)),  # singular B: psi has zeros
    (2, None, 4, (1.0, 0.3, 0.7)),  # fewer points than dimensions: C singular
    (3, None, 300, (0.5, 1.2, 0.1)),
    (4, 3, 50, (0.0, 0.0, 2.0)),
])
def test_matches_kaldis_steps(seed, rank, n, scales):
    B, W, mu = model(seed, rank=rank)
    rng = np.random.default_rng(100 + seed)
    stretch = np.diag(rng.uniform(0.3, 3.0, size=D))  # some directions up, some down
    X = points(rng, stretch @ (B + W) @ stretch, n, mu + rng.normal(size=D))
    got = adapt_two_covariance(B, W, mu, X, *scales)
    want = kaldi_plda_adapt_ref(B, W, mu, X, *scales)
    for g, w in zip(got, want, strict=True):
        assert_allclose(g, w, rtol=1e-9, atol=1e-10 * np.abs(w).max())
    # the data exceed the model somewhere, so the test can tell adapted from unadapted
    assert not (np.allclose(got[0], B) and np.allclose(got[1], W))


def test_data_from_the_model_leave_it_nearly_unchanged():
    B, W, mu = model(5)
    X = points(np.random.default_rng(0), B + W, 200_000, mu)
    B_new, W_new, mu_new = adapt_two_covariance(B, W, mu, X)
    # sampling error of the covariance: eigenvalues s within ~1 +- 0.01 at n = 2e5
    assert np.linalg.norm(B_new - B) < 0.01 * np.linalg.norm(B)
    assert np.linalg.norm(W_new - W) < 0.01 * np.linalg.norm(W)
    assert_allclose(mu_new, X.mean(axis=0))


def _adapted_space(B, W, mu, X, mean_diff_scale=1.0):
    """``(s, a)``: the eigenvalues of the adaptation covariance where the model's total
    covariance is I, and the directions (columns) of that space, by scipy's eigh."""
    m = X.mean(axis=0)
    C = np.cov(X.T, bias=True) + mean_diff_scale * np.outer(m - mu, m - mu)
    return linalg.eigh(C, B + W)


def test_extra_variance_goes_into_the_total_covariance_exactly():
    B, W, mu = model(6)
    rng = np.random.default_rng(1)
    v = rng.normal(size=D)
    v /= np.linalg.norm(v)
    X = points(rng, B + W + 9.0 * np.outer(v, v), 20_000, mu)
    B_new, W_new, _ = adapt_two_covariance(B, W, mu, X)
    s, a = _adapted_space(B, W, mu, X)
    # in the adapted space the new total covariance is diag(max(s, 1)) (scales 0.3 + 0.7 = 1)
    assert_allclose(a.T @ (B_new + W_new) @ a, np.diag(np.maximum(s, 1.0)), atol=1e-9)
    assert s.max() > 5  # the extra direction
    # in the original space: the excess 9 v v^T, up to sampling (other directions: |s - 1|
    # of about 0.02 where s > 1)
    assert np.abs(B_new + W_new - (B + W) - 9.0 * np.outer(v, v)).max() < 0.25
    # shared 0.3 / 0.7 between W and B
    assert_allclose(W_new - W, (0.3 / 0.7) * (B_new - B), atol=1e-12)


def test_zero_covariance_scales_keep_the_model_and_take_the_new_mean():
    B, W, mu = model(7)
    rng = np.random.default_rng(2)
    X = points(rng, 4 * (B + W), 300, mu + 3)
    for mean_diff_scale in (0.0, 1.0):
        B_new, W_new, mu_new = adapt_two_covariance(B, W, mu, X, mean_diff_scale, 0.0, 0.0)
        assert_allclose(B_new, B, rtol=0, atol=0)
        assert_allclose(W_new, W, rtol=0, atol=0)
        assert_allclose(mu_new, X.mean(axis=0))


def test_the_mean_difference_counts_as_variance():
    B, W, mu = model(8)
    rng = np.random.default_rng(3)
    X = points(rng, B + W, 2000, mu + 4 * np.eye(D)[0])
    shifted = adapt_two_covariance(B, W, mu, X)  # Kaldi: mean_diff_scale = 1
    ignored = adapt_two_covariance(B, W, mu, X, mean_diff_scale=0.0)
    assert (shifted[0] + shifted[1])[0, 0] > (B + W)[0, 0] + 10  # about + 16
    assert np.abs(ignored[0] + ignored[1] - (B + W)).max() < 0.2 * np.abs(B + W).max()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), scales=st.tuples(*[st.floats(0.0, 2.0)] * 3))
def test_affine_equivariance(seed, scales):
    """x -> M x + c: (B, W, mean) -> (M B M^T, M W M^T, M mean + c) (module docstring)."""
    rng = np.random.default_rng(seed)
    B, W, mu = model(seed % 97, rank=None if seed % 2 else 3)
    X = points(rng, 2.0 * (B + W), 40, mu + rng.normal(size=D))
    M = rng.normal(size=(D, D)) + 2 * np.eye(D)
    c = rng.normal(size=D)
    B1, W1, m1 = adapt_two_covariance(B, W, mu, X, *scales)
    B2, W2, m2 = adapt_two_covariance(M @ B @ M.T, M @ W @ M.T, M @ mu + c, X @ M.T + c, *scales)
    for got, want in ((B2, M @ B1 @ M.T), (W2, M @ W1 @ M.T), (m2, M @ m1 + c)):
        assert_allclose(got, want, rtol=1e-7, atol=1e-8 * np.abs(want).max())


def domain(seed, shifted, n_identities, per, d=8):
    """Identities in the first 3 axes. The test domain (``shifted``) adds identity variance 2
    and within-class variance 0.3 along axes 3..5 (nearly constant in training) and moves
    the mean by 2: the kind of excess Kaldi's adaptation gives 0.7 / 0.3 to B / W."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_identities, d)) * np.r_[np.full(3, 1.0), np.full(d - 3, 0.05)]
    labels = np.repeat(np.arange(n_identities), per)
    noise = rng.normal(size=(labels.size, d)) * np.r_[np.full(3, 0.7), np.full(d - 3, 0.3)]
    if shifted:
        centres[:, 3:6] += rng.normal(size=(n_identities, 3)) * np.sqrt(2.0)
        noise[:, 3:6] += rng.normal(size=(labels.size, 3)) * np.sqrt(0.3)
    return centres[labels] + noise + (2.0 if shifted else 0.0), labels


def test_adapt_returns_a_consistent_fitted_copy_that_helps_in_domain():
    X, labels = domain(0, False, 300, 4)
    plda = PLDA().fit(X, labels)
    before = {k: np.copy(v) for k, v in vars(plda).items() if isinstance(v, np.ndarray)}
    Xa, _ = domain(1, True, 100, 4)  # unlabelled in-domain data
    adapted = plda.adapt(Xa)
    for k, v in before.items():  # the source model is untouched
        assert_allclose(getattr(plda, k), v, rtol=0, atol=0)
    B, W, mu = adapt_two_covariance(plda.between_covariance_, plda.within_covariance_,
                                    plda.mean_, Xa)
    assert_allclose(adapted.between_covariance_, B)
    assert_allclose(adapted.within_covariance_, W)
    assert_allclose(adapted.mean_, mu)
    T, psi = adapted.components_, adapted.psi_
    assert_allclose(T @ W @ T.T, np.eye(psi.size), atol=1e-9)
    assert_allclose(T @ B @ T.T, np.diag(psi), atol=1e-9)
    assert adapted.threshold_ == 0.0 and adapted.n_identities_ == plda.n_identities_
    assert_allclose(adapted.transform(Xa[:3]), (Xa[:3] - mu) @ T.T)
    # in the new domain the adapted model separates identities better
    Xt, lt = domain(2, True, 60, 4)
    i, j = np.triu_indices(lt.size, 1)
    y = np.where(lt[i] == lt[j], 1, -1)
    pairs = np.stack([Xt[i], Xt[j]], axis=1)
    eer = {name: metrics.equal_error_rate(y, m.pair_score(pairs))[0]
           for name, m in (("plain", plda), ("adapted", adapted))}
    assert eer["adapted"] < 0.6 * eer["plain"], eer  # about 0.12 against 0.35


@pytest.mark.parametrize("X, kwargs, message", [
    (np.ones((5, 3)), {}, "has 3 features"),
    (np.ones((1, 8)), {}, "at least 2 points"),
    (np.r_[np.ones((3, 8)), np.full((1, 8), np.nan)], {}, "NaN"),
    (np.ones((5, 8)), {"within_covar_scale": -0.3}, "within_covar_scale must be"),
    (np.ones((5, 8)), {"mean_diff_scale": np.inf}, "mean_diff_scale must be"),
])
def test_bad_adaptation_input(X, kwargs, message):
    Xs, labels = domain(0, False, 30, 3)
    with pytest.raises(ValueError, match=message):
        PLDA().fit(Xs, labels).adapt(X, **kwargs)


def test_adapt_needs_a_fitted_plda():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        PLDA().adapt(np.ones((5, 3)))


def test_bad_model_is_named():
    B, W, mu = model(0)
    with pytest.raises(ValueError, match="W must be a finite"):
        adapt_two_covariance(B, W[:3], mu, np.ones((4, D)))


def test_adapt_does_not_judge_the_training_fit_again():
    """The convergence warning belongs to fit: a PLDA stopped before ``tol`` warns once,
    when fitted, and its adapted copy (the same training history) does not warn again."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(60), 3)
    X = 2 * rng.normal(size=(60, 4))[labels] + rng.normal(size=(180, 4))
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        plda = PLDA(n_iter=1, tol=1e-12).fit(X, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        adapted = plda.adapt(X + 1.0)
    assert adapted.n_iter_ == plda.n_iter_ == 1
