"""Triplets, quadruplets and chunks (metricfit.pairs.tuples): validation with named errors,
index tuples through a preprocessor (array, memmap, callable), generation from labels."""

import numpy as np
import pytest

from metricfit.pairs.tuples import (
    IndexTuples,
    check_chunks,
    check_tuples,
    sample_chunks,
    sample_quadruplets,
    sample_triplets,
)


def points(n=10, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


@pytest.mark.parametrize("width", [3, 4])
def test_vector_tuples_are_kept_and_float32_stays(width):
    T = np.random.default_rng(0).normal(size=(5, width, 2)).astype(np.float32)
    out = check_tuples(T, width)
    assert out.dtype == np.float32 and out.shape == (5, width, 2)
    np.testing.assert_array_equal(out, T)
    assert check_tuples(np.ones((3, width, 2), dtype=int), width).dtype == np.float64


@pytest.mark.parametrize("width,name", [(3, "triplets"), (4, "quadruplets")])
def test_wrong_width_is_named(width, name):
    with pytest.raises(ValueError, match=rf"{name} must have the tuple axis \(of length {width}\)"):
        check_tuples(np.zeros((4, width + 1, 2)), width)
    with pytest.raises(ValueError, match=rf"index {name} must have shape \(n_{name}, {width}\)"):
        check_tuples(np.zeros((4, width - 1), dtype=int), width, preprocessor=points())


def test_index_out_of_range_and_missing_points_are_named():
    with pytest.raises(ValueError, match="index triplets has an index 10 out of range"):
        check_tuples(np.array([[0, 1, 10]]), 3, preprocessor=points())
    with pytest.raises(ValueError, match="index triplets has an index -1 out of range"):
        check_tuples(np.array([[0, -1, 2]]), 3, preprocessor=points())
    with pytest.raises(ValueError, match="need the points: set preprocessor"):
        check_tuples(np.array([[0, 1, 2]]), 3)
    with pytest.raises(ValueError, match="must hold integers"):
        check_tuples(np.array([[0.0, 1.0, 2.0]]), 3, preprocessor=points())


@pytest.mark.parametrize("width", [3, 4])
def test_labels_for_triplets_and_quadruplets_are_refused(width):
    with pytest.raises(ValueError, match="y: .* carry no labels"):
        check_tuples(np.zeros((4, width, 2)), width, y=np.ones(4))


def test_nan_infinity_empty_and_feature_count_are_named():
    T = np.zeros((4, 3, 2))
    T[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="triplets contains NaN"):
        check_tuples(T, 3)
    T[1, 2, 0] = np.inf
    with pytest.raises(ValueError, match="triplets contains infinity"):
        check_tuples(T, 3)
    with pytest.raises(ValueError, match="triplets is empty"):
        check_tuples(np.zeros((0, 3, 2)), 3)
    with pytest.raises(ValueError, match="3 features, but the estimator was fitted with 2"):
        check_tuples(np.zeros((1, 3, 3)), 3, n_features=2)
    X = points()
    X[4, 0] = np.nan
    with pytest.raises(ValueError, match="preprocessor contains NaN"):
        check_tuples(np.array([[0, 1, 2]]), 3, preprocessor=X)
    with pytest.raises(ValueError, match="width must be 2, 3 or 4"):
        check_tuples(np.zeros((1, 5, 2)), 5)


def test_index_tuples_gather_like_vectors_from_array_memmap_and_callable(tmp_path):
    X = points(12, 3)
    index = np.array([[0, 1, 2, 3], [4, 5, 6, 11], [11, 0, 0, 7]])
    expected = X[index]
    t = check_tuples(index, 4, preprocessor=X)
    assert isinstance(t, IndexTuples) and t.shape == (3, 4, 3)
    np.testing.assert_array_equal(t.vectors(), expected)
    np.testing.assert_array_equal(t[[2]].vectors(), expected[[2]])
    mm = np.lib.format.open_memmap(tmp_path / "p.npy", mode="w+", dtype=np.float64,
                                   shape=X.shape)
    mm[:] = X
    tm = check_tuples(index, 4, preprocessor=mm)
    assert tm.points is mm  # never loaded
    np.testing.assert_array_equal(tm.vectors(), expected)
    names = np.array([[f"p{i}" for i in row] for row in index])
    vectors = check_tuples(names, 4, preprocessor=lambda ids: X[[int(s[1:]) for s in ids]])
    np.testing.assert_array_equal(vectors, expected)
    with pytest.raises(ValueError, match="preprocessor \\(a callable\\) must return one row"):
        check_tuples(names, 4, preprocessor=lambda ids: X[:1])


def test_pairs_go_through_the_pair_checks():
    out = check_tuples(np.zeros((3, 2, 4)), 2)
    assert out.shape == (3, 2, 4)
    with pytest.raises(ValueError, match="pairs must have the pair axis"):
        check_tuples(np.zeros((3, 3, 4)), 2)


def test_sample_triplets_and_quadruplets_respect_the_labels():
    y = np.array(["a"] * 5 + ["b"] * 3 + ["c"])
    t = sample_triplets(y, 500, random_state=0)
    assert t.shape == (500, 3) and t.dtype == np.int64
    assert np.all(y[t[:, 0]] == y[t[:, 1]]) and np.all(t[:, 0] != t[:, 1])
    assert np.all(y[t[:, 0]] != y[t[:, 2]])
    assert set(t[:, 2]) == set(range(9))  # every point is some anchor's negative
    assert not np.any(t[:, 0] == 8)  # class 'c' has one point: never an anchor
    np.testing.assert_array_equal(t, sample_triplets(y, 500, random_state=0))
    q = sample_quadruplets(y, 500, random_state=1)
    assert np.all(y[q[:, 0]] == y[q[:, 1]]) and np.all(q[:, 0] != q[:, 1])
    assert np.all(y[q[:, 2]] != y[q[:, 3]])


def test_negatives_are_uniform_over_the_other_classes():
    y = np.repeat([0, 1, 2], [2, 40, 10])
    t = sample_triplets(y, 20000, random_state=0)
    neg = t[y[t[:, 0]] == 0, 2]  # anchors of class 0: negatives among the 50 others
    share_of_1 = np.mean(y[neg] == 1)
    assert abs(share_of_1 - 40 / 50) < 0.05


def test_generation_errors_are_named():
    with pytest.raises(ValueError, match="y: triplets need two classes"):
        sample_triplets([0, 0, 0], 3)
    with pytest.raises(ValueError, match="y: quadruplets need two classes"):
        sample_quadruplets([0, 1, 2], 3)
    with pytest.raises(ValueError, match="n_triplets must be an integer >= 1"):
        sample_triplets([0, 0, 1], 0)


def test_chunks_are_disjoint_single_class_groups():
    y = np.repeat([0, 1, 2], [7, 5, 4])
    chunks = sample_chunks(y, n_chunks=6, chunk_size=2, random_state=0)
    assert chunks.shape == y.shape and set(chunks) == {-1, 0, 1, 2, 3, 4, 5}
    for c in range(6):
        members = np.flatnonzero(chunks == c)
        assert members.size == 2 and np.unique(y[members]).size == 1
    with pytest.raises(ValueError, match="n_chunks=20 chunklets of chunk_size=2 cannot be drawn"):
        sample_chunks(y, n_chunks=20)
    np.testing.assert_array_equal(check_chunks(chunks, 16), chunks)
    with pytest.raises(ValueError, match="chunks must be 1-D with one chunk label per sample"):
        check_chunks(chunks[:3], 16)
    with pytest.raises(ValueError, match="chunks holds -2"):
        check_chunks(np.r_[-2, chunks[1:]], 16)
    with pytest.raises(ValueError, match="at least one chunklet of two points"):
        check_chunks(np.r_[0, 1, -np.ones(14, int)], 16)
