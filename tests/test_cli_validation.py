"""The CLI checks every argument before any work: a user error exits 2 with one line on
stderr naming the argument, and no traceback; ``--json`` output is strict JSON."""

import json

import numpy as np
import pytest

from metricfit import cli
from metricfit.cli import main


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if the command starts loading data (validation must come first)."""
    def forbidden(*args, **kwargs):
        raise AssertionError("work started before the arguments were validated")
    monkeypatch.setattr(cli.verify, "_load", forbidden)
    monkeypatch.setattr(cli.fuse.verification, "load_scores", forbidden)


def bad(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    missing = str(tmp_path / "missing" / "out.json")
    text = tmp_path / "text.npz"
    text.write_text("not an npz")
    return folder, missing, text


CASES = {
    # option: list of (bad value, text the one-line message must contain)
    "--json": [("{folder}", "is a directory"), ("{missing}", "does not exist")],
    "--plot": [("{folder}", "is a directory"), ("{missing}", "does not exist")],
    "--scores": [("{folder}", "is a directory"), ("{missing}", "does not exist")],
    "--n-components": [("0", "positive integer"), ("-3", "positive integer"),
                       ("ten", "positive integer")],
    "--repeats": [("0", "positive integer"), ("1.5", "positive integer")],
    "--pairs": [("0", "positive integer"), ("x", "positive integer")],
    "--max-iter": [("0", "positive integer")],
    "--threads": [("0", "positive integer")],
    "--lams": [("nan", "finite"), ("inf", "finite"), ("-1", ">= 0"), ("0.1,abc", "'abc'"),
               (",", "lambdas")],
    "--methods": [("tsml-x", "unknown method"), (",", "method names")],
    "--features": [("hug", "invalid choice")],
    "--data": [("mnist", "unknown data set"), ("{missing}.npz", "no such file")],
    "--data-home": [("{missing}", "no such folder")],
    "--setting": [("both", "invalid choice")],
    "--experiments": [("a", "integers >= 0"), ("-1", "integers >= 0"), ("1.5", "integers >= 0"),
                      (",", "experiment numbers"), ("1,1", "named twice")],
    "--cnn-epochs": [("0", "positive integer")],
}


def one_line_error(capsys, option):
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert option in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("option,value,message",
                         [(o, v, m) for o, cases in CASES.items() for v, m in cases])
def test_verify_option_errors_exit_2_with_one_line(option, value, message, tmp_path, capsys,
                                                   no_work):
    folder, missing, _ = bad(tmp_path)
    value = value.format(folder=folder, missing=missing)
    assert main(["verify", option, value]) == 2
    assert message in one_line_error(capsys, option)


@pytest.mark.parametrize("argv, option, message", [
    (["--experiments", "0"], "--experiments", "digits has --repeats"),
    (["--data", "lfw", "--experiments", "0,10"], "--experiments", "experiments 0 to 9, got 10"),
    (["--methods", "cnn,baseline", "--snorm", "5"], "--snorm", "does not apply to cnn"),
])
def test_image_method_and_experiment_errors_come_before_work(argv, option, message, capsys,
                                                             no_work):
    assert main(["verify", *argv]) == 2
    assert message in one_line_error(capsys, option)


@pytest.mark.parametrize("option", ["--n", "--d", "--k", "--repeats", "--threads"])
def test_bench_counts_must_be_positive(option, capsys):
    assert main(["bench", option, "0"]) == 2
    assert "positive integer" in one_line_error(capsys, option)


def test_fuse_arguments_are_checked_before_work(tmp_path, capsys, no_work):
    folder, missing, text = bad(tmp_path)
    assert main(["fuse", missing]) == 2
    assert "no such file" in one_line_error(capsys, "SCORES.npz")
    assert main(["fuse", str(text), "--json", str(folder)]) == 2
    assert "is a directory" in one_line_error(capsys, "--json")
    assert main(["fuse", str(text), "--methods", "nope"]) == 2
    assert "unknown method" in one_line_error(capsys, "--methods")
    assert main(["fuse", str(text), "--classifier", "tree"]) == 2
    one_line_error(capsys, "--classifier")


def test_fuse_on_a_wrong_file_names_it(tmp_path, capsys):
    text = tmp_path / "text.npz"
    text.write_text("not an npz")
    other = tmp_path / "other.npz"
    np.savez(other, images=np.zeros((2, 3)), labels=np.zeros(2))
    for path, message in ((text, "not a scores file"), (other, "key 'images'")):
        assert main(["fuse", str(path)]) == 2
        line = one_line_error(capsys, str(path))
        assert message in line


def test_json_is_strict_with_null_for_undefined_values(tmp_path, capsys):
    """baseline and wccn have no lambda: null in the file, never NaN (not JSON)."""
    out = tmp_path / "run.json"
    code = main(["verify", "--quiet", "--repeats", "1", "--methods", "baseline,wccn,tsml-i",
                 "--lams", "0.1", "--max-iter", "20", "--json", str(out)])
    assert code == 0

    def reject(constant):
        raise ValueError(f"not JSON: {constant}")

    report = json.loads(out.read_text(), parse_constant=reject)
    lams = {r["method"]: r["lam"] for r in report["results"]}
    assert lams["baseline"] is None and lams["wccn"] is None and lams["tsml-i"] == 0.1


def test_strict_json_maps_non_finite_to_null():
    value = {"a": np.nan, "b": [np.float32(np.inf), 1.5, np.int64(3)],
             "c": np.array([1.0, -np.inf])}
    assert cli.strict_json(value) == {"a": None, "b": [None, 1.5, 3], "c": [1.0, None]}
    json.dumps(cli.strict_json(value), allow_nan=False)


def test_a_closed_pipe_ends_quietly():
    """`metricfit verify | head`: the reader closes the pipe before the table is written; the
    command ends with status 1 and no traceback (it printed 'BrokenPipeError' before)."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "metricfit.cli", "verify", "--methods", "baseline"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 1
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
