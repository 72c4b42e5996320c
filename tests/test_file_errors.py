"""Issue 24: no silent wrong answer from a file, and every file error names its file.

Every reader of the package (trial and score files, LFW protocol files, the data sets' .npz,
labelled .npz, saved SiameseCNN models, `metricfit verify --scores` files) turns a damaged
file (binary garbage, truncated, not UTF-8, wrong shapes, missing keys) into one ValueError
naming the file; a missing file stays FileNotFoundError. The writers refuse what they could
not write faithfully.
"""

import os
import re

import numpy as np
import pytest
from test_cli_validation import one_line_error
from test_siamese_cnn import TINY, make_image_pairs

from metricfit import datasets
from metricfit.backend import trials
from metricfit.cli import main
from metricfit.experiments import verification
from metricfit.learners.siamese_cnn import REQUIRED_ENTRIES, SiameseCNN


def raises_naming(path, match, error=ValueError):
    """pytest.raises(error) whose message names ``path`` and matches ``match``, and never
    advises numpy's unsafe ``allow_pickle`` loading."""
    class _Check:
        def __enter__(self):
            self.ctx = pytest.raises(error, match=match)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            suppressed = self.ctx.__exit__(*exc)
            message = str(self.info.value)
            assert str(path) in message, message
            assert "allow_pickle" not in message and "\n" not in message, message
            return suppressed
    return _Check()


def damaged_copies(good, tmp_path):
    """Files made from the bytes of the valid .npz ``good``: truncated, random bytes, text,
    empty, a directory."""
    data = good.read_bytes()
    files = {"truncated": data[: len(data) // 2], "random bytes": os.urandom(2000),
             "text": b"images,labels\n1,2\n", "empty": b""}
    paths = {}
    for name, content in files.items():
        paths[name] = tmp_path / f"{name.replace(' ', '_')}.npz"
        paths[name].write_bytes(content)
    paths["directory"] = tmp_path / "folder.npz"
    paths["directory"].mkdir()
    return paths


DAMAGE = {"truncated": "damaged or truncated", "random bytes": "not a zip archive",
          "text": "not a zip archive", "empty": r"the file is empty \(0 bytes\)",
          "directory": "is a directory"}


# ----------------------------------------------------------------- 2: write_trials labels


@pytest.mark.parametrize("y", [[1, -1], [1, 0], [True, False], ["target", "nontarget"],
                               ["TARGET", "NonTarget"], ["tgt", "impostor"], ["1", "0"]])
def test_write_trials_round_trips_every_accepted_coding(tmp_path, y):
    path = tmp_path / "trials.txt"
    trials.write_trials(path, ["m1", "m2"], ["t1", "t2"], y)
    enrol, test, labels = trials.read_trials(path)
    assert list(enrol) == ["m1", "m2"] and list(test) == ["t1", "t2"]
    assert list(labels) == [1, -1]


@pytest.mark.parametrize("y, shown", [([1, 2], "[1, 2]"), ([2, 3], "[2, 3]"),
                                      ([-1, 0], "[-1, 0]"), ([0.5, 1], "[0.5, 1.0]"),
                                      (["target", "maybe"], "['maybe']"),
                                      ([-1, 0, 1], "[-1, 0, 1]")])
def test_write_trials_refuses_other_labels_naming_y_and_the_values(tmp_path, y, shown):
    path = tmp_path / "trials.txt"
    ids = [f"id{k}" for k in range(len(y))]
    with pytest.raises(ValueError, match=r"^y\b.*" + re.escape(shown)):
        trials.write_trials(path, ids, ids, y)
    assert not path.exists()  # nothing half-written


@pytest.mark.parametrize("bad_id", ["a b", "", "#m1", "tab\there", "new\nline"])
@pytest.mark.parametrize("write", ["trials", "scores"])
def test_writers_refuse_ids_that_would_not_read_back(tmp_path, bad_id, write):
    path = tmp_path / "out.txt"
    with pytest.raises(ValueError, match=r"enrol_ids\[1\].*whitespace"):
        if write == "trials":
            trials.write_trials(path, ["ok", bad_id], ["t1", "t2"], [1, -1])
        else:
            trials.write_scores(path, ["ok", bad_id], ["t1", "t2"], [0.5, -0.5])
    assert not path.exists()


# -------------------------------------------------------- 6: read_trials / read_scores


@pytest.mark.parametrize("read", [trials.read_trials, trials.read_scores])
def test_trial_readers_name_file_and_line_of_bytes_that_are_not_utf8(tmp_path, read):
    path = tmp_path / "list.txt"
    path.write_bytes(b"a b target\nc\xff\xfe d nontarget\n")
    if read is trials.read_scores:
        path.write_bytes(b"a b 0.5\nc\xff\xfe d 1.5\n")
    with raises_naming(path, r"line 2: not UTF-8 text \(byte 0xff"):
        read(path)


@pytest.mark.parametrize("read", [trials.read_trials, trials.read_scores])
def test_trial_readers_on_binary_directory_empty_and_missing_files(tmp_path, read):
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"a b 1\n\x00\x01\x02 x 1\n")
    with raises_naming(binary, r"line 2: binary data"):
        read(binary)
    with raises_naming(tmp_path, "is a directory"):
        read(tmp_path)
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n")
    with raises_naming(empty, "holds no"):
        read(empty)
    with raises_naming(tmp_path / "missing.txt", "No such file", FileNotFoundError):
        read(tmp_path / "missing.txt")


def test_read_trials_skips_a_utf8_byte_order_mark(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbfm1 t1 target\n")
    assert list(trials.read_trials(path)[0]) == ["m1"]


# ------------------------------------------------------------------ 5: SiameseCNN.load


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    """A real small fitted SiameseCNN, saved."""
    path = tmp_path_factory.mktemp("model") / "model.npz"
    SiameseCNN(**dict(TINY, max_epochs=1)).fit(*make_image_pairs(40)).save(path)
    return path


def rewrite(src, dst, **changes):
    """A copy of the .npz ``src`` with entries replaced (None: removed)."""
    with np.load(src, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    for key, value in changes.items():
        if value is None:
            del arrays[key]
        else:
            arrays[key] = value
    np.savez(dst, **arrays)
    return dst


def test_the_saved_model_loads(saved_model):
    assert SiameseCNN.load(saved_model).params_.size > 0


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_load_of_a_damaged_file_names_it(saved_model, tmp_path, damage):
    path = damaged_copies(saved_model, tmp_path)[damage]
    with raises_naming(path, DAMAGE[damage]):
        SiameseCNN.load(path)


def test_load_of_a_missing_file_names_it(tmp_path):
    with raises_naming(tmp_path / "none.npz", "No such file", FileNotFoundError):
        SiameseCNN.load(tmp_path / "none.npz")


@pytest.mark.parametrize("key", ["params_json", "spec_json", "curves_json"])
@pytest.mark.parametrize("text, match", [
    ('{"n_components": 4', "is not valid JSON"),
    ("", "is not valid JSON"),
    ("[1, 2]", "must hold a JSON object, got list"),
])
def test_load_refuses_damaged_json_entries(saved_model, tmp_path, key, text, match):
    bad = rewrite(saved_model, tmp_path / "bad.npz", **{key: np.array(text)})
    with raises_naming(bad, f"entry '{key}' {match}"):
        SiameseCNN.load(bad)


@pytest.mark.parametrize("changes, match", [
    ({"params_json": '{"n_components": 4, "no_such_option": 1}'},
     r"'params_json' names unknown parameters \['no_such_option'\]"),
    ({"params_json": '{"energy": "l7"}'}, "'params_json': .*energy"),
    ({"spec_json": '{"input_shape": [12, 10]}'}, "'spec_json' is not a valid network spec"),
    ({"spec_json": '{"input_shape": [12, 10], "colour": 1}'}, "not a valid network spec"),
    ({"weights": np.zeros(7)}, r"'weights' must be \d+ floats .*shape \(7,\)"),
    ({"weights": "abc"}, "'weights' must be"),
    ({"threshold": "high"}, "'threshold' must be numeric of shape"),
    ({"threshold": np.zeros(3)}, r"'threshold' must be numeric of shape \(\)"),
    ({"input_scale": np.nan}, "'input_scale' must be a finite number"),
    ({"epochs": np.zeros(3)}, r"'epochs' must be numeric of shape \(2,\)"),
    ({"classes": np.array([1])}, "'classes' must be numeric"),
    ({"params_json": np.array(['{}', '{}'])}, "'params_json' must be one JSON string"),
])
def test_load_refuses_damaged_entries(saved_model, tmp_path, changes, match):
    bad = rewrite(saved_model, tmp_path / "bad.npz",
                  **{k: np.asarray(v) for k, v in changes.items()})
    with raises_naming(bad, match):
        SiameseCNN.load(bad)


def test_load_refuses_non_finite_weights_and_pickled_entries(saved_model, tmp_path):
    with np.load(saved_model) as f:
        n_weights = f["weights"].size
    bad = rewrite(saved_model, tmp_path / "nan.npz", weights=np.full(n_weights, np.nan))
    with raises_naming(bad, "'weights' holds NaN or infinity"):
        SiameseCNN.load(bad)
    objects = np.array([{"a": 1}], dtype=object)  # np.savez pickles it
    bad = rewrite(saved_model, tmp_path / "objects.npz", curves_json=objects)
    with raises_naming(bad, "key 'curves_json': holds pickled Python objects"):
        SiameseCNN.load(bad)


@pytest.mark.parametrize("key", REQUIRED_ENTRIES)
def test_load_refuses_a_file_without_an_entry(saved_model, tmp_path, key):
    bad = rewrite(saved_model, tmp_path / "bad.npz", **{key: None})
    with raises_naming(bad, rf"lacks the entries \['{key}'\]"):
        SiameseCNN.load(bad)


# ------------------------------------------------------------- 7: data set files


def labelled(path, **arrays):
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_labelled_npz_damaged_files_name_the_file(tmp_path, damage):
    good = labelled(tmp_path / "good.npz", X=np.ones((4, 2)), labels=np.arange(4))
    path = damaged_copies(good, tmp_path)[damage]
    with raises_naming(path, DAMAGE[damage]):
        datasets.load_labelled_npz(path)


@pytest.mark.parametrize("arrays, match", [
    ({"images": np.ones((4, 3, 3))}, r"must hold 'images' .*found keys \['images'\]"),
    ({"data": np.ones((4, 2)), "target": np.arange(4)}, r"found keys \['data', 'target'\]"),
    ({"X": np.ones((4, 2)), "labels": np.arange(3)}, r"labels \(3,\)"),
    ({"X": np.ones((0, 2)), "labels": np.arange(0)}, "n >= 1"),
    ({"X": np.ones(4), "labels": np.arange(4)}, r"got float64 \(4,\)"),
    ({"X": np.array([[1.0, np.nan]] * 2), "labels": np.arange(2)}, "NaN or infinity"),
    ({"X": np.ones((2, 2)), "labels": np.array([0.0, np.nan])}, "labels hold NaN"),
    ({"X": np.ones((2, 2)), "labels": np.array([1 + 1j, 2])}, "labels must be numbers"),
    ({"X": np.ones((2, 2)), "labels": np.array([None, 1], dtype=object)},
     "key 'labels': holds pickled Python objects"),
])
def test_labelled_npz_without_the_expected_arrays_names_the_file(tmp_path, arrays, match):
    path = labelled(tmp_path / "data.npz", **arrays)
    with raises_naming(path, match):
        datasets.load_labelled_npz(path)


@pytest.mark.parametrize("read", [datasets.read_lfw_pairs, datasets.read_lfw_people])
def test_lfw_protocol_file_of_binary_garbage_names_the_file(tmp_path, read):
    path = tmp_path / "pairs.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    with raises_naming(path, r"line 1: not UTF-8 text .*expected an LFW (pair|people) file"):
        read(path)
    path.write_bytes(b"10 300\n\x00\x00\x00\n")
    with raises_naming(path, "line 2: binary data"):
        read(path)
    with raises_naming(tmp_path, "is a directory"):
        read(tmp_path)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_read_npz_damaged_files_name_the_file(tmp_path, damage):
    good = labelled(tmp_path / "good.npz", a=np.arange(3))
    path = damaged_copies(good, tmp_path)[damage]
    with raises_naming(path, DAMAGE[damage]):
        datasets.read_npz(path)


@pytest.mark.parametrize("load, folder, arrays, match", [
    (datasets.load_att_faces, "att_faces", {"images": np.zeros((2, 3, 4), np.uint8)},
     r"lacks the arrays \['labels'\]"),
    (datasets.load_yale_faces, "yale_faces",
     {"images": np.zeros((2, 12)), "labels": np.arange(2)}, r"images \(n, H, W\)"),
    (datasets.load_att_faces, "att_faces",
     {"images": np.zeros((2, 3, 4)), "labels": np.arange(3)}, r"labels \(3,\)"),
    (datasets.load_lfw, "lfw", {"images": np.zeros((2, 3, 4))}, r"lacks the arrays \['person'"),
])
def test_data_set_npz_with_missing_or_misshapen_arrays_names_the_file(tmp_path, load, folder,
                                                                      arrays, match):
    (tmp_path / folder).mkdir()
    name = "lfw_deepfunneled_gray_62x47.npz" if folder == "lfw" else f"{folder}.npz"
    path = labelled(tmp_path / folder / name, **arrays)
    with raises_naming(path, match):
        load(tmp_path)


def test_data_set_npz_damaged_names_the_file(tmp_path):
    (tmp_path / "att_faces").mkdir()
    path = tmp_path / "att_faces" / "att_faces.npz"
    path.write_bytes(os.urandom(100))
    with raises_naming(path, "not a zip archive"):
        datasets.load_att_faces(tmp_path)


# ------------------------------------------------------------ 7: the CLI's data folder


@pytest.mark.parametrize("data, looked_for", [("lfw", "lfw/lfw_deepfunneled_gray_62x47.npz"),
                                              ("att", "att_faces/att_faces.npz")])
@pytest.mark.parametrize("exists", [True, False])
def test_verify_without_a_data_folder_exits_2_naming_it(tmp_path, monkeypatch, capsys, data,
                                                        looked_for, exists):
    home = tmp_path / "data"
    if exists:
        home.mkdir()
    monkeypatch.setenv("METRICFIT_DATA", str(home))
    assert main(["verify", "--data", data, "--quiet"]) == 2
    line = one_line_error(capsys, looked_for)
    assert f"data folder {home} (from $METRICFIT_DATA)" in line
    assert ("does not exist" in line) is not exists


# ------------------------------------------------------------ 7: the CLI's comma lists


@pytest.mark.parametrize("option, value", [
    ("--lbp-block", "4,,2"), ("--lbp-block", "4,"), ("--lbp-block", ",4"),
    ("--dims", "8,,16"), ("--experiments", "0,,1"), ("--lams", "0.1,,1"),
    ("--methods", "tsml-i,,csml-i"), ("--lbp-radius", "1,,2"),
])
def test_comma_lists_with_an_empty_item_exit_2(option, value, capsys):
    assert main(["verify", option, value]) == 2
    line = one_line_error(capsys, option)
    assert repr(value) in line


def test_fuse_methods_with_an_empty_item_exit_2(tmp_path, capsys):
    path = labelled(tmp_path / "s.npz", a=np.zeros(1))
    assert main(["fuse", str(path), "--methods", "tsml-i,"]) == 2
    assert "empty item" in one_line_error(capsys, "--methods")


# ------------------------------------------------- score files of `verify --scores`


def scores_file(path, **changes):
    """A valid scores file of two experiments of 'pixels/tsml-i', with ``changes`` to the
    arrays of experiment 0 (None: removed)."""
    rng = np.random.default_rng(0)
    arrays = {}
    for e in (0, 1):
        arrays.update({f"pixels/tsml-i/{e}/val_scores": rng.normal(size=6),
                       f"pixels/tsml-i/{e}/val_y": np.array([1, -1] * 3),
                       f"pixels/tsml-i/{e}/scores": rng.normal(size=4),
                       f"pixels/tsml-i/{e}/y": np.array([1, -1] * 2)})
    for key, value in changes.items():
        arrays.pop(f"pixels/tsml-i/0/{key}")
        if value is not None:
            arrays[f"pixels/tsml-i/0/{key}"] = value
    np.savez(path, **arrays)
    return path


def test_scores_file_loads(tmp_path):
    saved = verification.load_scores(scores_file(tmp_path / "s.npz"))
    assert [c["experiment"] for c in saved[("pixels", "tsml-i")]] == [0, 1]


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_scores_file_names_it(tmp_path, damage):
    path = damaged_copies(scores_file(tmp_path / "s.npz"), tmp_path)[damage]
    with raises_naming(path, DAMAGE[damage]):
        verification.load_scores(path)


@pytest.mark.parametrize("changes, match", [
    ({"scores": np.ones((4, 2))}, "0/scores must be 1-D finite numbers"),
    ({"val_scores": np.array([0.1, np.nan, 0, 0, 0, 0])}, "0/val_scores must be 1-D finite"),
    ({"y": np.array([1, -1, 1])}, "0/y has 3 labels for 4 pairs"),
    ({"val_y": np.array([1, 2] * 3)}, r"0/val_y: pair labels must be in .*\[1, 2\]"),
    ({"y": None}, r"0 lacks \['y'\]"),
])
def test_scores_file_with_wrong_arrays_names_it(tmp_path, changes, match):
    path = scores_file(tmp_path / "s.npz", **changes)
    with raises_naming(path, match):
        verification.load_scores(path)


def test_fuse_refuses_columns_of_different_experiments(tmp_path):
    """Two runs of other --experiments (0,1 and 1,2): the same count and, on LFW, the same
    labels in every fold; pairing them by position would fuse different test folds."""
    first = verification.load_scores(scores_file(tmp_path / "a.npz"))
    second = {("sqrt", "tsml-i"): [dict(c, experiment=c["experiment"] + 1)
                                   for c in first[("pixels", "tsml-i")]]}
    with pytest.raises(ValueError, match="different experiments"):
        verification.fuse_saved({**first, **second})
    same = {("sqrt", "tsml-i"): first[("pixels", "tsml-i")]}
    assert len(verification.fuse_saved({**first, **same})) == 2


def test_fuse_cli_on_a_truncated_scores_file_exits_2_naming_it(tmp_path, capsys):
    path = damaged_copies(scores_file(tmp_path / "s.npz"), tmp_path)["truncated"]
    assert main(["fuse", str(path)]) == 2
    assert "damaged or truncated" in one_line_error(capsys, str(path))


@pytest.mark.parametrize("y", [np.array([1, -1], dtype=object),
                               np.array([True, False], dtype=object),
                               np.array([1, 0], dtype=object)])
def test_write_trials_takes_numeric_labels_in_an_object_array(tmp_path, y):
    """An object array of +1/-1 or booleans was read as words and refused."""
    path = tmp_path / "trials.txt"
    trials.write_trials(path, ["a", "b"], ["c", "d"], y)
    assert trials.read_trials(path)[2].tolist() == [1, -1]
