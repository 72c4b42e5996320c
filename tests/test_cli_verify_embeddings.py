"""`metricfit verify --data my.npz` on the user's embeddings (issue 28): the user's pairs and
folds (an LFW-style pairs.txt, or pair arrays in the npz) named in the table header, WPCA
optional, the baseline row the raw cosine, the reported prior used by the calibration, and
8 x 8 images under the default WPCA dimension."""

import json
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits

from metricfit import metrics
from metricfit.backend import LinearCalibration
from metricfit.cli import main
from metricfit.experiments.verification import ExperimentConfig, run_experiment

FAST = ["--quiet", "--lams", "0.1", "--max-iter", "30"]


@pytest.fixture
def embeddings(tmp_path):
    """60 identities x 4 embeddings with LFW-style ids, and a pairs.txt of 4 folds."""
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(60), 4)
    names = np.array([f"P{i:02d}" for i in labels])
    ids = np.array([f"{n}_{k % 4 + 1:04d}" for k, n in enumerate(names)])
    X = 5 + 3 * rng.normal(size=(60, 10))[labels] + rng.normal(size=(240, 10))
    np.savez(tmp_path / "emb.npz", X=X, labels=names, ids=ids)
    lines = ["4 10"]
    for f in range(4):
        people = np.arange(15 * f, 15 * (f + 1))
        lines += [f"P{p:02d} 1 {rng.integers(2, 5)}" for p in people[:10]]
        for _ in range(10):
            a, b = rng.choice(people, 2, replace=False)
            lines.append(f"P{a:02d} {rng.integers(1, 5)} P{b:02d} {rng.integers(1, 5)}")
    (tmp_path / "pairs.txt").write_text("\n".join(lines) + "\n")
    return tmp_path, X, labels


def _verify(*argv):
    return main(["verify", *FAST, *argv])


def _report(path):
    return json.loads(path.read_text())


def test_user_pairs_file_and_header(embeddings):
    folder, _, _ = embeddings
    out = folder / "r.json"
    assert _verify("--data", str(folder / "emb.npz"), "--pairs", str(folder / "pairs.txt"),
                   "--methods", "baseline,plda", "--json", str(out)) == 0
    report = _report(out)
    assert report["protocol"].startswith("emb.npz restricted, the pairs of pairs.txt: 4 folds "
                                         "of 20 pairs; 4 experiments, 2/1/1 folds")
    assert "baseline: cosine of the raw vectors" in report["protocol"]
    assert len(report["results"]) == 4 * 2
    assert report["summary"][0]["maxda"] > 0.9


def test_pairs_stored_in_the_npz(embeddings):
    folder, X, labels = embeddings
    rng = np.random.default_rng(0)
    same = np.array([[4 * i, 4 * i + 1] for i in range(60)])
    diff = np.array([[4 * i, 4 * ((i + 1 + rng.integers(0, 14)) % 60) + 2] for i in range(60)])
    pairs = np.concatenate([same, diff])
    fold = np.concatenate([np.arange(60) % 5, np.arange(60) % 5])
    np.savez(folder / "own.npz", X=X, labels=labels, pairs=pairs,
             pair_labels=np.repeat([1, 0], 60), pair_folds=fold)
    out = folder / "r.json"
    assert _verify("--data", str(folder / "own.npz"), "--methods", "baseline", "--experiments",
                   "0,1", "--json", str(out)) == 0
    assert "the pairs stored in own.npz: 5 folds of 24 pairs; experiments 0,1 of 5, 3/1/1" in \
        _report(out)["protocol"]


def test_wpca_optional_and_the_raw_baseline(embeddings):
    folder, _, _ = embeddings
    rows = {}
    for wpca, baseline in (("none", "raw"), ("6", "raw"), ("6", "wpca")):
        out = folder / f"{wpca}-{baseline}.json"
        assert _verify("--data", str(folder / "emb.npz"), "--pairs", str(folder / "pairs.txt"),
                       "--methods", "baseline", "--wpca", wpca, "--baseline", baseline,
                       "--json", str(out)) == 0
        report = _report(out)
        rows[wpca, baseline] = [r["accuracy"] for r in report["results"]]
        assert ("no WPCA" if wpca == "none" else "WPCA-6") in report["protocol"]
    # the raw baseline does not depend on the WPCA of the other methods
    assert rows["none", "raw"] == rows["6", "raw"]
    assert rows["6", "wpca"] != rows["6", "raw"]


def test_prior_sets_the_reported_dcf_and_the_calibration():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(40), 4)
    X = 2 * rng.normal(size=(40, 8))[labels] + rng.normal(size=(160, 8))
    index = [np.array([[i, i + 1], [i, (i + 7) % 160]]) for i in range(0, 160, 4)]
    pairs, y = np.concatenate(index), np.tile([1, -1], 40)
    part = np.repeat(np.arange(40) % 4 == 0, 2), np.repeat(np.arange(40) % 4 == 1, 2)
    train = ~(part[0] | part[1])
    splits = [(pairs[m], y[m]) for m in (train, part[0], part[1])]
    for prior in (0.01, 0.05):
        (result,) = run_experiment(X, splits, ExperimentConfig(methods=["baseline"],
                                                               n_components=6, prior=prior))
        assert result.min_dcf == pytest.approx(metrics.min_dcf(result.y, result.scores,
                                                               prior)[0])
        llr = LinearCalibration(prior=prior).fit(result.val_scores,
                                                 result.val_y).transform(result.scores)
        assert result.act_dcf == pytest.approx(metrics.act_dcf(result.y, llr, prior))
        at_half = LinearCalibration().fit(result.val_scores, result.val_y).transform(
            result.scores)
        assert result.cllr == pytest.approx(metrics.cllr(result.y, at_half))


def test_eight_by_eight_images_under_the_default_dimension(tmp_path, capsys):
    digits = load_digits()
    np.savez(tmp_path / "d8.npz", images=digits.images[:600], labels=digits.target[:600])
    out = tmp_path / "r.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _verify("--data", str(tmp_path / "d8.npz"), "--methods", "baseline,plda",
                       "--experiments", "0", "--json", str(out)) == 0
    assert "WPCA-64 (the vectors' dimension; 100 asked)" in _report(out)["protocol"]
    assert "WPCA dimension capped at" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--wpca", "5", "--n-components", "5"], "--wpca and --n-components"),
    (["--wpca", "x"], "--wpca"),
    (["--prior", "2"], "--prior"),
    (["--setting", "unrestricted"], "--setting unrestricted"),
])
def test_bad_combinations_exit_2(embeddings, argv, message, capsys):
    folder, _, _ = embeddings
    assert _verify("--data", str(folder / "emb.npz"), "--pairs", str(folder / "pairs.txt"),
                   *argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_pairs_file_needs_npz_data(embeddings, capsys):
    folder, _, _ = embeddings
    assert _verify("--pairs", str(folder / "pairs.txt")) == 2
    assert "a pairs file applies to --data PATH.npz" in capsys.readouterr().err


def test_the_trials_a_min_dcf_rests_on(embeddings, capsys):
    folder, _, _ = embeddings
    out = folder / "r.json"
    assert _verify("--data", str(folder / "emb.npz"), "--pairs", str(folder / "pairs.txt"),
                   "--methods", "baseline", "--json", str(out)) == 0
    err = capsys.readouterr().err
    assert ("minDCF(0.01) rests on 10 target and 10 non-target test pairs per experiment: one "
            "false accept moves it by 9.9, one miss by 0.1 (warning: too few") in err
    assert _report(out)["dcf_resolution"]["one_false_accept"] == pytest.approx(9.9)


def test_judged_on_both_and_training_parts_by_default_on_embeddings(embeddings):
    """On the user's .npz the lambda is judged by maxDA and minDCF against 'no learning',
    over the validation fold and five training parts (said in the header and the JSON);
    --select-on / --select-folds override it, and a bad value exits 2."""
    folder, _, _ = embeddings
    data = ["--data", str(folder / "emb.npz"), "--pairs", str(folder / "pairs.txt")]
    out = folder / "r.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few image groups in 20 training pairs: a warning
        assert _verify(*data, "--methods", "baseline,tsml-sim", "--json", str(out)) == 0
    report = _report(out)
    assert (report["select_on"], report["select_folds"]) == ("both", 5)
    assert "lambda chosen by maxDA and minDCF(0.01), never below 'no learning' on the " \
           "validation fold and 5 image-disjoint parts" in report["protocol"]
    assert _verify(*data, "--methods", "tsml-sim", "--select-on", "accuracy",
                   "--select-folds", "0", "--json", str(out)) == 0
    report = _report(out)
    assert (report["select_on"], report["select_folds"]) == ("accuracy", 0)
    assert "lambda chosen by" not in report["protocol"]
    for bad in (["--select-on", "auc"], ["--select-folds", "-1"]):
        assert _verify(*data, *bad) == 2


def test_no_wpca_by_default_on_embeddings(embeddings):
    """The vectors of the user's .npz go to the methods as they are unless --wpca N asks
    for a whitening (on the dlib LFW embeddings every WPCA cost the learned metrics)."""
    folder, _, _ = embeddings
    data = ["--data", str(folder / "emb.npz"), "--pairs", str(folder / "pairs.txt"),
            "--select-folds", "0"]
    out = folder / "r.json"
    assert _verify(*data, "--methods", "tsml-sim", "--json", str(out)) == 0
    assert "no WPCA (the default on embeddings" in _report(out)["protocol"]
    assert _verify(*data, "--methods", "tsml-sim", "--wpca", "6", "--json", str(out)) == 0
    assert "WPCA-6" in _report(out)["protocol"]
