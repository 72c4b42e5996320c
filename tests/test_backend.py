"""The verification back-end around the learners: DCF / Cllr / DET metrics and scorers,
calibration, score normalisation, multi-enrolment and trial files."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.model_selection import GridSearchCV

from metricfit import PLDA, TSML, CosineSimilarity, metrics
from metricfit.backend import (
    CalibratedScorer,
    LinearCalibration,
    PAVCalibration,
    ScoreNormalizer,
    score_sets,
)
from metricfit.backend import trials as trial_files
from metricfit.backend.score_norm import cohort_scores, normalize_scores
from metricfit.pairs import sample_pairs


def gaussian_scores(rng, n_target=2000, n_non=20000, gap=3.0):
    scores = np.r_[rng.normal(gap, 1, n_target), rng.normal(0, 1, n_non)]
    return np.r_[np.ones(n_target), -np.ones(n_non)], scores


# --------------------------------------------------------------------------- metrics


def slow_min_dcf(y, scores, p, c_miss=1, c_fa=1):
    best = np.inf
    norm = min(c_miss * p, c_fa * (1 - p))
    for t in np.r_[np.unique(scores), np.inf]:
        accept = scores >= t
        dcf = (c_miss * p * np.mean(~accept[y == 1]) + c_fa * (1 - p) * np.mean(accept[y != 1]))
        best = min(best, dcf / norm)
    return best


@pytest.mark.parametrize("preset, p", [("p01", 0.01), ("p001", 0.001), ("p05", 0.05)])
def test_min_dcf_matches_a_slow_twin(rng, preset, p):
    y, scores = gaussian_scores(rng, 200, 2000)
    scores = np.round(scores, 1)  # ties
    assert_allclose(metrics.min_dcf(y, scores, preset=preset)[0], slow_min_dcf(y, scores, p))
    assert_allclose(metrics.min_dcf(y, scores, p_target=p)[0], slow_min_dcf(y, scores, p))


def test_dcf_and_cllr_of_known_systems(rng):
    y = np.r_[np.ones(10), -np.ones(10)]
    assert metrics.cllr(y, np.zeros(20)) == pytest.approx(1.0)
    assert metrics.act_dcf(y, np.zeros(20), preset="p01") == pytest.approx(1.0)
    assert metrics.min_cllr(y, np.r_[np.ones(10), -np.ones(10)]) == pytest.approx(0.0)
    # the exact LLR of two unit Gaussians 3 apart is calibrated
    y, s = gaussian_scores(rng, 20000, 20000)
    llr = 3 * s - 4.5
    assert metrics.cllr(y, llr) - metrics.min_cllr(y, llr) < 0.01
    assert metrics.cllr(y, 3 * llr) > metrics.cllr(y, llr) + 0.05  # over-confident
    assert metrics.min_cllr(y, 3 * llr) == pytest.approx(metrics.min_cllr(y, llr))


def test_fnmr_at_fmr_det_and_convex_hull(rng):
    y, s = gaussian_scores(rng, 1000, 1000)
    fmr, fnmr, thresholds = metrics.det_curve(y, s)
    assert (np.diff(fmr) <= 0).all() and (np.diff(fnmr) >= 0).all()
    assert metrics.fnmr_at_fmr(y, s, 0.01) == metrics.false_reject_at_false_accept(y, s, 0.01)
    p_fa, p_miss = metrics.roc_convex_hull(y, s)
    assert p_fa[0] == 1 and p_miss[-1] == 1
    # convex hull: the slopes d p_miss / d(-p_fa) between vertices increase
    step_fa, step_miss = np.diff(-p_fa), np.diff(p_miss)
    cross = step_miss[1:] * step_fa[:-1] - step_miss[:-1] * step_fa[1:]
    assert (cross >= -1e-12).all()


def test_plot_det_draws_on_normal_deviate_axes(rng):
    pytest.importorskip("matplotlib")
    y, s = gaussian_scores(rng, 100, 100)
    ax = metrics.plot_det({"a": (y, s), "b": (y, 2 * s)})
    assert len(ax.get_lines()) == 2
    assert ax.get_xlim()[0] == pytest.approx(-3.09, abs=0.01)  # norm.ppf(0.001)


def test_scorers_in_grid_search(rng):
    labels = np.repeat(np.arange(50), 4)
    X = rng.normal(size=(50, 4))[labels] * 3 + rng.normal(size=(200, 4))
    index, s = sample_pairs(labels, 150, 150, random_state=0)
    for name in ("neg_min_dcf", "neg_act_dcf", "neg_cllr", "neg_min_cllr", "neg_fmr100"):
        search = GridSearchCV(PLDA(), {"n_iter": [1, 10]}, cv=3,
                              scoring=metrics.get_scorer(name)).fit(X[index], s)
        assert np.isfinite(search.best_score_) and search.best_score_ <= 0
    plda = PLDA().fit(X[index], s)
    assert metrics.neg_cllr_scorer(plda, X[index], s) == -metrics.cllr(s, plda.pair_score(
        X[index]))


def test_metric_input_errors():
    with pytest.raises(ValueError, match="preset"):
        metrics.min_dcf([1, -1], [1.0, 0.0], preset="sre99")
    with pytest.raises(ValueError, match="p_target"):
        metrics.act_dcf([1, -1], [1.0, 0.0], p_target=1.5)
    with pytest.raises(ValueError, match="NaN"):
        metrics.cllr([1, -1], [np.nan, 0.0])
    with pytest.raises(ValueError, match="both"):
        metrics.cllr([1, 1], [1.0, 0.0])


# --------------------------------------------------------------------------- calibration


def test_linear_calibration_on_held_out_trials(rng):
    """A learner's scores (cosine of a TSML on synthetic identities): calibrated on one half
    of the trials, evaluated on the other, actDCF within 5 % of minDCF and Cllr below the raw
    Cllr."""
    y, s = gaussian_scores(rng, 5000, 50000, gap=3.0)
    raw = 0.1 * s + 0.3  # a learner's cosine-like scale: not an LLR
    half = rng.permutation(y.size) < y.size // 2
    calibration = LinearCalibration().fit(raw[half], y[half])
    llr = calibration.transform(raw[~half])
    min_dcf = metrics.min_dcf(y[~half], llr, preset="p01")[0]
    assert metrics.act_dcf(y[~half], llr, preset="p01") <= 1.05 * min_dcf
    assert metrics.cllr(y[~half], llr) < metrics.cllr(y[~half], raw[~half])
    assert calibration.slope_ == pytest.approx(30, rel=0.05)  # the true LLR is 3 s - 4.5


def test_calibrated_learner_scores():
    """TSML's cosine scores on synthetic identities (train / validation / test identities
    disjoint): calibrated on the validation trials at the operating prior (0.05), the
    held-out actDCF(0.05) is within 5 % of minDCF and Cllr falls below the raw Cllr."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(600, 6)) * 2
    labels = np.repeat(np.arange(600), 5)
    X = centres[labels] + rng.normal(size=(3000, 6))
    parts = [labels < 100, (labels >= 100) & (labels < 350), labels >= 350]
    sets = []
    for i, (mask, n_t, n_n) in enumerate(zip(parts, (500, 2000, 2000), (500, 20000, 20000),
                                             strict=True)):
        index, s = sample_pairs(labels[mask], n_t, n_n, random_state=i)
        sets.append((X[mask][index], s))
    learner = TSML(lam=0.01).fit(*sets[0])
    (Xte, s_te) = sets[2]
    raw = learner.pair_score(Xte)
    llr = CalibratedScorer(learner, prior=0.05).fit(*sets[1]).pair_score(Xte)
    assert metrics.act_dcf(s_te, llr, preset="p05") <= 1.05 * metrics.min_dcf(
        s_te, llr, preset="p05")[0]
    assert metrics.cllr(s_te, llr) < metrics.cllr(s_te, raw)
    pav = CalibratedScorer(learner, method="pav").fit(*sets[1])
    assert np.isfinite(pav.pair_score(Xte)).all()
    assert np.abs(PAVCalibration().fit(raw, s_te).transform(raw)).max() <= 20


# --------------------------------------------------------------------------- score normalisation


def test_normalisation_formulas(rng):
    scores = rng.normal(size=5)
    enrol, test = rng.normal(size=(5, 30)), rng.normal(size=(5, 30))
    z = (scores - enrol.mean(1)) / enrol.std(1)
    t = (scores - test.mean(1)) / test.std(1)
    assert_allclose(normalize_scores(scores, enrol, test, "z-norm"), z)
    assert_allclose(normalize_scores(scores, enrol, test, "t-norm"), t)
    assert_allclose(normalize_scores(scores, enrol, test, "s-norm"), (z + t) / 2)
    top = -np.sort(-enrol, axis=1)[:, :5]
    as_norm = normalize_scores(scores, enrol, test, "as-norm", top_n=5)
    top_t = -np.sort(-test, axis=1)[:, :5]
    expected = 0.5 * ((scores - top.mean(1)) / top.std(1) + (scores - top_t.mean(1)) / top_t.std(1))
    assert_allclose(as_norm, expected)
    with pytest.raises(ValueError, match="normalisation"):
        normalize_scores(scores, enrol, test, "q-norm")


def test_score_normalizer_on_a_learner(rng):
    X = rng.normal(size=(40, 5))
    cosine = CosineSimilarity().fit(np.stack([X[:10], X[10:20]], 1), np.r_[[1] * 5, [-1] * 5])
    S = cohort_scores(cosine, X[:3], X[20:])
    expected = [[x @ c / np.linalg.norm(x) / np.linalg.norm(c) for c in X[20:]] for x in X[:3]]
    assert_allclose(S, expected)
    pairs = np.stack([X[:4], X[4:8]], 1)
    out = ScoreNormalizer(cosine, X[20:], "as-norm", top_n=5).pair_score(pairs)
    assert out.shape == (4,) and np.isfinite(out).all()
    with pytest.raises(ValueError, match="features"):
        ScoreNormalizer(cosine, X[20:, :3]).pair_score(pairs)


# --------------------------------------------------------------------------- multi-enrolment


def test_enrolment_methods(rng):
    centres = rng.normal(size=(30, 4)) * 3
    labels = np.repeat(np.arange(30), 5)
    X = centres[labels] + rng.normal(size=(150, 4))
    plda = PLDA().fit(X, labels)
    enrol = [X[0:3], X[5:8]]
    test = [X[3:5], X[20]]
    assert_allclose(score_sets(plda, enrol, test), plda.score_sets(enrol, test))
    one = score_sets(plda, [X[0]], [X[1]])
    assert_allclose(one, plda.pair_score(np.stack([X[[0]], X[[1]]], 1)))

    def pairs(e, t):
        return np.stack([np.repeat(e, len(t), 0), np.tile(t, (len(e), 1))], 1)

    assert_allclose(score_sets(plda, enrol[:1], test[:1], "mean-score"),
                    plda.pair_score(pairs(X[0:3], X[3:5])).mean())
    assert_allclose(score_sets(plda, enrol[:1], test[:1], "max-score"),
                    plda.pair_score(pairs(X[0:3], X[3:5])).max())
    cosine = CosineSimilarity().fit(np.stack([X[:10], X[10:20]], 1), np.r_[[1] * 5, [-1] * 5])

    def unit(Z):
        return Z / np.linalg.norm(Z, axis=1, keepdims=True)

    a, b = unit(X[0:3]).mean(0), unit(X[3:5]).mean(0)
    assert_allclose(score_sets(cosine, enrol[:1], test[:1]),
                    a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    gauss = score_sets(cosine, [X[0:5]] * 2, [X[1], X[100]], "gaussian")
    assert gauss[0] > gauss[1]
    with pytest.raises(ValueError, match="PLDA"):
        score_sets(cosine, enrol, test, "plda")
    with pytest.raises(ValueError, match="sets"):
        score_sets(plda, enrol, test[:1])


# --------------------------------------------------------------------------- trial files


def test_trial_and_score_files_round_trip(tmp_path, rng):
    path = tmp_path / "trials.txt"
    trial_files.write_trials(path, ["a", "b"], ["t1", "t2"], [1, -1])
    assert path.read_text() == "a t1 target\nb t2 nontarget\n"
    enrol, test, y = trial_files.read_trials(path)
    assert list(enrol) == ["a", "b"] and list(y) == [1, -1]
    scores = rng.normal(size=2)
    trial_files.write_scores(tmp_path / "scores.txt", enrol, test, scores)
    assert_allclose(trial_files.read_scores(tmp_path / "scores.txt")[2], scores, rtol=0)


def test_score_trials_and_unknown_ids(tmp_path, rng):
    centres = rng.normal(size=(20, 3)) * 3
    labels = np.repeat(np.arange(20), 4)
    X = centres[labels] + rng.normal(size=(80, 3))
    plda = PLDA().fit(X, labels)
    enrolments = {"m0": X[0:3], "m1": X[4:7]}
    segments = {"s0": X[3], "s1": X[7], "s2": X[10]}
    scores = trial_files.score_trials(plda, ["m0", "m0", "m1"], ["s0", "s1", "s1"],
                                      enrolments, segments)
    assert scores[0] > scores[1] and scores[2] > scores[1]
    with pytest.raises(ValueError, match="unknown test id.*s9"):
        trial_files.score_trials(plda, ["m0"], ["s9"], enrolments, segments)
    with pytest.raises(ValueError, match="unknown enrolment id.*m7"):
        trial_files.score_trials(plda, ["m7"], ["s0"], enrolments, segments)
    bad = tmp_path / "bad.txt"
    bad.write_text("a b target\nc d maybe\n")
    with pytest.raises(ValueError, match="line 2"):
        trial_files.read_trials(bad)
    bad.write_text("a b nan\n")
    with pytest.raises(ValueError, match="line 1"):
        trial_files.read_scores(bad)


def test_score_fusion_outputs_calibrated_llrs(rng):
    from metricfit.learners.fusion import ScoreFusion

    centres = rng.normal(size=(400, 4)) * 2
    labels = np.repeat(np.arange(400), 4)
    X = centres[labels] + rng.normal(size=(1600, 4))
    fitted = []
    for part, seed in ((labels < 100, 0), (labels >= 100, 1)):
        index, s = sample_pairs(labels[part], 3000, 3000, random_state=seed)
        fitted.append((X[part][index], s))
    plda = PLDA().fit(X[labels < 100], labels[labels < 100])
    cosine = CosineSimilarity().fit(*fitted[0])
    fusion = ScoreFusion([("plda", plda), ("cos", cosine)], method="llr").fit(*fitted[0])
    llr = fusion.pair_score(fitted[1][0])
    y = fitted[1][1]
    assert metrics.cllr(y, llr) - metrics.min_cllr(y, llr) < 0.05


@pytest.mark.parametrize("make", ["plda", "plda-lnorm", "wccn", "tsml"])
def test_fast_cohort_scores_match_pair_scores(rng, make):
    from sklearn.pipeline import make_pipeline

    from metricfit import WCCN, LengthNormalizer
    from metricfit.backend.score_norm import _fast_cross_scores
    from metricfit.metrics import llr_response

    centres = rng.normal(size=(30, 5)) * 2
    labels = np.repeat(np.arange(30), 4)
    X = centres[labels] + rng.normal(size=(120, 5))
    index, s = sample_pairs(labels, 100, 100, random_state=0)
    learner = {"plda": PLDA(), "plda-lnorm": make_pipeline(LengthNormalizer(), PLDA()),
               "wccn": make_pipeline(WCCN(), CosineSimilarity()),
               "tsml": TSML(lam=0.1)}[make].fit(X[index], s)
    A, C = X[:7], X[50:61]
    slow = np.array([[llr_response(learner, np.stack([a, c])[None])[0] for c in C] for a in A])
    fast = _fast_cross_scores(learner, A, C)
    assert fast is not None
    assert_allclose(fast, slow, rtol=1e-9, atol=1e-9)
    assert_allclose(cohort_scores(learner, A, C), slow, rtol=1e-9, atol=1e-9)


def test_the_gaussian_claim_model_lives_in_the_backend_and_the_cnn_name_is_deprecated():
    import importlib
    import sys

    from metricfit.backend import gaussian

    sys.modules.pop("metricfit.cnn.gaussian", None)
    with pytest.warns(FutureWarning, match="metricfit.backend.gaussian instead"):
        alias = importlib.import_module("metricfit.cnn.gaussian")
    assert alias.gaussian_claims is gaussian.gaussian_claims
    assert alias.fit_gaussian is gaussian.fit_gaussian


def test_the_backend_reads_the_declared_score_kind():
    """A calibrated scorer declares 'llr'; a scorer that declares no kind is refused, never
    given a guessed fast path."""
    from sklearn.base import BaseEstimator

    from metricfit.backend import score_sets
    from metricfit.learners import score_kind

    rng = np.random.default_rng(0)
    pairs = rng.normal(size=(40, 2, 3))
    y = np.where(np.arange(40) % 2 == 0, 1, -1)
    pairs[y == 1, 1] = pairs[y == 1, 0] + 0.1 * rng.normal(size=(20, 3))
    cosine = CosineSimilarity().fit(pairs, y)
    assert score_kind(CalibratedScorer(cosine).fit(pairs, y)) == "llr"

    class Undeclared(BaseEstimator):
        def pair_score(self, pairs):
            return cosine.pair_score(pairs)

    with pytest.raises(TypeError, match="Undeclared declares no score kind"):
        cohort_scores(Undeclared(), pairs[:3, 0], pairs[:, 1])
    with pytest.raises(TypeError, match="declares no score kind"):
        score_sets(Undeclared(), [pairs[:2, 0]], [pairs[2, 1]])
