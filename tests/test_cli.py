"""The metricfit command: the embedded default runs, JSON, fusion, plots, the identity-disjoint
protocols on labelled images (restricted and unrestricted), bench, every error path, and a
reduced LFW run of the restricted protocol that shows learning beats the baseline on unseen
identities."""

import json
import sys

import numpy as np
import pytest

from metricfit import cli
from metricfit.cli import main
from metricfit.experiments import verification
from metricfit.pairs import FoldRotation
from metricfit.pairs.splits import labelled_folds, unrestricted_train_pairs

FAST = ["--quiet", "--repeats", "2", "--lams", "0.1"]


def test_verify_without_arguments_runs_the_documented_default(capsys):
    """`metricfit verify` on a fresh install: digits, 5 splits, the README's table."""
    assert main(["verify"]) == 0
    captured = capsys.readouterr()
    rows = {line.split()[0]: line.split() for line in captured.out.splitlines()[2:]}
    assert list(rows) == list(verification.DEFAULT_METHODS)
    assert rows["baseline"][1:3] == ["70.53", "+-"] and rows["tsml-sim"][1] == "88.35"
    assert "verify [" in captured.err and "30/30" in captured.err  # the progress bar


def test_verify_digits_default_runs_and_writes_json(tmp_path, capsys):
    out = tmp_path / "digits.json"
    code = main(["verify", "--quiet", "--repeats", "2", "--json", str(out)])
    assert code == 0
    table = capsys.readouterr().out
    for method in verification.DEFAULT_METHODS:
        assert method in table
    report = json.loads(out.read_text())
    assert [r["method"] for r in report["summary"]] == list(verification.DEFAULT_METHODS)
    summary = {r["method"]: r for r in report["summary"]}
    assert summary["tsml-i"]["maxda"] > summary["baseline"]["maxda"] + 0.05
    assert len(report["results"]) == 2 * len(verification.DEFAULT_METHODS)


def test_unknown_method_is_a_clear_error(capsys):
    assert main(["verify", "--methods", "baseline,tsml-x"]) == 2
    assert "unknown method(s) tsml-x" in capsys.readouterr().err


def test_missing_lfw_data_says_where_it_looked(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("METRICFIT_DATA", str(tmp_path))
    assert main(["verify", "--data", "lfw"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "METRICFIT_DATA" in err


def test_lfw_rotation_is_the_papers():
    cv = FoldRotation(np.arange(10), n_train_folds=8)  # what run_folds rotates on 10 folds
    rotation = [cv.rotation(e) for e in range(10)]
    assert rotation[0] == ([0, 1, 2, 3, 4, 5, 6, 7], [8], 9)  # (1..8), 9, 10 one-based
    assert rotation[1] == ([1, 2, 3, 4, 5, 6, 7, 8], [9], 0)
    assert sorted(test for _, _, test in rotation) == list(range(10))
    for train, (val,), test in rotation:
        assert len({*train, val, test}) == 10


@pytest.mark.slow
def test_lfw_restricted_one_experiment_tsml_sim_beats_baseline(lfw_dir):
    """First experiment of seed 002 III.A on sqrt pixels, WPCA to 100: learning on similar
    pairs only must beat the cosine baseline on the test fold's unseen identities."""
    from metricfit.datasets import load_lfw

    lfw = load_lfw(lfw_dir.parent)
    vectors = np.sqrt(lfw.images.reshape(len(lfw.images), -1).astype(np.float64))
    y = np.where(lfw.pairs_view2_label == 1, 1, -1)
    config = verification.ExperimentConfig(methods=("baseline", "tsml-sim"), lams=(1e-2, 1e-1))
    (results,) = verification.run_lfw_restricted(
        vectors, lfw.pairs_view2, y, lfw.pairs_view2_fold, config, experiments=[0])
    baseline, tsml_sim = results
    assert tsml_sim.accuracy > baseline.accuracy + 0.03


def test_method_aliases_and_similar_only():
    assert verification.resolve_methods(["csml", "tsml", "ddml", "tsml-i"]) == [
        "csml-i", "tsml-i", "ddml-i"]
    assert verification.resolve_methods(
        ["baseline", "tsml", "ddml-i", "tsml-sim", "csml", "tsml-wccn", "csml-wccn"],
        similar_only=True) == ["baseline", "tsml-sim", "ddml-sim", "csml-sim", "tsml-wccn-sim",
                               "csml-wccn"]


@pytest.mark.parametrize("argv, message", [
    (["--features", "hug"], "invalid choice: 'hug'"),
    (["--data", "mnist"], "unknown data set 'mnist'"),
    (["--setting", "unrestricted"], "--setting applies to lfw"),
    (["--methods", "tsml", "--fusion"], "--fusion needs at least two methods"),
    (["--lams", "0.1,big"], "'big' is not a number"),
])
def test_bad_options_are_clear_errors(argv, message, capsys):
    assert main(["verify", "--quiet", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("data", ["att", "yale"])
def test_missing_face_data_says_where_it_looked(data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("METRICFIT_DATA", str(tmp_path))
    assert main(["verify", "--data", data]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / f"{data}_faces") in err and "METRICFIT_DATA" in err


def _corrupt(line):
    fields = line.split("\t")
    return {"field": "\t".join(fields[:1] + ["one"] + fields[2:]),
            "other image": "\t".join(fields[:2] + [fields[1]]) + "\n",
            "unknown name": "\t".join(["Nobody_Atall"] + fields[1:])}


@pytest.mark.parametrize("damage, message", [
    ("field", "pairs.txt, line 2: expected integers"),
    ("other image", "does not match the View 2 pairs of the LFW npz: pair 1 differs"),
    ("unknown name", "unknown person name 'Nobody_Atall'"),
    ("missing", "lfw/pairs.txt not found: looked for"),
])
def test_bad_lfw_pairs_txt_is_reported(damage, message, lfw_dir, tmp_path, capsys):
    from metricfit.datasets import LFW_NPZ

    if not (lfw_dir.parent / LFW_NPZ).is_file():
        pytest.skip("LFW npz not found")
    (tmp_path / "lfw").mkdir()
    (tmp_path / LFW_NPZ).symlink_to(lfw_dir.parent / LFW_NPZ)
    lines = (lfw_dir / "pairs.txt").read_text().splitlines(keepends=True)
    if damage != "missing":
        lines[1] = _corrupt(lines[1])[damage]
        (tmp_path / "lfw" / "pairs.txt").write_text("".join(lines))
    assert main(["verify", "--data", "lfw", "--data-home", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def _faces(path, n_identities=12, n_images=8, side=16, **keys):
    """Synthetic labelled faces: a random template per identity plus noise, uint8."""
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(n_identities), n_images)
    templates = rng.uniform(0, 255, size=(n_identities, side, side))
    images = np.clip(templates[labels] + rng.normal(0, 12, (labels.size, side, side)), 0, 255)
    arrays = {"images": images.astype(np.uint8), "labels": labels}
    arrays.update(keys)
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return path


@pytest.mark.parametrize("keys, message", [
    ({"labels": None}, "must hold 'images' (n, H, W) or 'X' (n, d), and 'labels' (n,); "
                       "found keys ['images']"),
    ({"images": None, "labels": None, "y": np.arange(96)}, "found keys ['y']"),
    ({"images": None, "X": np.zeros((5, 3))}, "got float64 (5, 3) and labels (96,)"),
    ({"labels": np.arange(3)}, "need numeric images (n, H, W) or X (n, d) and labels (n,)"),
    ({"labels": np.arange(96) % 5}, "5 identities are too few"),
])
def test_bad_npz_is_a_clear_error(keys, message, tmp_path, capsys):
    path = _faces(tmp_path / "faces.npz", **keys)
    assert main(["verify", "--data", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_missing_npz_and_lbp_on_vectors_are_clear_errors(tmp_path, capsys):
    assert main(["verify", "--data", str(tmp_path / "none.npz")]) == 2
    assert "no such file" in capsys.readouterr().err
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "x.npz", X=rng.random((60, 5)), labels=np.arange(60) % 12)
    assert main(["verify", "--quiet", "--data", str(tmp_path / "x.npz"), "--features", "lbp"]) == 2
    assert "--features lbp needs images (n, H, W)" in capsys.readouterr().err


def test_labelled_folds_and_unrestricted_pairs_are_identity_disjoint():
    labels = np.repeat(np.arange(40), 10)  # the shape of AT&T
    pairs, y, pair_fold, image_fold = labelled_folds(labels)
    assert np.unique(pair_fold).size == 10
    assert np.all(labels[pairs[y == 1, 0]] == labels[pairs[y == 1, 1]])
    assert (y == 1).sum() == (y == -1).sum() == 40 * 45  # all same-identity pairs
    draw = unrestricted_train_pairs(labels, image_fold, 3000)
    rotation = FoldRotation(pair_fold, n_train_folds=8)
    for e in range(10):
        train, (val,), test = rotation.rotation(e)
        held_out = np.unique(labels[pairs[np.isin(pair_fold, [val, test])]])
        restricted = labels[pairs[np.isin(pair_fold, train)]]
        drawn, drawn_y = draw(train, e)
        assert (drawn_y == 1).sum() == 32 * 45 == (drawn_y == -1).sum()
        for used in (restricted, labels[drawn]):
            assert np.intersect1d(used, held_out).size == 0
        assert np.intersect1d(labels[pairs[pair_fold == val]],
                              labels[pairs[pair_fold == test]]).size == 0


@pytest.mark.parametrize("setting, features", [("restricted", "pixels"),
                                               ("unrestricted", "sqrt-lbp")])
def test_verify_on_npz_faces(setting, features, tmp_path):
    out = tmp_path / "faces.json"
    code = main(["verify", "--data", str(_faces(tmp_path / "faces.npz")), "--setting", setting,
                 "--features", features, "--methods", "baseline,tsml", "--json", str(out),
                 *FAST])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["setting"] == setting and report["protocol"].startswith(f"faces.npz {setting}")
    assert "12 identities in 4 folds, 4 experiments 2/1/1" in report["protocol"]
    assert len(report["results"]) == 4 * 2
    assert all(row["maxda"] > 0.7 for row in report["summary"])


def test_verify_cnn_on_some_experiments_with_fusion_and_scores(tmp_path):
    """--methods cnn takes the images whatever --features; --experiments runs those only and
    numbers them in the JSON and the score file; the fusion fuses the cnn too."""
    out, scores = tmp_path / "cnn.json", tmp_path / "cnn.npz"
    code = main(["verify", "--data", str(_faces(tmp_path / "faces.npz")), "--features",
                 "sqrt-lbp", "--methods", "cnn,baseline", "--experiments", "3,1",
                 "--cnn-epochs", "1", "--fusion", "--threads", "1", "--json", str(out),
                 "--scores", str(scores), *FAST])
    assert code == 0
    report = json.loads(out.read_text())
    assert "experiments 3,1 of 4" in report["protocol"] and report["experiments"] == [3, 1]
    assert [(r["experiment"], r["method"]) for r in report["results"]] == [
        (e, m) for e in (3, 1) for m in ("cnn", "baseline", "fusion")]
    assert report["summary"][0]["lams"] == [None, None]
    cnn_records = [r for r in report["results"] if r["method"] == "cnn"]
    assert all(set(r["choice"]) == {"best_epoch", "n_epochs"} for r in cnn_records)
    assert all(0 <= r["choice"]["best_epoch"] <= r["choice"]["n_epochs"] <= 1
               for r in cnn_records)
    saved = verification.load_scores(str(scores))
    assert set(saved) == {("sqrt-lbp", m) for m in ("cnn", "baseline", "fusion")}
    assert len(saved[("sqrt-lbp", "cnn")]) == 2


@pytest.mark.parametrize("argv, message", [
    (["--experiments", "1,4"], "--experiments: faces.npz has experiments 0 to 3, got 4"),
    (["--methods", "cnn"], "--methods cnn needs images (n, H, W); "),
])
def test_verify_errors_the_data_decides(argv, message, tmp_path, capsys):
    path = tmp_path / "faces.npz"
    if "cnn" in argv:
        _faces(path, images=None, X=np.zeros((96, 5)))
    else:
        _faces(path)
    assert main(["verify", "--data", str(path), *argv, *FAST]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_fusion_adds_a_row_and_quiet_hides_the_bar(tmp_path, capsys):
    out = tmp_path / "fusion.json"
    argv = ["verify", "--methods", "baseline,wccn,tsml", "--fusion", "--json", str(out), *FAST]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "verify [" not in captured.err  # no progress bar
    assert captured.out.splitlines()[-1].startswith("fusion")
    report = json.loads(out.read_text())
    assert [r["method"] for r in report["summary"]] == ["baseline", "wccn", "tsml-i", "fusion"]
    assert report["summary"][-1]["maxda"] > report["summary"][0]["maxda"]
    assert set(report["curves"]["methods"]) == {"baseline", "wccn", "tsml-i", "fusion"}


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "roc.png"
    assert main(["verify", "--methods", "baseline,tsml", "--plot", str(out), *FAST]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    assert main(["verify", "--plot", str(tmp_path / "roc.png"), *FAST]) == 2
    assert "pip install metricfit[plot]" in capsys.readouterr().err
    assert not (tmp_path / "roc.png").exists()


def test_mean_curves_are_monotone_rates():
    rng = np.random.default_rng(0)
    y = np.repeat([1, -1], 50)
    results = [[verification.Result("m", 0, 0, 0, 0, 0, scores=y + rng.normal(0, 1, 100), y=y)]
               for _ in range(3)]
    curve = verification.mean_curves(results)["methods"]["m"]
    assert curve["tar"][0] <= curve["tar"][-1] == 1.0
    assert np.all(np.diff(curve["fa"]) <= 1e-12) and np.all(np.diff(curve["fr"]) >= -1e-12)
    assert curve["fa"][0] == 1.0 and curve["fr"][0] == 0.0 and curve["fr"][-1] == 1.0


@pytest.mark.parametrize("kind, dim", [("lbp", 2 * 2 * 59), ("oclbp", 3 * 3 * 59 * 3)])
def test_image_features_fit_small_images(kind, dim):
    images = np.random.default_rng(0).integers(0, 17, size=(5, 8, 8))  # digits-sized
    assert cli._features(images, kind, quiet=True).shape == (5, dim)
    assert np.allclose(cli._features(images, f"sqrt-{kind}", True) ** 2,
                       cli._features(images, kind, True))


def test_bench_prints_a_timing_table(capsys):
    assert main(["bench", "--n", "64", "--d", "8", "--k", "8", "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    for row in ("two-GEMM bound", "TSML prepared", "CSML prepared", "DDML prepared"):
        assert row in out
    assert "benchmarks/bench_gradients.py" in out


def _table(text):
    return {line.split()[0]: line.split() for line in text.splitlines()[2:] if line.strip()}


def test_fuse_reproduces_each_saved_column_and_fuses_across_descriptors(tmp_path, capsys):
    """`verify --scores` then `fuse`: each column's row is the verify run's own row (same
    thresholds, same test pairs), and the fusion row is computed from the saved columns."""
    first, second = tmp_path / "pixels.npz", tmp_path / "sqrt.npz"
    assert main(["verify", *FAST, "--methods", "baseline,tsml-i", "--scores", str(first)]) == 0
    pixels = _table(capsys.readouterr().out)
    assert main(["verify", *FAST, "--features", "sqrt", "--methods", "wccn,tsml-i",
                 "--scores", str(second)]) == 0
    capsys.readouterr()
    out = tmp_path / "fused.json"
    assert main(["fuse", str(first), str(second), "--json", str(out)]) == 0
    fused = _table(capsys.readouterr().out)
    assert list(fused) == ["pixels:baseline", "pixels:tsml-i", "sqrt:wccn", "sqrt:tsml-i",
                           "fusion"]
    assert fused["pixels:tsml-i"][1:] == pixels["tsml-i"][1:]
    report = json.loads(out.read_text())
    assert len(report["results"]) == 2 * 5
    saved = verification.load_scores(first)
    assert set(saved) == {("pixels", "baseline"), ("pixels", "tsml-i")}
    assert main(["fuse", str(first), str(second), "--methods", "tsml"]) == 0
    assert list(_table(capsys.readouterr().out)) == ["pixels:tsml-i", "sqrt:tsml-i", "fusion"]


def test_fuse_error_paths(tmp_path, capsys):
    path = tmp_path / "one.npz"
    assert main(["fuse", str(tmp_path / "missing.npz")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["verify", *FAST, "--methods", "baseline,tsml-i", "--scores", str(path)]) == 0
    assert main(["fuse", str(path), "--methods", "tsml-i"]) == 2
    assert "at least two score columns" in capsys.readouterr().err
    other = tmp_path / "other.npz"
    assert main(["verify", "--quiet", "--repeats", "2", "--lams", "0.1", "--methods", "wccn",
                 "--features", "sqrt", "--scores", str(other)]) == 0
    columns = {**verification.load_scores(path), **verification.load_scores(other)}
    columns[("sqrt", "wccn")][1] = dict(columns[("sqrt", "wccn")][1],
                                        y=-columns[("sqrt", "wccn")][1]["y"])
    with pytest.raises(ValueError, match="not scored on the same pairs"):
        verification.fuse_saved(columns)
