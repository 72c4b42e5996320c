"""How the selections judge their candidates (issue 28 item 3): the validation fold's maxDA,
minDCF, or both at least level with the start, on the validation fold alone or with
image-disjoint parts of the training pairs (``Judge``, ``pair_groups``)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metricfit.experiments.runs import ExperimentConfig, run_experiment
from metricfit.experiments.selection import (
    NO_LEARNING,
    Judge,
    pair_groups,
    select,
    select_and_test,
    select_lambda,
)
from metricfit.pairs import sample_pairs

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _results(acc, dcf):
    return {"mean_test_maxda": np.asarray(acc, float),
            "mean_test_neg_min_dcf": -np.asarray(dcf, float)}


def test_accuracy_takes_the_best_maxda_the_first_on_a_tie():
    results = _results([0.90, 0.95, 0.95, 0.80], [0.1, 0.9, 0.2, 0.0])
    assert Judge().choose(results, [False, False, False, True]) == 1


def test_min_dcf_takes_the_lowest_then_the_best_maxda():
    results = _results([0.90, 0.95, 0.97, 0.80], [0.3, 0.2, 0.2, 0.5])
    assert Judge("min-dcf").choose(results, [False] * 4) == 2


def test_both_keeps_only_candidates_level_with_the_start_in_both():
    # candidate 1 has the best maxDA but a worse minDCF than the start (3): not kept;
    # candidate 2 is better in both; candidate 0 better in minDCF, worse in maxDA
    results = _results([0.90, 0.99, 0.96, 0.95], [0.05, 0.40, 0.10, 0.10])
    assert Judge("both").choose(results, [False, False, False, True]) == 2
    # nothing better in both: the start
    results = _results([0.90, 0.99, 0.94, 0.95], [0.05, 0.40, 0.10, 0.10])
    assert Judge("both").choose(results, [False, False, False, True]) == 3
    # without a start candidate 'both' is 'accuracy'
    assert Judge("both").choose(results, [False] * 4) == 1


def test_both_takes_the_best_of_several_starts_as_the_reference():
    # two starts (e.g. two WPCA dimensions): the reference is the start of better maxDA (2)
    results = _results([0.97, 0.90, 0.96, 0.98], [0.20, 0.05, 0.10, 0.10])
    assert Judge("both").choose(results, [False, True, True, False]) == 3


@pytest.mark.parametrize("kwargs, match", [
    (dict(criterion="auc"), "criterion must be one of"),
    (dict(folds=-1), "folds must be an integer"),
    (dict(folds=3), "needs groups"),
    (dict(prior=1.0), "prior must be in"),
])
def test_bad_settings_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Judge(**kwargs)


def test_too_few_groups_is_an_error_naming_them():
    with pytest.raises(ValueError, match="the training pairs form 2"):
        Judge(folds=3, groups=[0, 0, 1, 1]).splits(4, 2)
    with pytest.raises(ValueError, match="one per training pair"):
        Judge(folds=2, groups=[0, 1]).splits(4, 2)


def test_pair_groups_are_the_components_of_the_image_graph():
    pairs = np.array([[0, 1], [2, 3], [1, 4], [5, 5], [3, 6]])
    groups = pair_groups(pairs)
    assert groups[0] == groups[2] and groups[1] == groups[4]
    assert len({groups[0], groups[1], groups[3]}) == 3
    with pytest.raises(ValueError, match="index_pairs must have shape"):
        pair_groups(np.arange(6))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 5))
def test_grouped_parts_share_no_image_and_the_last_split_is_the_validation_fold(seed, folds):
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, 60, size=(40, 2))
    groups = pair_groups(pairs)
    if np.unique(groups).size < folds:
        return
    splits = Judge(folds=folds, groups=groups).splits(40, 7)
    assert len(splits) == folds + 1
    for train, test in splits[:-1]:
        assert not set(pairs[train].ravel()) & set(pairs[test].ravel())
        assert np.all(test < 40) and np.all(train < 40)
    assert np.array_equal(splits[-1][0], np.arange(40))
    assert np.array_equal(splits[-1][1], np.arange(40, 47))


D = 16


def _embeddings(rng, n_identities, noise, per=4):
    centres = rng.normal(size=(n_identities, D))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    labels = np.repeat(np.arange(n_identities), per)
    return centres[labels] + noise * rng.normal(size=(labels.size, D)), labels


def _split(rng, n, noise, n_pairs, seed):
    X, labels = _embeddings(rng, n, noise)
    index, y = sample_pairs(labels, n_pairs, n_pairs, random_state=seed, balance="identity")
    return X, index, y


def test_both_never_leaves_a_start_that_wins_on_every_set():
    """Good embeddings (isotropic noise: the cosine is the right metric) and a lambda that
    lets CSML learn from few pairs: judged by 'both' on the validation fold and four
    training parts, the selection keeps the start, and the Result is the cosine's."""
    rng = np.random.default_rng(0)
    sets = [_split(rng, n, 0.35, 100, k) for k, n in enumerate((120, 60, 60))]
    train, val, test = [(X[index], y) for X, index, y in sets]
    judge = Judge("both", folds=4, groups=pair_groups(sets[0][1]))
    assert select_lambda("csml-i", train, val, (1e-3,), 50, no_learning=False) == 1e-3
    assert select_lambda("csml-i", train, val, (1e-3,), 50, True, judge) == NO_LEARNING
    chosen = select("csml-i", train, val, lams=(1e-3,), dims=(D,), normalize=(False,),
                    max_iter=50, no_learning=True, judge=judge)
    assert chosen.lam == NO_LEARNING and 0 <= chosen.val_min_dcf <= 1


def test_both_learns_where_learning_wins_in_both():
    """Identities separated in 4 of 16 dimensions, the other 12 noise: TSML learns to drop
    the noise, better in maxDA and minDCF on every set, and 'both' takes it."""
    rng = np.random.default_rng(1)

    def data(n, seed):
        centres = np.zeros((n, D))
        centres[:, :4] = rng.normal(size=(n, 4))
        labels = np.repeat(np.arange(n), 4)
        X = centres[labels] + 0.15 * rng.normal(size=(labels.size, D))
        X[:, 4:] += 1.5 * rng.normal(size=(labels.size, D - 4))
        index, y = sample_pairs(labels, 150, 150, random_state=seed, balance="identity")
        return X, index, y

    sets = [data(n, k) for k, n in enumerate((150, 80, 80))]
    train, val, test = [(X[index], y) for X, index, y in sets]
    judge = Judge("both", folds=3, groups=pair_groups(sets[0][1]))
    result = select_and_test("tsml-i", train, val, test, lams=(1e-2,), max_iter=100,
                             no_learning=True, judge=judge)
    assert result.lam == 1e-2


def test_run_experiment_judges_with_the_training_parts():
    """Training pairs of disjoint image pairs (every image in one pair): 'both' on three
    image-disjoint parts and the validation fold keeps CSML's start."""
    rng = np.random.default_rng(2)
    X, labels = _embeddings(rng, 90, 0.35)
    part = labels % 3
    splits = []
    for k in range(3):
        rows = np.flatnonzero(part == k)
        index, y = sample_pairs(labels[rows], 80, 80, random_state=k, balance="identity")
        splits.append((rows[index], y))
    n = 2 * len(splits[0][1])  # the training pairs on fresh images, one pair each
    X = np.concatenate([X, X[splits[0][0].ravel()] + 0.05 * rng.normal(size=(n, D))])
    splits[0] = (len(labels) + np.arange(n).reshape(-1, 2), splits[0][1])
    config = ExperimentConfig(methods=["csml-i"], lams=(1e-3,), max_iter=40,
                              start_candidates=True, select_on="both", select_folds=3)
    assert config.judge(splits[0][0]).folds == 3
    (result,) = run_experiment(X, splits, config)
    assert result.lam == NO_LEARNING


def test_too_few_image_groups_fall_back_to_random_parts_with_a_warning():
    config = ExperimentConfig(select_on="both", select_folds=3)
    pairs = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2], [1, 3]])  # one component
    with pytest.warns(UserWarning, match="1 image-disjoint group.*share images"):
        judge = config.judge(pairs)
    assert sorted(np.bincount(judge.groups)) == [2, 2, 2]
    assert len(judge.splits(6, 2)) == 4
    with pytest.raises(ValueError, match="criterion must be one of"):
        ExperimentConfig(select_on="auc")
