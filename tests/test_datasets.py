"""Tests of metricfit.datasets: LFW protocol parsers on tiny synthetic files, loaders on
synthetic npz files, and the parsers checked against the shipped npz on the real data."""

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import data_dir

import metricfit.datasets as datasets
from metricfit.datasets import (
    LFWPairs,
    get_data_home,
    lfw_pairs_to_indices,
    lfw_view2_pairs,
    load_att_faces,
    load_lfw,
    load_yale_faces,
    read_lfw_pairs,
    read_lfw_people,
)

VIEW2_PAIRS = "2\t1\nA\t1\t2\nA\t1\tB\t1\nC\t1\t2\nC\t2\tA\t2\n"
VIEW1_PAIRS = "2\nA\t1\t2\nC\t1\t2\nA\t2\tB\t1\nB\t1\tC\t1\n"
# A has images 1, 2; B has 1; C has 1, 2. Rows are ordered by (name, number).
NAMES = np.array(["A", "B", "C"])
PERSON = np.array([0, 0, 1, 2, 2], dtype=np.int32)
NUMBER = np.array([1, 2, 1, 1, 2], dtype=np.int16)


def write(tmp_path, text, name="pairs.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


def at_line(path, lineno, what):
    """A ``match=`` pattern: the file name, the line number, then ``what``."""
    return rf"{re.escape(path.name)}, line {lineno}: .*{what}"


# ----------------------------------------------------------------------------- data home


def test_get_data_home_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv("METRICFIT_DATA", raising=False)
    repo_root = Path(datasets.__file__).resolve().parents[2]  # metricfit/datasets/__init__.py
    assert get_data_home() == repo_root.parent / "shared" / "data"
    monkeypatch.setenv("METRICFIT_DATA", str(tmp_path))
    assert get_data_home() == tmp_path
    assert get_data_home(tmp_path / "x") == tmp_path / "x"
    assert get_data_home(str(tmp_path / "y")) == tmp_path / "y"


# ----------------------------------------------------------------------------- pair files


def test_read_pairs_view2_format(tmp_path):
    pairs = read_lfw_pairs(write(tmp_path, VIEW2_PAIRS))
    assert isinstance(pairs, LFWPairs) and len(pairs) == 4
    assert (pairs.n_folds, pairs.n_per_class) == (2, 1)
    assert pairs.name1.tolist() == ["A", "A", "C", "C"]
    assert pairs.name2.tolist() == ["A", "B", "C", "A"]
    assert pairs.number1.tolist() == [1, 1, 1, 2]
    assert pairs.number2.tolist() == [2, 1, 2, 2]
    assert pairs.label.dtype == np.int8 and pairs.label.tolist() == [1, 0, 1, 0]
    assert pairs.fold.dtype == np.int8 and pairs.fold.tolist() == [0, 0, 1, 1]


def test_read_pairs_view1_format(tmp_path):
    pairs = read_lfw_pairs(write(tmp_path, VIEW1_PAIRS, "pairsDevTest.txt"))
    assert (pairs.n_folds, pairs.n_per_class, len(pairs)) == (1, 2, 4)
    assert pairs.label.tolist() == [1, 1, 0, 0]
    assert pairs.fold.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize(
    "text, lineno, what",
    [
        ("", 1, "empty"),
        ("\n  \n", 1, "empty"),
        ("2\t2\nA\t1\t2\nA\t1\tB\t1\n", 1, "announces"),  # header promises 8 lines, 2 follow
        ("1\nA\t1\t2\nA\t1\tB\t1\nB\t1\tC\t1\n", 1, "announces"),  # one line too many
        ("1\t2\t3\nA\t1\t2\nA\t1\tB\t1\n", 1, "header"),
        ("x\nA\t1\t2\nA\t1\tB\t1\n", 1, "integers"),
        ("1\nA\t1\tB\t2\nA\t1\tB\t1\n", 2, "3 fields"),  # 4 fields where 3 expected
        ("1\nA\t1\t2\nA\t1\tB\n", 3, "4 fields"),
        ("1\nA\t1\tx\nA\t1\tB\t1\n", 2, "integers"),
        ("1\nA\t1\t2\nA\t1.5\tB\t1\n", 3, "integers"),
        ("1\nA\t0\t2\nA\t1\tB\t1\n", 2, ">= 1"),
    ],
)
def test_read_pairs_malformed(tmp_path, text, lineno, what):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=at_line(path, lineno, what)):
        read_lfw_pairs(path)


# ----------------------------------------------------------------------------- people files


def test_read_people_view2_format(tmp_path):
    folds = read_lfw_people(write(tmp_path, "2\n2\nA\t3\nB\t1\n1\nC\t2\n", "people.txt"))
    assert folds == [[("A", 3), ("B", 1)], [("C", 2)]]


def test_read_people_view1_format(tmp_path):
    folds = read_lfw_people(write(tmp_path, "3\nA\t1\nB\t2\nC\t1\n", "peopleDevTest.txt"))
    assert folds == [[("A", 1), ("B", 2), ("C", 1)]]


@pytest.mark.parametrize(
    "text, lineno, what",
    [
        ("", 1, "empty"),
        ("3\nA\t1\nB\t2\n", 1, "announces 3 people"),
        ("1\nA\t1\nB\t2\n", 3, "unexpected line"),
        ("2\n1\nA\t1\n", 1, "announces 2 folds"),
        ("1\n2\nA\t1\n", 2, "announces 2 people"),
        ("2\n1\nA\t1\n1\nB\t1\nC\t1\n", 6, "unexpected line"),
        ("2\n1\nA\t1\nB\t1\n", 4, "people count"),
        ("2\nA\t1\t2\nB\t1\n", 2, "2 fields"),
        ("2\nA\tx\nB\t1\n", 2, "integers"),
        ("two\nA\t1\nB\t1\n", 1, "integers"),
        ("2\t1\nA\t1\nB\t1\n", 1, "single count"),
    ],
)
def test_read_people_malformed(tmp_path, text, lineno, what):
    path = write(tmp_path, text, "people.txt")
    with pytest.raises(ValueError, match=at_line(path, lineno, what)):
        read_lfw_people(path)


# ----------------------------------------------------------------------------- index mapping


def test_pairs_to_indices_synthetic(tmp_path):
    pairs = read_lfw_pairs(write(tmp_path, VIEW2_PAIRS))
    index = lfw_pairs_to_indices(pairs, NAMES, PERSON, NUMBER)
    assert index.dtype == np.int64 and index.shape == (4, 2)
    np.testing.assert_array_equal(index, [[0, 1], [0, 2], [3, 4], [4, 1]])


@pytest.mark.parametrize(
    "line, what",
    [("Z\t1\tA\t1", "unknown person name 'Z'"), ("B\t2\tA\t1", "unknown image number 2"),
     ("A\t1\tB\t9", "unknown image number 9")],
)
def test_pairs_to_indices_unknown(tmp_path, line, what):
    pairs = read_lfw_pairs(write(tmp_path, f"1\nA\t1\t2\n{line}\n"))
    with pytest.raises(ValueError, match=what):
        lfw_pairs_to_indices(pairs, NAMES, PERSON, NUMBER)


# ----------------------------------------------------------------------------- loaders


@pytest.mark.parametrize("load", [load_lfw, load_att_faces, load_yale_faces, lfw_view2_pairs])
def test_missing_data_mentions_env_var(monkeypatch, tmp_path, load):
    monkeypatch.setenv("METRICFIT_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="METRICFIT_DATA") as info:
        load()
    assert str(tmp_path) in str(info.value) and "data_home=" in str(info.value)


def test_load_att_faces_synthetic_npz(tmp_path):
    (tmp_path / "att_faces").mkdir()
    images = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    np.savez(tmp_path / "att_faces" / "att_faces.npz", images=images, labels=np.array([0, 1]))
    data = load_att_faces(data_home=tmp_path)
    assert set(data) == {"images", "labels", "data_dir"}
    np.testing.assert_array_equal(data.images, images)
    assert data.data_dir == tmp_path / "att_faces"


def test_lfw_view2_pairs_synthetic_npz(tmp_path):
    (tmp_path / "lfw").mkdir()
    np.savez(
        tmp_path / "lfw" / "lfw_deepfunneled_gray_62x47.npz",
        pairs_view2=np.array([[0, 1], [2, 3], [4, 5], [6, 7]], dtype=np.int32),
        pairs_view2_label=np.array([1, 0, 1, 0], dtype=np.int8),
        pairs_view2_fold=np.array([0, 0, 1, 1], dtype=np.int8),
    )
    index, y, fold = lfw_view2_pairs(data_home=tmp_path)
    assert index.dtype == np.int64 and y.dtype == np.int8
    assert y.tolist() == [1, -1, 1, -1] and fold.tolist() == [0, 0, 1, 1]
    index, y, fold = lfw_view2_pairs(data_home=tmp_path, folds=1)
    assert index.tolist() == [[4, 5], [6, 7]] and fold.tolist() == [1, 1]
    for bad in (10, [-1], [0.5], [True]):
        with pytest.raises(ValueError, match="folds"):
            lfw_view2_pairs(data_home=tmp_path, folds=bad)


# ----------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def lfw(lfw_dir):
    return load_lfw(data_home=lfw_dir.parent)


def test_load_lfw_real(lfw, lfw_dir):
    assert lfw.data_dir == lfw_dir
    assert lfw.images.shape == (13233, 62, 47) and lfw.images.dtype == np.uint8
    assert len(lfw.names) == 5749 and np.all(lfw.names[:-1] < lfw.names[1:])
    assert {"pairs_view2", "pairs_devtrain", "people_fold_view2"} <= set(lfw)


def test_pairs_txt_matches_npz(lfw, lfw_dir):
    pairs = read_lfw_pairs(lfw_dir / "pairs.txt")
    assert (pairs.n_folds, pairs.n_per_class, len(pairs)) == (10, 300, 6000)
    assert np.all(np.bincount(pairs.fold) == 600) and pairs.label.sum() == 3000
    index = lfw_pairs_to_indices(pairs, lfw.names, lfw.person, lfw.image_number)
    np.testing.assert_array_equal(index, lfw.pairs_view2)
    np.testing.assert_array_equal(pairs.label, lfw.pairs_view2_label)
    np.testing.assert_array_equal(pairs.fold, lfw.pairs_view2_fold)


@pytest.mark.parametrize(
    "filename, key, n_per_class",
    [("pairsDevTrain.txt", "pairs_devtrain", 1100), ("pairsDevTest.txt", "pairs_devtest", 500)],
)
def test_dev_pairs_match_npz(lfw, lfw_dir, filename, key, n_per_class):
    pairs = read_lfw_pairs(lfw_dir / filename)
    assert (pairs.n_folds, pairs.n_per_class, len(pairs)) == (1, n_per_class, 2 * n_per_class)
    index = lfw_pairs_to_indices(pairs, lfw.names, lfw.person, lfw.image_number)
    np.testing.assert_array_equal(index, lfw[key])
    np.testing.assert_array_equal(pairs.label, lfw[key + "_label"])
    assert np.all(pairs.fold == 0)


def test_people_txt_matches_npz(lfw, lfw_dir):
    folds = read_lfw_people(lfw_dir / "people.txt")
    assert len(folds) == 10 and sum(map(len, folds)) == 5749
    position = {name: i for i, name in enumerate(lfw.names)}
    fold_of, n_images = np.full(5749, -1), np.zeros(5749, dtype=int)
    for k, fold in enumerate(folds):
        for name, count in fold:
            fold_of[position[name]], n_images[position[name]] = k, count
    np.testing.assert_array_equal(fold_of, lfw.people_fold_view2)
    np.testing.assert_array_equal(n_images, np.bincount(lfw.person, minlength=5749))
    assert n_images.sum() == 13233


@pytest.mark.parametrize(
    "filename, key, n_people",
    [
        ("peopleDevTrain.txt", "people_devtrain", 4038),
        ("peopleDevTest.txt", "people_devtest", 1711),
    ],
)
def test_dev_people_match_npz(lfw, lfw_dir, filename, key, n_people):
    (fold,) = read_lfw_people(lfw_dir / filename)
    assert len(fold) == n_people
    index = np.searchsorted(lfw.names, [name for name, _ in fold])
    np.testing.assert_array_equal(lfw.names[index], [name for name, _ in fold])
    np.testing.assert_array_equal(index, lfw[key])


def test_lfw_view2_pairs_real(lfw, lfw_dir):
    index, y, fold = lfw_view2_pairs(data_home=lfw_dir.parent)
    np.testing.assert_array_equal(index, lfw.pairs_view2)
    np.testing.assert_array_equal(y, 2 * lfw.pairs_view2_label.astype(int) - 1)
    assert set(np.unique(y)) == {-1, 1} and np.all(np.bincount(fold) == 600)
    index, y, fold = lfw_view2_pairs(data_home=lfw_dir.parent, folds=[0, 9])
    assert index.shape == (1200, 2) and set(fold) == {0, 9} and y.sum() == 0


def _require(relpath):
    if not (data_dir() / relpath).is_file():
        pytest.skip(f"{relpath} not found under {data_dir()} (set METRICFIT_DATA)")
    return data_dir()


def test_load_att_faces_real():
    data = load_att_faces(_require("att_faces/att_faces.npz"))
    assert data.images.shape == (400, 112, 92) and data.images.dtype == np.uint8
    assert np.all(np.bincount(data.labels) == 10)
    assert data.image_index.min() == 1 and data.image_index.max() == 10


def test_load_yale_faces_real():
    data = load_yale_faces(_require("yale_faces/yale_faces.npz"))
    assert data.images.shape == (164, 243, 320)
    assert np.bincount(data.labels).tolist() == [10] + [11] * 14
    assert len(set(data.condition)) == 11
