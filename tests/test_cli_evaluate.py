"""`metricfit evaluate` (issue 28): the report of a score file against a key, the counts a
minDCF rests on and the warning when one false accept moves it by more than 0.05, null with a
reason where a number cannot be measured, the DET plot, and the errors of mismatched files."""

import json

import numpy as np
import pytest

from metricfit import metrics
from metricfit.backend import write_scores, write_trials
from metricfit.cli import main


@pytest.fixture
def files(tmp_path):
    """An LFW-sized fold: 30 target and 300 non-target trials with scores."""
    rng = np.random.default_rng(0)
    y = np.repeat([1, -1], [30, 300])
    scores = np.where(y == 1, 1.5, -1.5) + rng.normal(size=y.size)
    enrol = [f"m{k % 40}" for k in range(y.size)]
    test = [f"t{k}" for k in range(y.size)]
    write_trials(tmp_path / "key", enrol, test, y)
    write_scores(tmp_path / "scores", enrol, test, scores)
    return tmp_path, y, scores


def test_report_counts_steps_and_nulls(files, capsys):
    folder, y, scores = files
    assert main(["evaluate", "--scores", str(folder / "scores"), "--trials", str(folder / "key"),
                 "--json"]) == 0
    text = capsys.readouterr().out
    report = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict {c}"))
    assert (report["n_target"], report["n_nontarget"]) == (30, 300)
    p01 = report["dcf"][0]
    assert p01["prior"] == 0.01 and p01["n_nontarget"] == 300
    # the number: 300 impostors, one false accept moves minDCF(0.01) by 0.33
    assert p01["one_false_accept"] == pytest.approx(0.33)
    assert p01["warning"].startswith("one false accept moves minDCF(0.01) by 0.33")
    assert p01["min_dcf"] == pytest.approx(metrics.min_dcf(y, scores, 0.01)[0])
    assert p01["interval"][0] <= p01["min_dcf"] <= p01["interval"][1]
    fmr100, fmr1000 = report["fnmr_at_fmr"]
    assert fmr100["fnmr"] == pytest.approx(metrics.fnmr_at_fmr(y, scores, 0.01))
    assert fmr100["reason"] is None
    assert fmr1000["fnmr"] is None and fmr1000["reason"].startswith(
        "needs at least 1000 non-target trials")
    assert report["eer"] == pytest.approx(metrics.equal_error_rate(y, scores)[0])


def test_table_json_file_and_det_plot(files, capsys):
    pytest.importorskip("matplotlib")
    folder, _, _ = files
    out, det = folder / "r.json", folder / "det.png"
    assert main(["evaluate", "--scores", str(folder / "scores"), "--trials", str(folder / "key"),
                 "--prior", "0.05,0.5", "--json", str(out), "--det", str(det)]) == 0
    table = capsys.readouterr().out
    assert "30 target and 300 non-target trials" in table and "warning: one false accept" in table
    assert "FNMR at FMR 0.001: n/a (needs at least 1000" in table
    report = json.loads(out.read_text())
    assert [d["prior"] for d in report["dcf"]] == [0.01, 0.001, 0.05, 0.5]
    assert report["dcf"][3]["warning"] is None  # at 0.5 one false accept moves it by 1/300
    assert det.stat().st_size > 5_000


def test_mismatched_files_exit_2_naming_the_file(files, capsys):
    folder, _, _ = files
    lines = (folder / "scores").read_text().splitlines()
    (folder / "short").write_text("\n".join(lines[:-2]) + "\n")
    assert main(["evaluate", "--scores", str(folder / "short"), "--trials",
                 str(folder / "key")]) == 2
    err = capsys.readouterr().err.strip()
    assert "short: no score for 2 trial(s) of the key" in err and len(err.splitlines()) == 1
    (folder / "twice").write_text("\n".join(lines + lines[:1]) + "\n")
    assert main(["evaluate", "--scores", str(folder / "twice"), "--trials",
                 str(folder / "key")]) == 2
    assert "is scored twice" in capsys.readouterr().err
    (folder / "more").write_text("\n".join(lines + ["x y 0.5"]) + "\n")
    assert main(["evaluate", "--scores", str(folder / "more"), "--trials",
                 str(folder / "key")]) == 0
    assert "1 scored trial(s) not in the key ignored" in capsys.readouterr().out
    (folder / "bad").write_text("m0 t0 high\n")
    assert main(["evaluate", "--scores", str(folder / "bad"), "--trials",
                 str(folder / "key")]) == 2
    assert "bad, line 1: expected 'enrol test score'" in capsys.readouterr().err
    (folder / "nolabels").write_text("m0 t0\n")
    assert main(["evaluate", "--scores", str(folder / "scores"), "--trials",
                 str(folder / "nolabels")]) == 2
    assert "nolabels, line 1: expected 'enrol test target|nontarget'" in \
        capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--prior", "0"], "--prior"),
    (["--prior", "0.1,,0.2"], "--prior"),
    (["--det", "/no/such/folder/det.png"], "--det"),
])
def test_bad_options_exit_2(files, argv, message, capsys):
    folder, _, _ = files
    assert main(["evaluate", "--scores", str(folder / "scores"), "--trials", str(folder / "key"),
                 *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
