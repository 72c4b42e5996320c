"""Identity-disjoint folds, pair generation within folds, and the CV splitters over pairs.

The key property: for every splitter and every split, no identity of a test pair occurs in
the training pairs (synthetic identities, and the LFW View 2 arrays when present).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import (
    BaseCrossValidator,
    GridSearchCV,
    KFold,
    check_cv,
    cross_validate,
)

from metricfit import TSML
from metricfit.datasets import lfw_unrestricted_training_pairs, lfw_view2_splitter
from metricfit.pairs import (
    ENUMERATE_LIMIT,
    FoldRotation,
    IdentityDisjointPairSplit,
    PredefinedPairFolds,
    check_pair_labels,
    check_pairs,
    check_points,
    fold_pairs,
    identity_folds,
    sample_pairs,
    unrestricted_pairs,
)

LFW_NPZ = "lfw_deepfunneled_gray_62x47.npz"


def paper_rotation(n_folds=10):
    """Seed 002 III.A, written out: experiment e trains on folds e..e+7, validates on e+8 and
    tests on e+9 (mod 10); the first uses (1..8), 9, 10 in the paper's 1-based numbering."""
    return [([(e + j) % n_folds for j in range(n_folds - 2)], (e + n_folds - 2) % n_folds,
             (e + n_folds - 1) % n_folds) for e in range(n_folds)]


def make_identities(n_identities=60, n_features=6, seed=0):
    """Identities with 1..8 samples each, and vectors clustered by identity."""
    rng = np.random.default_rng(seed)
    identities = np.repeat(np.arange(n_identities), rng.integers(1, 9, size=n_identities))
    centers = rng.normal(size=(n_identities, n_features))
    X = centers[identities] + 0.3 * rng.normal(size=(identities.size, n_features))
    return identities, X


@pytest.fixture(scope="module")
def synthetic():
    """Pairs drawn within 6 identity-disjoint folds: vectors, labels, folds, side identities."""
    identities, X = make_identities()
    folds = identity_folds(identities, n_folds=6, random_state=0)
    index_pairs, y, pair_fold = fold_pairs(identities, folds, 15, random_state=0)
    return dict(identities=identities, folds=folds, index_pairs=index_pairs, pairs=X[index_pairs],
                y=y, pair_fold=pair_fold, groups=identities[index_pairs])


SPLITTERS = {
    "predefined": lambda pair_fold: PredefinedPairFolds(pair_fold),
    "rotation": lambda pair_fold: FoldRotation(pair_fold, n_train_folds=4),
    "rotation-no-validation": lambda pair_fold: FoldRotation(pair_fold, n_train_folds=5),
    "identity-disjoint": lambda pair_fold: IdentityDisjointPairSplit(4, random_state=0),
}


def assert_identity_disjoint(groups, train, test):
    assert train.size > 0 and test.size > 0
    assert np.intersect1d(train, test).size == 0
    shared = np.intersect1d(groups[train].ravel(), groups[test].ravel())
    assert shared.size == 0, f"identities {shared[:5]} are in both training and test pairs"


# --- the key property: no identity crosses from training to test pairs ------------------------

@pytest.mark.parametrize("name", SPLITTERS)
def test_no_identity_crosses_from_training_to_test(synthetic, name):
    cv = SPLITTERS[name](synthetic["pair_fold"])
    splits = list(cv.split(synthetic["pairs"], synthetic["y"], synthetic["groups"]))
    assert len(splits) == cv.get_n_splits() >= 4
    for train, test in splits:
        assert_identity_disjoint(synthetic["groups"], train, test)


def test_the_check_catches_a_leaking_splitter(synthetic):
    # negative control: plain KFold over the same pairs puts identities on both sides
    groups = synthetic["groups"]
    train, test = next(KFold(5, shuffle=True, random_state=0).split(synthetic["pairs"]))
    with pytest.raises(AssertionError, match="in both training and test"):
        assert_identity_disjoint(groups, train, test)


def test_identity_disjoint_split_on_pairs_spanning_all_identities():
    identities, _ = make_identities(seed=1)
    index_pairs, y = sample_pairs(identities, 150, 400, random_state=0)  # no folds at all
    groups = identities[index_pairs]
    cv = IdentityDisjointPairSplit(n_splits=5, random_state=0)
    seen = np.zeros(len(y), dtype=int)
    for train, test in cv.split(index_pairs, y, groups):
        assert_identity_disjoint(groups, train, test)
        seen[test] += 1
    assert seen.max() == 1  # each pair is tested at most once
    assert np.all(seen[y == 1] == 1)  # similar pairs are never left out


def test_fold_rotation_validation_is_identity_disjoint_too(synthetic):
    groups = synthetic["groups"]
    for train, validation, test in FoldRotation(synthetic["pair_fold"], 4).split_with_validation():
        assert validation.size > 0
        assert_identity_disjoint(groups, train, validation)
        assert_identity_disjoint(groups, validation, test)
        assert_identity_disjoint(groups, train, test)


@given(st.lists(st.integers(0, 12), min_size=8, max_size=60), st.integers(2, 4),
       st.integers(0, 2**16))
@settings(max_examples=40, deadline=None)
def test_identity_disjoint_split_property(sides, n_splits, seed):
    sides = np.array(sides[: len(sides) // 2 * 2]).reshape(-1, 2)
    cv = IdentityDisjointPairSplit(n_splits=n_splits, random_state=seed)
    try:
        splits = list(cv.split(sides, groups=sides))
    except ValueError:  # too few identities, or a split without training or test pairs
        return
    for train, test in splits:
        assert_identity_disjoint(sides, train, test)


# --- LFW View 2 (skipped when the data is absent) ------------------------------------------------

@pytest.fixture(scope="module")
def lfw_view2(lfw_dir):
    if not (lfw_dir / LFW_NPZ).is_file():
        pytest.skip(f"{LFW_NPZ} not found under {lfw_dir}")
    with np.load(lfw_dir / LFW_NPZ) as npz:
        data = {key: npz[key] for key in ("person", "people_fold_view2", "pairs_view2",
                                          "pairs_view2_label", "pairs_view2_fold")}
    data["groups"] = data["person"][data["pairs_view2"]]
    data["data_home"] = lfw_dir.parent
    return data


def lfw_splitters(data):
    fold = data["pairs_view2_fold"]
    return [PredefinedPairFolds(fold), FoldRotation(fold), lfw_view2_splitter(data["data_home"]),
            lfw_view2_splitter(data["data_home"], n_train_folds=8),
            IdentityDisjointPairSplit(n_splits=10, random_state=0)]


def test_lfw_view2_no_identity_crosses_from_training_to_test(lfw_view2):
    groups = lfw_view2["groups"]
    for cv in lfw_splitters(lfw_view2):
        assert cv.get_n_splits() == 10
        for train, test in cv.split(lfw_view2["pairs_view2"], groups=groups):
            assert_identity_disjoint(groups, train, test)
            if not isinstance(cv, IdentityDisjointPairSplit):
                assert test.size == 600
                assert train.size == (5400 if isinstance(cv, PredefinedPairFolds) else 4800)


def test_lfw_view2_rotation_matches_verification_protocol(lfw_view2):
    fold = lfw_view2["pairs_view2_fold"]
    rotation = lfw_view2_splitter(lfw_view2["data_home"], n_train_folds=8)
    for (train, val, test), (train_folds, val_fold, test_fold) in zip(
            rotation.split_with_validation(), paper_rotation(), strict=True):
        np.testing.assert_array_equal(train, np.flatnonzero(np.isin(fold, train_folds)))
        np.testing.assert_array_equal(val, np.flatnonzero(fold == val_fold))
        np.testing.assert_array_equal(test, np.flatnonzero(fold == test_fold))
        assert_identity_disjoint(lfw_view2["groups"], val, test)


def test_lfw_unrestricted_training_pairs_avoid_held_out_people(lfw_view2):
    person, fold = lfw_view2["person"], lfw_view2["pairs_view2_fold"]
    train_folds, val_fold, test_fold = paper_rotation()[0]
    index_pairs, y = lfw_unrestricted_training_pairs(
        train_folds, 2000, data_home=lfw_view2["data_home"], random_state=0)
    assert (y == 1).sum() == 2000 and (y == -1).sum() == 2000
    sides = person[index_pairs]
    np.testing.assert_array_equal(sides[:, 0] == sides[:, 1], y == 1)
    assert np.isin(lfw_view2["people_fold_view2"][sides], train_folds).all()
    held_out = lfw_view2["groups"][np.isin(fold, [val_fold, test_fold])]
    assert np.intersect1d(sides.ravel(), held_out.ravel()).size == 0


def test_identity_folds_on_lfw_people_are_balanced(lfw_view2):
    person = lfw_view2["person"]
    folds = identity_folds(person, n_folds=10, random_state=0)
    sizes = np.bincount(folds, minlength=10)
    assert sizes.max() - sizes.min() <= np.bincount(person).max()
    assert all(np.unique(folds[person == p]).size == 1 for p in np.unique(person)[:200])


# --- FoldRotation: the rotation of seed 002 III.A -------------------------------------------------

def test_fold_rotation_reproduces_the_papers_rotation():
    rng = np.random.default_rng(0)
    pair_fold = rng.permutation(np.repeat(np.arange(10), 7))  # pairs in any order
    rotation = FoldRotation(pair_fold)
    assert rotation.get_n_splits() == 10
    reference = paper_rotation()
    assert rotation.rotation(0) == (list(range(8)), [8], 9)  # seed: (1..8), 9, 10, 1-based
    assert rotation.rotation(1) == (list(range(1, 9)), [9], 0)  # (2..9), 10, 1
    triples = list(rotation.split_with_validation(np.zeros((70, 2))))
    pairs_2 = list(rotation.split(np.zeros((70, 2))))
    for e, (train_folds, val_fold, test_fold) in enumerate(reference):
        assert rotation.rotation(e) == (train_folds, [val_fold], test_fold)
        train, val, test = triples[e]
        np.testing.assert_array_equal(train, np.flatnonzero(np.isin(pair_fold, train_folds)))
        np.testing.assert_array_equal(val, rotation.validation_indices(e))
        np.testing.assert_array_equal(val, np.flatnonzero(pair_fold == val_fold))
        np.testing.assert_array_equal(test, np.flatnonzero(pair_fold == test_fold))
        np.testing.assert_array_equal(pairs_2[e][0], train)
        np.testing.assert_array_equal(pairs_2[e][1], test)


def test_fold_rotation_uses_sorted_fold_values_and_optional_validation():
    pair_fold = np.array(["c", "a", "b", "a", "c", "b"])
    rotation = FoldRotation(pair_fold, n_train_folds=2)
    assert rotation.rotation(0) == (["a", "b"], [], "c")
    assert rotation.rotation(2) == (["c", "a"], [], "b")
    assert all(v.size == 0 for _, v, _ in rotation.split_with_validation())
    with pytest.raises(ValueError, match="no validation fold"):
        rotation.validation_cv(0)


def test_predefined_pair_folds_tests_each_fold_once():
    pair_fold = np.array([2, 0, 1, 0, 2, 1, 1])
    splits = list(PredefinedPairFolds(pair_fold).split(np.zeros((7, 2, 3))))
    assert [test.tolist() for _, test in splits] == [[1, 3], [2, 5, 6], [0, 4]]
    for train, test in splits:
        assert sorted(np.r_[train, test].tolist()) == list(range(7))


# --- generation: identity_folds, fold_pairs, unrestricted_pairs ----------------------------------

def test_identity_folds_are_identity_disjoint_balanced_and_reproducible():
    identities, _ = make_identities(n_identities=80)
    folds = identity_folds(identities, n_folds=7, random_state=3)
    assert folds.shape == identities.shape and set(folds.tolist()) == set(range(7))
    for identity in np.unique(identities):
        assert np.unique(folds[identities == identity]).size == 1
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= np.bincount(identities).max()
    np.testing.assert_array_equal(folds, identity_folds(identities, 7, random_state=3))
    assert not np.array_equal(folds, identity_folds(identities, 7, random_state=4))
    names = np.array([f"person_{i}" for i in identities])
    np.testing.assert_array_equal(identity_folds(names, 7, random_state=3) >= 0, True)


@given(st.lists(st.integers(0, 20), min_size=1, max_size=80), st.integers(2, 6),
       st.integers(0, 2**16))
@settings(max_examples=40, deadline=None)
def test_identity_folds_property(identities, n_folds, seed):
    identities = np.array(identities)
    counts = np.unique(identities, return_counts=True)[1]
    if counts.size < n_folds:
        with pytest.raises(ValueError, match="identities"):
            identity_folds(identities, n_folds, random_state=seed)
        return
    folds = identity_folds(identities, n_folds, random_state=seed)
    sizes = np.bincount(folds, minlength=n_folds)
    assert sizes.min() > 0 and sizes.max() - sizes.min() <= counts.max()
    assert all(np.unique(folds[identities == i]).size == 1 for i in np.unique(identities))


def all_similar_pairs(identities):
    i, j = np.triu_indices(identities.size, k=1)
    keep = identities[i] == identities[j]
    return {(a, b) for a, b in zip(i[keep].tolist(), j[keep].tolist(), strict=True)}


def test_fold_pairs_stay_within_folds_with_the_right_counts(synthetic):
    identities, folds = synthetic["identities"], synthetic["folds"]
    index_pairs, y, pair_fold = synthetic["index_pairs"], synthetic["y"], synthetic["pair_fold"]
    np.testing.assert_array_equal(folds[index_pairs[:, 0]], pair_fold)
    np.testing.assert_array_equal(folds[index_pairs[:, 1]], pair_fold)
    np.testing.assert_array_equal(identities[index_pairs[:, 0]] == identities[index_pairs[:, 1]],
                                  y == 1)
    assert np.all(index_pairs[:, 0] < index_pairs[:, 1])
    assert len({tuple(p) for p in index_pairs.tolist()}) == len(y)
    for fold in np.unique(folds):
        available = len(all_similar_pairs(identities[folds == fold]))
        n_sim = ((pair_fold == fold) & (y == 1)).sum()
        assert n_sim == min(15, available)
        assert ((pair_fold == fold) & (y == -1)).sum() == n_sim  # n_dissimilar=None: balanced


def test_fold_pairs_all_similar_pairs_and_explicit_dissimilar_count(synthetic):
    identities, folds = synthetic["identities"], synthetic["folds"]
    index_pairs, y, pair_fold = fold_pairs(identities, folds, "all", 7, random_state=1)
    assert {tuple(p) for p in index_pairs[y == 1].tolist()} == all_similar_pairs(identities)
    for fold in np.unique(folds):
        assert ((pair_fold == fold) & (y == -1)).sum() == 7


def test_fold_pairs_reproducible_and_generic_labels():
    identities, _ = make_identities(seed=2)
    folds = identity_folds(identities, 4, random_state=0)
    first = fold_pairs(identities, folds, 10, 20, random_state=5)
    again = fold_pairs(identities, folds, 10, 20, random_state=5)
    other = fold_pairs(identities, folds, 10, 20, random_state=6)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])
    names = np.array(["id%d" % i for i in identities])
    fold_names = np.array(["fold%d" % f for f in folds])
    named = fold_pairs(names, fold_names, 10, 20, random_state=5)
    np.testing.assert_array_equal(named[0], first[0])  # same codes, same draws
    assert set(named[2].tolist()) == {f"fold{f}" for f in range(4)}


def test_unrestricted_pairs_use_only_training_samples(synthetic):
    identities, folds = synthetic["identities"], synthetic["folds"]
    train_mask = np.isin(folds, [0, 1, 2, 3])
    index_pairs, y = unrestricted_pairs(identities, train_mask, 40, 60, random_state=0)
    assert (y == 1).sum() == 40 and (y == -1).sum() == 60
    assert train_mask[index_pairs].all()
    np.testing.assert_array_equal(identities[index_pairs[:, 0]] == identities[index_pairs[:, 1]],
                                  y == 1)
    held_out = synthetic["groups"][np.isin(synthetic["pair_fold"], [4, 5])]
    assert np.intersect1d(identities[index_pairs], held_out).size == 0
    by_index = unrestricted_pairs(identities, np.flatnonzero(train_mask), 40, 60, random_state=0)
    np.testing.assert_array_equal(by_index[0], index_pairs)
    _, y_all = unrestricted_pairs(identities, train_mask, "all", random_state=0)
    assert (y_all == 1).sum() == len(all_similar_pairs(identities[train_mask]))
    assert (y_all == -1).sum() == (y_all == 1).sum()


# --- scikit-learn integration ---------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore", category=ConvergenceWarning)  # max_iter=20 is short
@pytest.mark.parametrize("name", SPLITTERS)
def test_splitters_work_in_grid_search_and_cross_validate(synthetic, name):
    cv = SPLITTERS[name](synthetic["pair_fold"])
    assert isinstance(cv, BaseCrossValidator) and check_cv(cv) is cv and repr(cv)
    pairs, y, groups = synthetic["pairs"], synthetic["y"], synthetic["groups"]
    search = GridSearchCV(TSML(max_iter=20), {"lam": [1e-3, 1e-1]}, cv=cv, error_score="raise")
    search.fit(pairs, y, groups=groups)
    assert search.n_splits_ == cv.get_n_splits()
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    result = cross_validate(TSML(max_iter=20), pairs, y, cv=cv, groups=groups,
                            error_score="raise")
    assert len(result["test_score"]) == cv.get_n_splits()
    assert np.isfinite(result["test_score"]).all()


@pytest.mark.filterwarnings("ignore", category=ConvergenceWarning)
def test_fold_rotation_validation_cv_selects_on_the_validation_fold(synthetic):
    pairs, y = synthetic["pairs"], synthetic["y"]
    rotation = FoldRotation(synthetic["pair_fold"], n_train_folds=4)
    for e, (train, val, test) in enumerate(rotation.split_with_validation(pairs)):
        subset, inner_cv = rotation.validation_cv(e)
        np.testing.assert_array_equal(subset[inner_cv[0][0]], train)
        np.testing.assert_array_equal(subset[inner_cv[0][1]], val)
        search = GridSearchCV(TSML(max_iter=20), {"lam": [1e-3, 1e-1]}, cv=inner_cv,
                              refit=False, error_score="raise").fit(pairs[subset], y[subset])
        model = TSML(max_iter=20, **search.best_params_).fit(pairs[train], y[train])
        assert 0.0 <= model.score(pairs[test], y[test]) <= 1.0
        if e == 1:
            break


# --- public names and bad input -------------------------------------------------------------------

def test_pair_model_names_still_importable_from_metricfit_pairs():
    import metricfit.pairs as module

    assert ENUMERATE_LIMIT == module.ENUMERATE_LIMIT == 2_000_000
    for function in (check_pairs, check_points, check_pair_labels, sample_pairs):
        assert getattr(module, function.__name__) is function
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize("groups", [None, "1-D", "3 columns", "too few rows", "3-D"])
def test_identity_disjoint_split_rejects_bad_groups(synthetic, groups):
    g = synthetic["groups"]
    bad = {None: None, "1-D": g[:, 0], "3 columns": np.c_[g, g[:, 0]], "too few rows": g[:-1],
           "3-D": g[:, :, None]}[groups]
    with pytest.raises(ValueError, match="groups"):
        list(IdentityDisjointPairSplit(3).split(synthetic["pairs"], synthetic["y"], bad))


@pytest.mark.parametrize("make", [
    lambda: IdentityDisjointPairSplit(n_splits=1),
    lambda: IdentityDisjointPairSplit(n_splits=2.5),
    lambda: identity_folds([0, 1, 2], n_folds=1),
    lambda: identity_folds([0, 1, 2], n_folds=True),
    lambda: identity_folds([0, 1, 1], n_folds=3),
    lambda: identity_folds([[0, 1], [1, 2]], n_folds=2),
    lambda: PredefinedPairFolds([3, 3, 3]),
    lambda: PredefinedPairFolds(np.zeros((4, 2))),
    lambda: FoldRotation([1, 1, 1]),
    lambda: FoldRotation([0, 1, 2], n_train_folds=3),
    lambda: FoldRotation([0, 1, 2], n_train_folds=0),
    lambda: FoldRotation(np.arange(10)).rotation(10),
    lambda: list(PredefinedPairFolds([0, 1, 1]).split(np.zeros((4, 2)))),
    lambda: list(FoldRotation([0, 1, 2], 1).split(np.zeros((2, 2)))),
    lambda: list(IdentityDisjointPairSplit(4).split(
        np.zeros((4, 2)), groups=[[0, 1], [1, 2], [2, 3], [3, 0]])),
    lambda: fold_pairs([0, 0, 1], [0, 1], 2),
    lambda: fold_pairs([0, 0, 1], [0, 0, 1], "some"),
    lambda: fold_pairs([0, 0, 1], [0, 0, 1], -1),
    lambda: fold_pairs([0, 0, 1], [0, 0, 1], 2, 1.5),
    lambda: unrestricted_pairs([0, 0, 1], [True, False], 2),
    lambda: unrestricted_pairs([0, 0, 1], [0, 3], 2),
    lambda: unrestricted_pairs([0, 0, 1], [0.0, 1.0], 2),
])
def test_bad_input_raises_value_error(make):
    with pytest.raises(ValueError):
        make()
