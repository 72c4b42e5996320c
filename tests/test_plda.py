"""PLDA (metricfit.backend.plda, metricfit.PLDA): EM against a known two-covariance model,
the closed-form LLR against a slow twin, the pair-API training modes and bad input."""

import numpy as np
import pytest
from _reference import relative_error
from numpy.testing import assert_allclose
from sklearn.pipeline import make_pipeline

from metricfit import PLDA, LengthNormalizer, metrics
from metricfit.backend import plda as core
from metricfit.pairs import sample_pairs

D = 20


def true_model(seed=0, d=D):
    """A two-covariance model (B, W) with B well above W (EER of a few per cent)."""
    rng = np.random.default_rng(seed)
    A, V = rng.normal(size=(d, d)), rng.normal(size=(d, d))
    return 3 * A @ A.T / d, V @ V.T / d + 0.5 * np.eye(d)


def draw(B, W, n_identities, per_identity, rng):
    d = B.shape[0]
    centres = rng.multivariate_normal(np.zeros(d), B, size=n_identities)
    X = np.repeat(centres, per_identity, axis=0)
    X += rng.multivariate_normal(np.zeros(d), W, size=X.shape[0])
    return X, np.repeat(np.arange(n_identities), per_identity)


def trials(B, W, n_target, n_nontarget, rng):
    """Target pairs (same centre) and non-target pairs (independent centres)."""
    X, _ = draw(B, W, n_target, 2, rng)
    d = B.shape[0]
    Z = rng.multivariate_normal(np.zeros(d), B + W, size=2 * n_nontarget)
    pairs = np.concatenate([X.reshape(n_target, 2, d), Z.reshape(n_nontarget, 2, d)])
    return pairs, np.r_[np.ones(n_target), -np.ones(n_nontarget)]


def true_llr(B, W, pairs):
    T, psi = core.plda_basis(B, W)
    return core.llr(pairs[:, 0] @ T.T, pairs[:, 1] @ T.T, psi)


def slow_llr(B, W, a, b):
    """log N([a; b]; 0, [[B+W, B], [B, B+W]]) - log N(a; 0, B+W) - log N(b; 0, B+W)."""
    from scipy.stats import multivariate_normal as mvn

    d = B.shape[0]
    joint = np.block([[B + W, B], [B, B + W]])
    return (mvn(np.zeros(2 * d), joint).logpdf(np.r_[a, b])
            - mvn(np.zeros(d), B + W).logpdf(a) - mvn(np.zeros(d), B + W).logpdf(b))


# --------------------------------------------------------------------------- the model


def test_llr_matches_the_joint_gaussian():
    B, W = true_model(1, d=4)
    rng = np.random.default_rng(0)
    pairs = rng.normal(size=(5, 2, 4)) * 2
    expected = [slow_llr(B, W, a, b) for a, b in pairs]
    assert_allclose(true_llr(B, W, pairs), expected, rtol=1e-9, atol=1e-9)


def test_multi_enrolment_llr_matches_the_joint_gaussian():
    """N-vs-M closed form = the joint density of all n + m samples, same vs different."""
    from scipy.stats import multivariate_normal as mvn

    B, W = true_model(2, d=3)
    rng = np.random.default_rng(1)
    enrol, test = rng.normal(size=(3, 3)), rng.normal(size=(2, 3))
    samples = np.concatenate([enrol, test])

    def log_density(rows):  # identity-sharing rows: cov B everywhere, + W on the diagonal
        k = rows.shape[0]
        cov = np.kron(np.ones((k, k)), B) + np.kron(np.eye(k), W)
        return mvn(np.zeros(3 * k), cov).logpdf(rows.ravel())

    expected = log_density(samples) - log_density(enrol) - log_density(test)
    plda = PLDA()
    T, psi = core.plda_basis(B, W)
    plda.components_, plda.psi_, plda.mean_, plda.n_features_in_ = T, psi, np.zeros(3), 3
    assert_allclose(plda.score_sets([enrol], [test]), [expected], rtol=1e-9)


@pytest.mark.parametrize("n_components", [None, 5])
def test_em_increases_the_likelihood_at_every_iteration(n_components):
    B, W = true_model(3)
    rng = np.random.default_rng(3)
    X, labels = draw(B, W, 200, 3, rng)
    labels[:40] = np.arange(40) + 1000  # some identities of one sample
    plda = PLDA(n_components=n_components, n_iter=30).fit(X, labels)
    steps = np.diff(plda.log_likelihood_)
    assert len(steps) == 30
    assert (steps >= -1e-9 * np.abs(plda.log_likelihood_[1:])).all(), steps
    stats = core.class_statistics(X, np.unique(labels, return_inverse=True)[1])
    eye = np.eye(D)
    start = core.log_likelihood(eye, eye, *stats[:2], stats[3]) if n_components is None else None
    if start is not None:  # the in-basis value of the iteration = the plain eq. (2)
        assert plda.log_likelihood_[0] == pytest.approx(start, rel=1e-10)
    end = core.log_likelihood(plda.between_covariance_, plda.within_covariance_, *stats[:2],
                              stats[3])
    assert plda.log_likelihood_[-1] == pytest.approx(end, rel=1e-10)


def test_covariances_approach_the_true_ones_as_n_grows():
    """Relative Frobenius errors of B and W (d = 20, 5 samples per identity) fall with the
    number of identities: measured 100 / 500 / 2500 identities in the test below."""
    B, W = true_model(4)
    errors = []
    for n_identities in (100, 500, 2500):
        X, labels = draw(B, W, n_identities, 5, np.random.default_rng(n_identities))
        plda = PLDA(n_iter=50).fit(X, labels)
        errors.append((relative_error(plda.between_covariance_, B),
                       relative_error(plda.within_covariance_, W)))
    errors = np.array(errors)
    assert (np.diff(errors, axis=0) < 0).all(), errors
    assert errors[-1, 0] < 0.1 and errors[-1, 1] < 0.05, errors


def test_learned_llr_tracks_the_true_llr_and_the_true_llr_is_calibrated():
    B, W = true_model(5)
    X, labels = draw(B, W, 500, 5, np.random.default_rng(5))
    plda = PLDA().fit(X, labels)
    pairs, y = trials(B, W, 5000, 50000, np.random.default_rng(6))
    truth, learned = true_llr(B, W, pairs), plda.pair_score(pairs)
    assert np.corrcoef(truth, learned)[0, 1] > 0.99
    min_dcf = metrics.min_dcf(y, truth, preset="p01")[0]
    assert metrics.act_dcf(y, truth, preset="p01") <= 1.05 * min_dcf
    assert metrics.cllr(y, truth) - metrics.min_cllr(y, truth) < 0.02


def test_simplified_plda_recovers_a_low_rank_between_covariance():
    rng = np.random.default_rng(7)
    V = rng.normal(size=(D, 3)) * 2
    B, W = V @ V.T, np.eye(D)
    X, labels = draw(B, W, 2000, 4, rng)
    plda = PLDA(n_components=3, n_iter=50).fit(X, labels)
    assert np.linalg.matrix_rank(plda.between_covariance_, tol=1e-8) == 3
    assert relative_error(plda.between_covariance_, B) < 0.1
    assert plda.transform(X).shape == (X.shape[0], 3)
    pairs, y = trials(B, W, 500, 500, rng)
    assert np.corrcoef(true_llr(B, W, pairs), plda.pair_score(pairs))[0, 1] > 0.99


# --------------------------------------------------------------------------- the estimator


@pytest.fixture
def data():
    B, W = true_model(8, d=6)
    X, labels = draw(B, W, 60, 4, np.random.default_rng(8))
    index, s = sample_pairs(labels, 100, 100, random_state=0)
    return X, labels, index, s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtypes_give_the_same_model(data, dtype):
    X, labels, _, _ = data
    ref = PLDA().fit(X, labels)
    plda = PLDA().fit(X.astype(dtype), labels)
    assert plda.transform(X.astype(dtype)).dtype == dtype
    tol = 1e-4 if dtype == np.float32 else 1e-10
    assert_allclose(plda.between_covariance_, ref.between_covariance_, rtol=tol, atol=tol)


def test_pairs_are_classes_of_two_and_dissimilar_images_are_ignored_by_default(data):
    X, labels, index, s = data
    pairs = X[index]
    plda = PLDA().fit(pairs, s)
    similar = pairs[s == 1]
    by_points = PLDA().fit_points(similar.reshape(-1, X.shape[1]),
                                  np.repeat(np.arange(similar.shape[0]), 2))
    assert_allclose(plda.between_covariance_, by_points.between_covariance_)
    # changing the dissimilar pairs' images changes nothing...
    moved = pairs.copy()
    moved[s != 1] += 100.0
    assert_allclose(PLDA().fit(moved, s).within_covariance_, plda.within_covariance_)
    # ...unless they are singletons: they then enter the between-class statistics
    singletons = PLDA(dissimilar_pairs="singletons")
    assert not np.allclose(singletons.fit(moved, s).between_covariance_,
                           plda.between_covariance_)
    assert plda.threshold_ == metrics.max_decision_accuracy(s, plda.pair_score(pairs))[1]


def test_index_pairs_join_similar_pairs_into_identities(data):
    X, labels, index, s = data
    plda = PLDA(preprocessor=X).fit(index, s)
    # the identities are the connected components of the similar pairs, each image once
    used = np.unique(index[s == 1])
    assert plda.n_identities_ <= used.size // 2
    assert_allclose(plda.pair_score(index), plda.pair_score(X[index]))


def test_pipeline_with_length_normalisation(data):
    X, labels, index, s = data
    pipe = make_pipeline(LengthNormalizer(), PLDA()).fit(X[index], s)
    norms = np.linalg.norm(pipe[0].transform(X), axis=1)
    assert_allclose(norms, 1.0)
    assert pipe.score(X[index], s) > 0.8


def test_points_threshold_is_the_bayes_decision(data):
    X, labels, index, s = data
    plda = PLDA().fit(X, labels)
    assert plda.threshold_ == 0.0
    assert_allclose(plda.decision_function(X[index]), plda.pair_score(X[index]))


@pytest.mark.parametrize("bad, message", [
    (lambda X, y: (X[:5], np.zeros(5)), "single identity"),
    (lambda X, y: (X[:20], np.arange(20)), "one sample"),
    (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X), y), "NaN"),
    (lambda X, y: (np.where(np.arange(X.size).reshape(X.shape) == 3, np.inf, X), y),
     "infinity"),
    (lambda X, y: (X, y[:-1]), "shape"),
])
def test_bad_training_input(data, bad, message):
    X, labels, _, _ = data
    with pytest.raises(ValueError, match=message):
        PLDA().fit(*bad(X, labels))


def test_bad_scoring_input(data):
    X, labels, index, s = data
    plda = PLDA().fit(X, labels)
    with pytest.raises(ValueError, match="features"):
        plda.pair_score(X[index][:, :, :-1])
    with pytest.raises(ValueError, match="NaN"):
        plda.pair_score(np.full((2, 2, X.shape[1]), np.nan))
    with pytest.raises(ValueError, match="features"):
        plda.score_sets([X[:3, :-1]], [X[3]])
    with pytest.raises(ValueError, match="every pair is dissimilar"):
        PLDA().fit(X[index][s != 1], s[s != 1])
    with pytest.raises(ValueError, match="n_components"):
        PLDA(n_components=D + 1).fit(X, labels)


# --------------------------------------------------------------------------- transformers


def test_lda_whitens_the_within_class_covariance(data):
    from metricfit import LDA

    X, labels, index, s = data
    lda = LDA(n_components=4).fit(X, labels)
    Z = lda.transform(X)
    assert Z.shape == (X.shape[0], 4)
    means = np.array([Z[labels == c].mean(axis=0) for c in np.unique(labels)])
    within = (Z - means[np.unique(labels, return_inverse=True)[1]])
    assert_allclose(within.T @ within / X.shape[0], np.eye(4), atol=1e-4)
    assert lda.transform(X[index]).shape == (index.shape[0], 2, 4)
    on_pairs = LDA(n_components=3).fit(X[index], s)  # similar pairs as classes of two
    assert on_pairs.transform(X.astype(np.float32)).dtype == np.float32
    with pytest.raises(ValueError, match="1 identity .*at least 2"):
        LDA().fit(X[:4], np.zeros(4))
    one_similar = X[index][s == 1][:1]  # one similar pair: one class of two points
    with pytest.raises(ValueError, match="similar pairs of y .*1 identity"):
        LDA().fit(one_similar, [1])


def test_length_normalizer_bad_input(data):
    X, labels, _, _ = data
    norm = LengthNormalizer().fit(X)
    with pytest.raises(ValueError, match="features"):
        norm.transform(X[:, :-1])
    with pytest.raises(ValueError, match="NaN"):
        LengthNormalizer().fit(np.full((3, 2), np.nan))
    assert_allclose(LengthNormalizer(whiten=False).fit(X).transform(X.mean(axis=0)[None]), 0)


def test_the_plda_scorer_is_the_one_home_of_the_llr():
    """PLDA's pair scores, N-vs-M scores and the back-end's (n, K) cohort scores all come from
    backend.plda.PLDAScorer; its GEMM expansion is the pairwise LLR."""
    from metricfit.backend.plda import PLDAScorer, plda_scorer

    rng = np.random.default_rng(0)
    B, W = true_model()
    X, labels = draw(B, W, 60, 4, rng)
    plda = PLDA().fit(X, labels)
    scorer = plda.scorer_
    assert isinstance(scorer, PLDAScorer) and scorer.psi is plda.psi_
    assert plda_scorer(plda) is not None and plda_scorer(PLDA()) is None
    A, C = plda.transform(X[:5]), plda.transform(X[5:12])
    pairs = np.stack([np.repeat(A, 7, axis=0), np.tile(C, (5, 1))], axis=1)
    assert_allclose(scorer.cross_llr(A, C).ravel(), scorer.pair_llr(pairs[:, 0], pairs[:, 1]))
    assert_allclose(scorer.pair_llr(pairs[:, 0], pairs[:, 1]),
                    plda.pair_score(np.stack([np.repeat(X[:5], 7, axis=0),
                                              np.tile(X[5:12], (5, 1))], axis=1)))
