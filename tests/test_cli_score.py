"""`metricfit score` then `metricfit evaluate` end to end on a synthetic two-covariance set
written to files (issue 28): train / enrol / test embeddings with ids in the three formats,
trial lists, development trials, a cohort. PLDA beats cosine there (the identity lives in a
few directions, the nuisance in the others, and a common offset misleads the cosine); the
JSON is strict and its numbers are those of metricfit.metrics computed directly."""

import json

import numpy as np
import pytest

from metricfit import metrics
from metricfit.backend import LinearCalibration, read_scores, read_trials, write_trials
from metricfit.cli import main

D = 12


def _people(rng, n, per, prefix):
    """Two-covariance embeddings: identity means in 3 strong directions, noise elsewhere."""
    between = np.r_[np.full(3, 2.0), np.full(D - 3, 0.2)]
    within = np.r_[np.full(3, 0.7), np.full(D - 3, 1.5)]
    means = rng.normal(size=(n, D)) * between
    labels = np.repeat(np.arange(n), per)
    X = 3.0 + means[labels] + rng.normal(size=(n * per, D)) * within
    return X, np.array([f"{prefix}{i}" for i in labels])


def _part(folder, rng, name, n_models=25, n_enrol=2, n_test=3):
    """``name``_enrol.npz (labels = model ids), ``name``_test.txt (a text table) and
    ``name``_trials.txt (every model against every test segment)."""
    X, labels = _people(rng, n_models, n_enrol + n_test, f"{name}spk")
    ids = np.array([f"{name}{k}" for k in range(len(X))])
    enrol = np.arange(len(X)) % (n_enrol + n_test) < n_enrol
    np.savez(folder / f"{name}_enrol.npz", X=X[enrol], ids=ids[enrol], labels=labels[enrol])
    with open(folder / f"{name}_test.txt", "w") as f:
        for i, x in zip(ids[~enrol], X[~enrol], strict=True):
            f.write(f"{i} {' '.join(map(repr, x.tolist()))}\n")
    models, tests, test_labels = np.unique(labels), ids[~enrol], labels[~enrol]
    e, t = np.repeat(models, tests.size), np.tile(tests, models.size)
    write_trials(folder / f"{name}_trials.txt", e, t,
                 np.where(e == np.tile(test_labels, models.size), 1, -1))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    folder = tmp_path_factory.mktemp("embeddings")
    rng = np.random.default_rng(0)
    X, labels = _people(rng, 120, 4, "train")
    np.save(folder / "train.npy", X)  # .npy + ids file + an id map for the labels
    ids = [f"t{k}" for k in range(len(X))]
    (folder / "train.ids").write_text("\n".join(ids) + "\n")
    (folder / "train.utt2spk").write_text("".join(f"{i} {s}\n"
                                                  for i, s in zip(ids, labels, strict=True)))
    for name in ("eval", "dev"):
        _part(folder, rng, name)
    np.savez(folder / "cohort.npz", X=_people(rng, 60, 1, "c")[0])
    return folder


def _score(folder, method, out, *extra):
    return main(["score", "--train", str(folder / "train.npy"), "--train-labels",
                 str(folder / "train.utt2spk"), "--method", method,
                 "--enrol", str(folder / "eval_enrol.npz"), "--test", str(folder / "eval_test.txt"),
                 "--trials", str(folder / "eval_trials.txt"), "--out", str(out), *extra])


def _evaluate(folder, scores, capsys, *extra):
    capsys.readouterr()  # what came before
    assert main(["evaluate", "--scores", str(scores), "--trials",
                 str(folder / "eval_trials.txt"), "--json", *extra]) == 0
    text = capsys.readouterr().out
    return json.loads(text), text


def _strict(text):
    """json.loads that refuses NaN / Infinity (the strict JSON of the command)."""
    def refuse(value):
        raise AssertionError(f"non-strict JSON constant {value}")
    return json.loads(text, parse_constant=refuse)


def test_score_then_evaluate_plda_beats_cosine(synthetic, tmp_path, capsys):
    reports = {}
    for method in ("cosine", "plda"):
        out = tmp_path / f"{method}.scores"
        assert _score(synthetic, method, out) == 0
        assert "wrote" in capsys.readouterr().out
        report, text = _evaluate(synthetic, out, capsys, "--prior", "0.05")
        _strict(text)
        reports[method] = report
        # the numbers are those of metricfit.metrics on the matched scores and labels
        enrol, test, y = read_trials(synthetic / "eval_trials.txt")
        table = {(e, t): s for e, t, s in zip(*read_scores(out), strict=True)}
        scores = np.array([table[e, t] for e, t in zip(enrol, test, strict=True)])
        assert report["n_target"] == 75 and report["n_nontarget"] == 1800
        assert report["eer"] == pytest.approx(metrics.equal_error_rate(y, scores)[0])
        assert report["cllr"] == pytest.approx(metrics.cllr(y, scores))
        assert report["min_cllr"] == pytest.approx(metrics.min_cllr(y, scores))
        assert [d["prior"] for d in report["dcf"]] == [0.01, 0.001, 0.05]
        for d in report["dcf"]:
            assert d["min_dcf"] == pytest.approx(metrics.min_dcf(y, scores, d["prior"])[0])
            assert d["act_dcf"] == pytest.approx(metrics.act_dcf(y, scores, d["prior"]))
            w_miss, w_fa = 1.0, (1 - d["prior"]) / d["prior"]
            assert d["min_dcf"] == pytest.approx(w_miss * d["misses"] / 75
                                                 + w_fa * d["false_accepts"] / 1800)
            assert d["interval"][0] <= d["min_dcf"] <= d["interval"][1]
            assert d["one_false_accept"] == pytest.approx(w_fa / 1800)
        for entry in report["fnmr_at_fmr"]:
            assert entry["fnmr"] == pytest.approx(metrics.fnmr_at_fmr(y, scores, entry["fmr"]))
        # minDCF(0.001): one false accept in 1800 non-targets moves it by 0.55
        assert (reports[method]["dcf"][1]["warning"] or "").startswith("one false accept")
    assert reports["plda"]["eer"] < 0.6 * reports["cosine"]["eer"]
    assert reports["plda"]["dcf"][0]["min_dcf"] < reports["cosine"]["dcf"][0]["min_dcf"]
    assert reports["plda"]["min_cllr"] < reports["cosine"]["min_cllr"]


def test_snorm_and_calibration_at_the_prior(synthetic, tmp_path, capsys):
    raw, llr = tmp_path / "raw.scores", tmp_path / "llr.scores"
    common = ["--norm", "s-norm", "--cohort", str(synthetic / "cohort.npz")]
    assert _score(synthetic, "plda", raw, *common) == 0
    dev = ["--calibrate", str(synthetic / "dev_trials.txt"), "--dev-enrol",
           str(synthetic / "dev_enrol.npz"), "--dev-test", str(synthetic / "dev_test.txt"),
           "--prior", "0.01", "--llr"]
    assert _score(synthetic, "plda", llr, *common, *dev) == 0
    out = capsys.readouterr().out
    assert "s-norm with a cohort of 60" in out and "prior 0.01 on 1875 development" in out
    # the LLRs are the dev-fitted calibration of the same s-normalised scores
    dev_scores = tmp_path / "dev.scores"
    assert main(["score", "--train", str(synthetic / "train.npy"), "--train-labels",
                 str(synthetic / "train.utt2spk"), "--method", "plda", "--enrol",
                 str(synthetic / "dev_enrol.npz"), "--test", str(synthetic / "dev_test.txt"),
                 "--trials", str(synthetic / "dev_trials.txt"), "--out", str(dev_scores),
                 *common]) == 0
    capsys.readouterr()
    _, _, dev_y = read_trials(synthetic / "dev_trials.txt")
    calibration = LinearCalibration(prior=0.01).fit(read_scores(dev_scores)[2], dev_y)
    np.testing.assert_allclose(read_scores(llr)[2],
                               calibration.transform(read_scores(raw)[2]), rtol=1e-10)
    report, _ = _evaluate(synthetic, llr, capsys)
    raw_report, _ = _evaluate(synthetic, raw, capsys)
    # s-normalised scores are not LLRs; calibrated, their Cllr drops and the actDCF at the
    # calibration's prior comes near the minDCF
    assert report["cllr"] < 0.7 * raw_report["cllr"]
    # (within four false accepts of 0.055 each on these 1,800 non-target trials: 0.11 with
    # Kaldi's 10 EM iterations, 0.165 with the protocols' PLDA_N_ITER = 100)
    dcf = report["dcf"][0]
    assert dcf["act_dcf"] < dcf["min_dcf"] + 4 * dcf["one_false_accept"]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_n_vs_m_enrolment_and_as_norm_plda(synthetic, tmp_path, capsys):
    out = tmp_path / "as.scores"
    assert _score(synthetic, "plda", out, "--norm", "as-norm", "--top-n", "20", "--cohort",
                  str(synthetic / "cohort.npz"), "--enrol-method", "mean-score") == 0
    report, _ = _evaluate(synthetic, out, capsys)
    assert report["eer"] < 0.15
    # without --enrol, the trials are id against id (1-vs-1) within --test
    key = tmp_path / "pairs.txt"
    key.write_text("eval2 eval3\neval2 eval7\n")
    assert main(["score", "--train", str(synthetic / "train.npy"), "--train-labels",
                 str(synthetic / "train.utt2spk"), "--method", "tsml-sim", "--max-iter", "20",
                 "--wpca", "6", "--train-pairs", "200", "--test", str(synthetic / "eval_test.txt"),
                 "--trials", str(key), "--out", str(out)]) == 0
    assert "after WPCA-6" in capsys.readouterr().out
    assert read_scores(out)[0].tolist() == ["eval2", "eval2"]


@pytest.mark.parametrize("argv, message", [
    (["--method", "plad"], "--method"),
    (["--method", "cnn"], "--method"),
    (["--prior", "1.5"], "--prior"),
    (["--wpca", "-3"], "--wpca"),
    (["--norm", "z"], "--norm"),
    (["--norm", "s-norm"], "--norm and --cohort"),
    (["--llr"], "--llr"),
    (["--trials", "missing.txt"], "--trials"),
])
def test_bad_options_exit_2_with_one_line(synthetic, tmp_path, argv, message, capsys):
    # the base command is valid; a later occurrence of an option overrides the earlier one
    code = main(["score", "--train", str(synthetic / "train.npy"), "--train-labels",
                 str(synthetic / "train.utt2spk"), "--method", "cosine", "--test",
                 str(synthetic / "eval_test.txt"), "--trials", str(synthetic / "eval_trials.txt"),
                 "--out", str(tmp_path / "s"), *argv])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_file_errors_name_the_option_file_and_line(synthetic, tmp_path, capsys):
    bad = tmp_path / "test.txt"
    bad.write_text("u1 1 2 3\n")
    assert _score(synthetic, "cosine", tmp_path / "s", "--test", str(bad)) == 2
    err = capsys.readouterr().err.strip()
    assert "the embeddings differ in dimension" in err
    bad.write_text("eval2 1 x\n")
    assert _score(synthetic, "cosine", tmp_path / "s", "--test", str(bad)) == 2
    err = capsys.readouterr().err.strip()
    assert "--test: " in err and "line 1: 'x' is not a number" in err
    trials = tmp_path / "trials.txt"
    trials.write_text("evalspk0 eval2\nnobody eval3\n")
    assert _score(synthetic, "cosine", tmp_path / "s", "--trials", str(trials)) == 2
    err = capsys.readouterr().err.strip()
    assert "trials.txt: unknown enrolment id(s) nobody" in err and len(err.splitlines()) == 1
    unlabelled = tmp_path / "train.npz"
    np.savez(unlabelled, X=np.ones((4, D)))
    assert main(["score", "--train", str(unlabelled), "--method", "cosine", "--test",
                 str(synthetic / "eval_test.txt"), "--trials", str(trials), "--out",
                 str(tmp_path / "s")]) == 2
    assert "has no identity labels" in capsys.readouterr().err


def test_help_names_the_formats(capsys):
    assert main(["score", "--help"]) == 0
    text = capsys.readouterr().out
    assert ".npz (X or embeddings, ids [, labels])" in text and "--calibrate" in text
    assert main(["evaluate", "--help"]) == 0
    assert "FNMR" in capsys.readouterr().out


def _shifted_domain(rng, n, per, prefix, shifted):
    """Identities in 3 strong directions; the test domain (``shifted``) adds identity variance
    2 and within-class variance 0.3 along 3 directions nearly constant in training, and moves
    the mean by 2 (as tests/test_plda_adapt.py)."""
    centres = rng.normal(size=(n, D)) * np.r_[np.full(3, 1.0), np.full(D - 3, 0.05)]
    labels = np.repeat(np.arange(n), per)
    noise = rng.normal(size=(n * per, D)) * np.r_[np.full(3, 0.7), np.full(D - 3, 0.3)]
    if shifted:
        centres[:, 3:6] += rng.normal(size=(n, 3)) * np.sqrt(2.0)
        noise[:, 3:6] += rng.normal(size=(n * per, 3)) * np.sqrt(0.3)
    X = centres[labels] + noise + (2.0 if shifted else 0.0)
    return X, np.array([f"{prefix}{i}" for i in labels])


@pytest.mark.parametrize("method, extra", [("plda", ()), ("plda-lnorm", ("--wpca", "10"))])
def test_adapted_plda_beats_unadapted_in_a_new_domain(tmp_path, capsys, method, extra):
    rng = np.random.default_rng(0)
    X, labels = _shifted_domain(rng, 300, 4, "s", False)
    np.savez(tmp_path / "train.npz", X=X, labels=labels)
    np.savez(tmp_path / "adapt.npz", X=_shifted_domain(rng, 100, 4, "a", True)[0])  # no labels
    X, labels = _shifted_domain(rng, 40, 4, "t", True)
    ids = np.array([f"u{k}" for k in range(len(X))])
    np.savez(tmp_path / "test.npz", X=X, ids=ids)
    i, j = np.triu_indices(len(X), 1)
    write_trials(tmp_path / "trials.txt", ids[i], ids[j],
                 np.where(labels[i] == labels[j], 1, -1))
    eer = {}
    for name, adapt in (("plain", ()), ("adapted", ("--adapt", str(tmp_path / "adapt.npz")))):
        out = tmp_path / f"{name}.scores"
        assert main(["score", "--train", str(tmp_path / "train.npz"), "--method", method,
                     *extra, "--test", str(tmp_path / "test.npz"), "--trials",
                     str(tmp_path / "trials.txt"), "--out", str(out), *adapt]) == 0
        printed = capsys.readouterr().out
        assert ("adapted to 400 unlabelled" in printed) == bool(adapt)
        assert read_scores(out)[1].tolist() == ids[j].tolist()  # in the trials' order
        eer[name] = metrics.equal_error_rate(read_trials(tmp_path / "trials.txt")[2],
                                             read_scores(out)[2])[0]
    assert eer["adapted"] < 0.6 * eer["plain"], eer  # 0.11 vs 0.27 (plda), 0.16 vs 0.31


def test_adapt_is_for_plda_methods(synthetic, tmp_path, capsys):
    assert _score(synthetic, "tsml-sim", tmp_path / "s", "--adapt",
                  str(synthetic / "cohort.npz")) == 2
    err = capsys.readouterr().err.strip()
    assert "--adapt adapts a PLDA back-end" in err and len(err.splitlines()) == 1
    np.savez(tmp_path / "one.npz", X=np.ones((1, D)))
    assert _score(synthetic, "plda", tmp_path / "s", "--adapt", str(tmp_path / "one.npz")) == 2
    err = capsys.readouterr().err.strip()
    assert "--adapt: " in err and "at least 2 points" in err and len(err.splitlines()) == 1
