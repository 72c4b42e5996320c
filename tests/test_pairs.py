"""The pair data model: label coding, validators, pair sampling."""

import numpy as np
import pytest

from metricfit.pairs import check_pair_labels, check_pairs, check_points, sample_pairs


@pytest.mark.parametrize("y", [[1, -1, 1], [1, 0, 1], [True, False, True], [1.0, -1.0, 1.0]])
def test_label_codings_map_to_plus_minus_one(y):
    s = check_pair_labels(y, 3)
    assert s.dtype == np.int8
    np.testing.assert_array_equal(s, [1, -1, 1])


@pytest.mark.parametrize("y, message", [
    ([1, 2, 1], "labels must be in"),
    ([-1, 0, 1], "labels must be in"),
    ([0.5, 1, 0], "labels must be in"),
    ([1, np.nan, 0], "NaN"),
    (["a", "b", "a"], "numeric"),
    ([[1, -1, 1]], "1-D"),
    ([1, -1], "2 labels for 3 pairs"),
    ([1, 1, 1], "single class"),
    ([0, 0, 0], "only dissimilar"),
])
def test_bad_labels(y, message):
    with pytest.raises(ValueError, match=message):
        check_pair_labels(y, 3)


def test_single_class_allowed_when_asked():
    np.testing.assert_array_equal(check_pair_labels([1, 1], 2, require_both=False), [1, 1])


def test_check_pairs_keeps_float32_and_converts_ints():
    assert check_pairs(np.ones((2, 2, 3), np.float32)).dtype == np.float32
    assert check_pairs(np.ones((2, 2, 3), np.int64)).dtype == np.float64
    assert check_points(np.ones((2, 3), np.int32)).dtype == np.float64


@pytest.mark.parametrize("pairs, message", [
    (np.ones((3, 2)), "3-D array"),
    (np.ones((3, 5, 2)), "swapaxes"),
    (np.ones((0, 2, 3)), "empty"),
    (np.array([[[1, 2], [3, "x"]]]), "numeric"),
])
def test_check_pairs_errors(pairs, message):
    with pytest.raises(ValueError, match=message):
        check_pairs(pairs)


def test_check_points_errors():
    with pytest.raises(ValueError, match="2-D array"):
        check_points(np.ones(3))
    with pytest.raises(ValueError, match="4 features, but the estimator was fitted with 3"):
        check_points(np.ones((2, 4)), n_features=3)
    with pytest.raises(ValueError, match="zero vector"):
        check_points(np.zeros((2, 4)), reject_zero=True)


def test_sample_pairs_counts_labels_and_no_repeats():
    labels = np.repeat(np.arange(10), 6)
    index_pairs, y = sample_pairs(labels, 50, 70, random_state=0)
    assert (y == 1).sum() == 50 and (y == -1).sum() == 70
    same = labels[index_pairs[:, 0]] == labels[index_pairs[:, 1]]
    np.testing.assert_array_equal(same, y == 1)
    assert len({tuple(p) for p in index_pairs}) == 120
    assert np.all(index_pairs[:, 0] < index_pairs[:, 1])
    again, _ = sample_pairs(labels, 50, 70, random_state=0)
    np.testing.assert_array_equal(again, index_pairs)


def test_sample_pairs_caps_at_what_exists():
    labels = np.array([0, 0, 1, 1])
    _, y = sample_pairs(labels, 100, 100, random_state=0)
    assert (y == 1).sum() == 2 and (y == -1).sum() == 4


def test_sample_pairs_large_set_uses_bounded_memory_and_is_exact():
    from metricfit import pairs as pairs_module

    labels = np.random.default_rng(1).integers(0, 800, size=3000)  # 4.5 M candidate pairs
    assert 3000 * 2999 // 2 > pairs_module.ENUMERATE_LIMIT
    index_pairs, y = sample_pairs(labels, 2000, 5000, random_state=3)
    assert (y == 1).sum() == 2000 and (y == -1).sum() == 5000
    same = labels[index_pairs[:, 0]] == labels[index_pairs[:, 1]]
    np.testing.assert_array_equal(same, y == 1)
    assert len({tuple(p) for p in index_pairs}) == 7000
    assert np.all(index_pairs[:, 0] < index_pairs[:, 1])
    again, _ = sample_pairs(labels, 2000, 5000, random_state=3)
    np.testing.assert_array_equal(again, index_pairs)


def test_identity_balanced_pairs_are_exact_unique_and_reproducible():
    labels = np.r_[np.zeros(200, int), np.repeat(np.arange(1, 51), 2)]  # one big identity
    pairs, y = sample_pairs(labels, 40, 300, random_state=0, balance="identity")
    assert (y == 1).sum() == 40 and (y == -1).sum() == 300
    same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    np.testing.assert_array_equal(same, y == 1)
    assert len({tuple(p) for p in pairs}) == 340 and np.all(pairs[:, 0] < pairs[:, 1])
    again, _ = sample_pairs(labels, 40, 300, random_state=0, balance="identity")
    np.testing.assert_array_equal(again, pairs)


def test_identity_balance_stops_one_big_identity_dominating():
    labels = np.r_[np.zeros(200, int), np.repeat(np.arange(1, 51), 2)]
    share = {}
    for balance in ("pairs", "identity"):
        pairs, y = sample_pairs(labels, 40, 0, random_state=0, balance=balance)
        share[balance] = np.mean(labels[pairs[y == 1, 0]] == 0)
    assert share["pairs"] > 0.95  # 19900 of the 19950 within-class pairs are identity 0's
    assert share["identity"] < 0.2  # one identity in 51


def test_identity_balanced_similar_pairs_exhaust_to_the_full_set():
    labels = np.array([0, 0, 0, 1, 1, 2])
    pairs, y = sample_pairs(labels, 100, 100, random_state=1, balance="identity")
    assert {tuple(p) for p in pairs[y == 1]} == {(0, 1), (0, 2), (1, 2), (3, 4)}
    assert (y == -1).sum() == 11  # every cross-identity pair of 6 samples
    with pytest.raises(ValueError, match="balance"):
        sample_pairs(labels, 1, 1, balance="classes")
