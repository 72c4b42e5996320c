"""`metricfit verify` with the back-end: plda / plda-lnorm methods, minDCF and Cllr columns,
--calibrate, --snorm, --lbp-block, DET in --plot, and the new flags' errors."""

import json

import numpy as np
import pytest

from metricfit.cli import main

FAST = ["--quiet", "--repeats", "2", "--lams", "0.1"]


def test_plda_methods_calibration_and_snorm(tmp_path, capsys):
    out = tmp_path / "r.json"
    code = main(["verify", *FAST, "--methods", "baseline,plda,plda-lnorm", "--calibrate",
                 "--snorm", "40", "--json", str(out)])
    assert code == 0
    table = capsys.readouterr().out
    assert "minDCF" in table and "Cllr cal" in table and "actDCF cal" in table
    summary = {r["method"]: r for r in json.loads(out.read_text())["summary"]}
    assert list(summary) == ["baseline", "baseline+snorm", "plda", "plda+snorm", "plda-lnorm",
                             "plda-lnorm+snorm"]
    assert summary["plda"]["maxda"] > summary["baseline"]["maxda"] + 0.1
    for name, row in summary.items():
        assert 0 <= row["min_dcf"] <= 1 and 0 < row["cllr"] < 1
        # a linear calibration at P_target 0.01 fitted on one small validation fold may
        # overshoot the 1 % tail of s-normalised scores (not LLRs): plda-lnorm+snorm 1.079
        # +- 0.343 over the two repeats with the protocols' converged PLDA (issue 28 item 5)
        assert row["act_dcf"] <= (1.5 if name.endswith("+snorm") else 1.01), name
    # calibration on the validation fold lowers the Cllr of the cosine's raw scores
    assert summary["baseline"]["cllr"] < summary["baseline"]["cllr_raw"]


def test_every_table_has_min_dcf_and_cllr(capsys):
    assert main(["verify", *FAST, "--methods", "baseline"]) == 0
    header = capsys.readouterr().out.splitlines()[1]
    assert "minDCF" in header and "Cllr" in header


def test_plot_draws_det_beside_roc(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "p.png"
    assert main(["verify", *FAST, "--methods", "baseline,plda", "--plot", str(out)]) == 0
    assert out.stat().st_size > 10_000


@pytest.mark.parametrize("argv, message", [
    (["--snorm", "1"], "--snorm"),
    (["--snorm", "0"], "--snorm"),
    (["--lbp-block", "1"], "--lbp-block"),
    (["--methods", "plda,pdla"], "pdla"),
])
def test_bad_back_end_flags_exit_2_with_one_line(argv, message, capsys):
    assert main(["verify", "--quiet", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_lbp_block_changes_the_feature_size():
    from metricfit.cli import _features

    images = np.random.default_rng(0).random((2, 32, 24))
    assert _features(images, "lbp", True, 8).shape[1] == 4 * 3 * 59
    assert _features(images, "lbp", True, 10).shape[1] == 3 * 2 * 59
