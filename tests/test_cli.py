"""The metricfit command: the embedded default runs, JSON, error paths, and a reduced LFW run
of the restricted protocol that shows learning beats the baseline on unseen identities."""

import json

import numpy as np
import pytest

from metricfit import verification
from metricfit.cli import main


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
    rotation = list(verification.lfw_restricted_rotation())
    assert rotation[0] == ([0, 1, 2, 3, 4, 5, 6, 7], 8, 9)  # (1..8), 9, 10 one-based
    assert rotation[1] == ([1, 2, 3, 4, 5, 6, 7, 8], 9, 0)
    assert sorted(test for _, _, test in rotation) == list(range(10))
    for train, val, test in rotation:
        assert len({*train, val, test}) == 10


@pytest.mark.slow
def test_lfw_restricted_one_experiment_tsml_sim_beats_baseline(lfw_dir):
    """First experiment of seed 002 III.A on sqrt pixels, WPCA to 100: learning on similar
    pairs only must beat the cosine baseline on the test fold's unseen identities."""
    from metricfit.datasets import load_lfw

    lfw = load_lfw(lfw_dir.parent)
    vectors = np.sqrt(lfw.images.reshape(len(lfw.images), -1).astype(np.float64))
    y = np.where(lfw.pairs_view2_label == 1, 1, -1)
    rotation = verification.lfw_restricted_rotation
    verification.lfw_restricted_rotation = lambda: iter([next(rotation())])
    try:
        (results,) = verification.run_lfw_restricted(
            vectors, lfw.pairs_view2, y, lfw.pairs_view2_fold, methods=("baseline", "tsml-sim"),
            lams=(1e-2, 1e-1))
    finally:
        verification.lfw_restricted_rotation = rotation
    baseline, tsml_sim = results
    assert tsml_sim.accuracy > baseline.accuracy + 0.03
