"""The user's files (issue 28): embeddings as .npy + ids, .npz and text tables, id maps,
trial lists with and without labels, LFW-style pairs over the user's ids, the pairs of a
labelled .npz; every format error a ValueError naming the file, the line and the fault."""

import numpy as np
import pytest

from metricfit.backend import read_trial_list
from metricfit.datasets import (
    load_embeddings,
    load_labelled_npz,
    read_id_map,
    read_pairs_over_ids,
)

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -3.0], [1e-3, 4.0, 0.0]])
IDS = ["u1", "u2", "u3"]


def _write(path, text):
    path.write_text(text)
    return path


def test_the_three_formats_read_the_same(tmp_path):
    np.save(tmp_path / "a.npy", X)
    _write(tmp_path / "a.ids", "u1\nu2\n\nu3\n")
    np.savez(tmp_path / "b.npz", embeddings=X, ids=np.array(IDS), labels=np.array([7, 7, 8]))
    table = "# id values\n" + "".join(f"{i} {' '.join(map(repr, x.tolist()))}\n"
                                      for i, x in zip(IDS, X, strict=True))
    _write(tmp_path / "c.txt", table)
    _write(tmp_path / "d.ark", "".join(f"{i}  [ {' '.join(map(repr, x.tolist()))} ]\n"
                                      for i, x in zip(IDS, X, strict=True)))
    for name in ("a.npy", "b.npz", "c.txt", "d.ark"):
        data = load_embeddings(tmp_path / name)
        np.testing.assert_array_equal(data.X, X)
        assert data.ids.tolist() == IDS
    assert load_embeddings(tmp_path / "b.npz").labels.tolist() == ["7", "7", "8"]
    assert load_embeddings(tmp_path / "c.txt").labels is None
    # labels from an id map (utt2spk), overriding the npz's
    _write(tmp_path / "utt2spk", "u3 s2\nu1 s1\nu2 s1\n")
    assert load_embeddings(tmp_path / "c.txt", labels=tmp_path / "utt2spk").labels.tolist() == \
        ["s1", "s1", "s2"]
    # an explicit ids file for a .npy, and an npz without ids: rows named 0, 1, ...
    _write(tmp_path / "other.txt", "x\ny\nz\n")
    assert load_embeddings(tmp_path / "a.npy", ids=tmp_path / "other.txt").ids.tolist() == \
        ["x", "y", "z"]
    np.savez(tmp_path / "e.npz", X=X)
    assert load_embeddings(tmp_path / "e.npz").ids.tolist() == ["0", "1", "2"]


@pytest.mark.parametrize("name, text, message", [
    ("t.txt", "u1 1 2\nu2 1 x\n", "line 2: 'x' is not a number"),
    ("t.txt", "u1 1 2\nu2 1 2 3\n", "line 2: 3 values, but line 1 has 2"),
    ("t.txt", "u1 1 2\nu1 3 4\n", "line 2: id 'u1' repeats line 1"),
    ("t.txt", "u1 1 nan\n", "line 1: NaN or infinity"),
    ("t.txt", "u1\n", "line 1: id 'u1' has no values"),
    ("t.txt", "# nothing\n\n", "holds no embeddings"),
    ("t.txt", b"u1 1 \xff\n", "line 1: not UTF-8"),
])
def test_table_errors_name_file_and_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ValueError, match=str(path).replace("\\", "\\\\")) as error:
        load_embeddings(path)
    assert message in str(error.value)


def test_npy_and_npz_errors(tmp_path):
    np.save(tmp_path / "a.npy", X)
    with pytest.raises(FileNotFoundError, match="a.ids"):
        load_embeddings(tmp_path / "a.npy")
    _write(tmp_path / "a.ids", "u1\nu2\n")
    with pytest.raises(ValueError, match="a.ids: 2 ids for 3 rows"):
        load_embeddings(tmp_path / "a.npy")
    _write(tmp_path / "a.ids", "u1\nu2\nu1\n")
    with pytest.raises(ValueError, match="a.ids, line 3: id 'u1' repeats line 1"):
        load_embeddings(tmp_path / "a.npy")
    np.save(tmp_path / "v.npy", X[0])
    _write(tmp_path / "v.ids", "u1\n")
    with pytest.raises(ValueError, match=r"v.npy: the embeddings must be a numeric array \(n, d\)"):
        load_embeddings(tmp_path / "v.npy")
    np.savez(tmp_path / "k.npz", vectors=X)
    with pytest.raises(ValueError, match="k.npz: no array 'X' or 'embeddings'.*'vectors'"):
        load_embeddings(tmp_path / "k.npz")
    np.savez(tmp_path / "i.npz", X=X, ids=np.array(["u1", "u 2", "u3"]))
    with pytest.raises(ValueError, match=r"i.npz, ids\[1\]: id 'u 2' must be non-empty, without "
                                         "whitespace"):
        load_embeddings(tmp_path / "i.npz")
    np.savez(tmp_path / "n.npz", X=np.where(X > 3, np.nan, X))
    with pytest.raises(ValueError, match="n.npz: 'X' / 'embeddings' row 2 holds NaN"):
        load_embeddings(tmp_path / "n.npz")
    np.savez(tmp_path / "l.npz", X=X, labels=np.array([1, 2]))
    with pytest.raises(ValueError, match="l.npz: 'labels' must be 1-D"):
        load_embeddings(tmp_path / "l.npz")
    _write(tmp_path / "map", "u1 s1\nu2 s1\n")
    with pytest.raises(ValueError, match="map: no label for id 'u3'"):
        load_embeddings(_table(tmp_path), labels=tmp_path / "map")


def _table(tmp_path):
    return _write(tmp_path / "t3.txt", "u1 1\nu2 2\nu3 3\n")


def test_id_map_errors(tmp_path):
    with pytest.raises(ValueError, match="m, line 2: expected 'id label'"):
        read_id_map(_write(tmp_path / "m", "a b\na b c\n"))
    with pytest.raises(ValueError, match="m, line 3: id 'a' already given on line 1"):
        read_id_map(_write(tmp_path / "m", "a b\nc d\na e\n"))
    with pytest.raises(FileNotFoundError):
        read_id_map(tmp_path / "none")


def test_trial_lists_with_and_without_labels(tmp_path):
    enrol, test, y = read_trial_list(_write(tmp_path / "k", "m1 t1 target\nm1 t2 NONTARGET\n"))
    assert enrol.tolist() == ["m1", "m1"] and test.tolist() == ["t1", "t2"]
    assert y.tolist() == [1, -1]
    assert read_trial_list(_write(tmp_path / "k", "# key\nm1 t1\nm2 t1\n"))[2] is None
    for text, message in [("m1 t1\nm1 t2 target\n", "line 2: expected 'enrol test' as on line 1"),
                          ("m1 t1 target\nm1 t2\n", "line 2: expected 'enrol test target|"
                                                    "nontarget' as on line 1"),
                          ("m1 t1 maybe\n", "line 1: unknown trial label 'maybe'"),
                          ("m1\n", "line 1: expected 'enrol test [target|nontarget]'"),
                          ("\n", "holds no trials")]:
        with pytest.raises(ValueError, match="k") as error:
            read_trial_list(_write(tmp_path / "k", text))
        assert message in str(error.value)


def test_lfw_style_pairs_over_ids_and_labels(tmp_path):
    ids = ["Ann_0001", "Ann_0002", "Bob_0001", "Cid_0001", "Cid_0002", "Dan_0001", "Eve_0001",
           "Eve_0002", "Fay_0001"]
    text = "3 1\nAnn 1 2\nAnn 1 Bob 1\nCid 1 2\nCid 2 Dan 1\nEve 1 2\nEve 2 Fay 1\n"
    path = _write(tmp_path / "pairs.txt", text)
    index, y, fold = read_pairs_over_ids(path, ids)
    assert index.tolist() == [[0, 1], [0, 2], [3, 4], [4, 5], [6, 7], [7, 8]]
    assert y.tolist() == [1, -1, 1, -1, 1, -1] and fold.tolist() == [0, 0, 1, 1, 2, 2]
    # without LFW ids: 'name n' is the n-th row of label name
    labels = [i.split("_")[0] for i in ids]
    index2, _, _ = read_pairs_over_ids(path, [f"r{k}" for k in range(9)], labels)
    np.testing.assert_array_equal(index, index2)
    with pytest.raises(ValueError, match=r"pairs.txt, line 4: image Cid 2 is not among the "
                                         r"embeddings \(no id Cid_0002 and label 'Cid' has 1"):
        read_pairs_over_ids(path, [f"r{k}" for k in range(9)],
                            ["Ann", "Ann", "Bob", "Cid", "X", "Dan", "Eve", "Eve", "Fay"])
    _write(path, "1 1\nAnn 1 1\nAnn 1 Bob 1\n")
    with pytest.raises(ValueError, match="pairs.txt, line 2: a pair of row 0 with itself"):
        read_pairs_over_ids(path, ids)
    _write(path, "1 1\nAnn 1\nAnn 1 Bob 1\n")
    with pytest.raises(ValueError, match="pairs.txt, line 2: a matched pair needs 3 fields"):
        read_pairs_over_ids(path, ids)


def test_labelled_npz_with_pairs(tmp_path):
    labels = np.repeat(np.arange(6), 2)
    pairs = np.array([[0, 1], [0, 2], [4, 5], [4, 7], [8, 9], [8, 11]])
    path = tmp_path / "d.npz"
    np.savez(path, X=np.ones((12, 3)), labels=labels, pairs=pairs,
             pair_labels=np.array([1, 0, 1, 0, 1, 0]), pair_folds=np.array([0, 0, 1, 1, 2, 2]))
    data = load_labelled_npz(path)
    index, y, fold = data.pairs
    assert index.tolist() == pairs.tolist() and y.tolist() == [1, -1] * 3
    assert fold.tolist() == [0, 0, 1, 1, 2, 2] and data.ids is None
    np.savez(path, X=np.ones((12, 3)), labels=labels, pairs=pairs, pair_labels=np.ones(6, int))
    with pytest.raises(ValueError, match="d.npz: pairs of your own need .*pair_folds missing"):
        load_labelled_npz(path)
    np.savez(path, X=np.ones((12, 3)), labels=labels, pairs=pairs + 6,
             pair_labels=np.ones(6, int), pair_folds=np.zeros(6, int))
    with pytest.raises(ValueError, match=r"d.npz: 'pairs' holds row 13, outside 0 .. 11"):
        load_labelled_npz(path)
    np.savez(path, X=np.ones((12, 3)), labels=labels, pairs=pairs,
             pair_labels=np.full(6, 2), pair_folds=np.zeros(6, int))
    with pytest.raises(ValueError, match="d.npz: 'pair_labels' must be"):
        load_labelled_npz(path)
