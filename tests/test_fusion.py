"""ScoreFusion and stack_scores (seed 002 IV.D SVM fusion; seed 001 5.3 logistic fusion)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score

from metricfit import TSML, CosineSimilarity
from metricfit.learners.fusion import ScoreFusion, stack_scores
from metricfit.metrics import equal_error_rate, max_decision_accuracy
from metricfit.pairs import sample_pairs

D_A, D_B = 6, 6


def _two_descriptors(rng, n_ids, per_id, noise, d_nuisance=0):
    """Two descriptors of the same faces from independent identity codes, so that their
    errors are independent; optional nuisance dimensions (large, identity-free)."""
    labels = np.repeat(np.arange(n_ids), per_id)
    views = []
    for d in (D_A, D_B):
        centers = rng.normal(size=(n_ids, d))
        view = centers[labels] + noise * rng.normal(size=(labels.size, d))
        if d_nuisance:
            view = np.hstack([view, 3.0 * rng.normal(size=(labels.size, d_nuisance))])
        views.append(view)
    return labels, views


def _pairs(rng, n_ids, per_id, n_pairs, noise, seed, d_nuisance=0):
    labels, (A, B) = _two_descriptors(rng, n_ids, per_id, noise, d_nuisance)
    idx, y = sample_pairs(labels, n_pairs, n_pairs, random_state=seed)
    return A[idx], B[idx], y


@pytest.fixture(scope="module")
def folds():
    """Train / validation / test pairs from disjoint identities (the 8/1/1 rotation idea)."""
    rng = np.random.default_rng(0)
    return [_pairs(rng, n_ids, 6, n_pairs, noise=1.0, seed=seed)
            for seed, (n_ids, n_pairs) in enumerate([(40, 300), (30, 300), (40, 600)])]


@pytest.fixture(scope="module")
def bases(folds):
    A, B, y = folds[0]
    return [("a", CosineSimilarity().fit(A, y)), ("b", CosineSimilarity().fit(B, y))]


@pytest.mark.parametrize("method", ["svm", "logistic"])
def test_fusion_of_independent_scorers_beats_each_alone(folds, bases, method):
    (_, _, _), (Av, Bv, yv), (At, Bt, yt) = folds
    fusion = ScoreFusion(bases, method=method).fit([Av, Bv], yv)  # validation fold only
    fused_acc = fusion.score([At, Bt], yt)
    fused_eer = equal_error_rate(yt, fusion.pair_score([At, Bt]))[0]
    for (name, est), P in zip(bases, (At, Bt), strict=True):
        # each base at its best possible (oracle) threshold on the test pairs
        alone_acc = max_decision_accuracy(yt, est.pair_score(P))[0]
        alone_eer = equal_error_rate(yt, est.pair_score(P))[0]
        assert fused_acc > alone_acc + 0.03, (name, fused_acc, alone_acc)
        assert fused_eer < alone_eer - 0.03, (name, fused_eer, alone_eer)
    assert set(np.unique(fusion.predict([At, Bt]))) <= {-1, 1}
    assert fusion.coef_.shape == (2,) and (fusion.coef_ > 0).all()


def test_fusion_of_tsml_on_two_descriptors(folds):
    rng = np.random.default_rng(1)
    (A, B, y), (Av, Bv, yv), (At, Bt, yt) = [
        _pairs(rng, n_ids, 6, n_pairs, noise=0.8, seed=s, d_nuisance=6)
        for s, (n_ids, n_pairs) in enumerate([(40, 300), (30, 300), (40, 600)])]
    bases = [("a", TSML(n_components=D_A).fit(A, y)), ("b", TSML(n_components=D_B).fit(B, y))]
    fusion = ScoreFusion(bases, method="svm").fit({"a": Av, "b": Bv}, yv)
    fused = fusion.score({"a": At, "b": Bt}, yt)
    for (name, est), P in zip(bases, (At, Bt), strict=True):
        assert fused > est.score(P, yt) + 0.03, name  # base at its own calibrated threshold


def test_input_forms_and_selectors_agree(folds, bases):
    (_, _, _), (Av, Bv, yv), (At, Bt, _) = folds
    joint_v, joint_t = np.concatenate([Av, Bv], axis=2), np.concatenate([At, Bt], axis=2)
    listed = ScoreFusion(bases).fit([Av, Bv], yv).decision_function([At, Bt])
    keyed = ScoreFusion(bases).fit({"b": Bv, "a": Av}, yv).decision_function({"a": At, "b": Bt})
    mask = np.arange(D_A + D_B) >= D_A
    selected = [(bases[0][0], bases[0][1], np.arange(D_A)), (bases[1][0], bases[1][1], mask)]
    shared = ScoreFusion(selected).fit(joint_v, yv).decision_function(joint_t)
    by_slice = [(bases[0][0], bases[0][1], slice(0, D_A)),
                (bases[1][0], bases[1][1], lambda P: P[:, :, D_A:])]
    sliced = ScoreFusion(by_slice).fit(joint_v, yv).decision_function(joint_t)
    np.testing.assert_allclose(keyed, listed)
    np.testing.assert_allclose(shared, listed)
    np.testing.assert_allclose(sliced, listed)


def test_stack_scores_columns_are_the_base_scores(folds, bases):
    _, _, (At, Bt, _) = folds
    Z = stack_scores(bases, [At, Bt])
    assert Z.shape == (len(At), 2)
    np.testing.assert_allclose(Z[:, 0], bases[0][1].pair_score(At))
    np.testing.assert_allclose(Z[:, 1], bases[1][1].pair_score(Bt))


def test_plain_scorer_with_decision_function_only():
    class Scorer:  # no fit, no pair_score: a plain scorer is accepted as is
        def decision_function(self, pairs):
            return -np.abs(pairs[:, 0, 0] - pairs[:, 1, 0])

    rng = np.random.default_rng(2)
    P = rng.normal(size=(80, 2, 1))
    y = np.where(np.abs(P[:, 0, 0] - P[:, 1, 0]) < 0.8, 1, 0)  # {0, 1} labels accepted
    fusion = ScoreFusion([("s", Scorer())], method="logistic").fit(P, y)
    assert fusion.score(P, y) > 0.9
    assert fusion.calibrate_threshold(P, y, strategy="eer").threshold_ != 0.0


def test_unfitted_base_estimator_is_a_value_error(folds, bases):
    _, (Av, Bv, yv), _ = folds
    unfitted = [bases[0], ("b", CosineSimilarity())]
    with pytest.raises(ValueError, match="not fitted"):
        ScoreFusion(unfitted).fit([Av, Bv], yv)
    with pytest.raises(ValueError, match="not fitted"):
        stack_scores([("t", TSML())], Av)


def test_mismatched_inputs_are_value_errors(folds, bases):
    _, (Av, Bv, yv), _ = folds
    with pytest.raises(ValueError, match="same pairs"):
        ScoreFusion(bases).fit([Av, Bv[:-1]], yv)
    with pytest.raises(ValueError, match="one per estimator"):
        ScoreFusion(bases).fit([Av], yv)
    with pytest.raises(ValueError, match="estimator names"):
        ScoreFusion(bases).fit({"a": Av, "c": Bv}, yv)
    with pytest.raises(ValueError, match="labels"):
        ScoreFusion(bases).fit([Av, Bv], yv[:-1])
    with pytest.raises(ValueError, match="features"):
        ScoreFusion(bases).fit([Av, Bv[:, :, :-1]], yv)
    with pytest.raises(ValueError, match="pair axis"):
        ScoreFusion(bases).fit([Av, np.swapaxes(Bv, 1, 2)], yv)
    fusion = ScoreFusion(bases).fit([Av, Bv], yv)
    with pytest.raises(ValueError, match="same pairs"):
        fusion.predict([Av[:5], Bv[:6]])


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "rbf"}, "method"), ({"C": 0.0}, "C must"), ({"C": "1"}, "C must")])
def test_bad_parameters(folds, bases, kwargs, match):
    _, (Av, Bv, yv), _ = folds
    with pytest.raises(ValueError, match=match):
        ScoreFusion(bases, **kwargs).fit([Av, Bv], yv)


@pytest.mark.parametrize("estimators, match", [
    ([], "empty"), ("ab", "list"), ([("a", object())], "neither"), ([("a",)], "each estimator"),
    ([(1, CosineSimilarity())], "strings")])
def test_bad_estimators(folds, estimators, match):
    _, (Av, _, yv), _ = folds
    with pytest.raises(ValueError, match=match):
        ScoreFusion(estimators).fit(Av, yv)


def test_duplicate_names(folds, bases):
    _, (Av, _, yv), _ = folds
    with pytest.raises(ValueError, match="unique"):
        ScoreFusion([bases[0], ("a", bases[1][1])]).fit([Av, Av], yv)


def test_inside_cross_val_score_base_estimators_untouched(folds, bases):
    _, (Av, Bv, yv), (At, Bt, _) = folds
    before = [est.pair_score(P) for (_, est), P in zip(bases, (At, Bt), strict=True)]
    estimators = [(bases[0][0], bases[0][1], slice(0, D_A)),
                  (bases[1][0], bases[1][1], slice(D_A, None))]
    fusion = ScoreFusion(estimators, method="logistic")
    scores = cross_val_score(fusion, np.concatenate([Av, Bv], axis=2), yv, cv=3)
    assert scores.shape == (3,) and (scores > 0.7).all()
    twin = clone(fusion)
    assert all(mine[1] is theirs[1]
               for mine, theirs in zip(twin.estimators, estimators, strict=True))
    for (_, est), P, old in zip(bases, (At, Bt), before, strict=True):
        np.testing.assert_array_equal(est.pair_score(P), old)
