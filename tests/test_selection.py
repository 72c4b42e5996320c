"""Issue 15's selection on the validation fold: WPCA dimension (the leading coordinates of one
WPCA), L2 normalisation after it and lambda, through GridSearchCV. It picks what an explicit
loop picks, and it never reads the test fold (poisoned test labels and test images leave every
choice unchanged)."""

import json

import numpy as np
import pytest
from conftest import digits_protocol_pairs

from metricfit.cli import main
from metricfit.experiments import verification
from metricfit.experiments.selection import _edge_lams
from metricfit.experiments.verification import ExperimentConfig, LeadingComponents
from metricfit.metrics import max_decision_accuracy
from metricfit.pairs import FoldRotation
from metricfit.pairs.splits import labelled_folds
from metricfit.whitening import WPCA

# -- one WPCA at the largest dimension serves every smaller one ----------------------------

@pytest.mark.parametrize("n, d", [(400, 50), (60, 200)])  # covariance and Gram paths
def test_leading_components_of_a_large_wpca_are_the_small_wpca(n, d):
    X = np.random.RandomState(0).randn(n, d) @ np.diag(np.linspace(3, 0.5, d))
    big = WPCA(n_components=30).fit(X)
    for k in (5, 10, 30):
        small = WPCA(n_components=k).fit(X)
        np.testing.assert_allclose(big.components_[:k], small.components_, rtol=1e-7,
                                   atol=1e-10)
        np.testing.assert_allclose(LeadingComponents(k).fit_transform(big.transform(X)),
                                   small.transform(X), rtol=1e-7, atol=1e-9)


def test_leading_components_slices_and_normalises_points_and_pairs():
    X = np.arange(1.0, 25.0).reshape(2, 2, 6)
    Z = LeadingComponents(3, normalize=True).fit(X).transform(X)
    expected = X[..., :3] / np.linalg.norm(X[..., :3], axis=-1, keepdims=True)
    np.testing.assert_allclose(Z, expected)
    np.testing.assert_array_equal(LeadingComponents(2).fit(X[0]).transform(X[0]), X[0, :, :2])
    np.testing.assert_array_equal(LeadingComponents().fit(X).transform(X), X)


@pytest.mark.parametrize("fit, transform, message", [
    (np.ones((3, 2, 4)), None, r"n_components=5 must be in \[1, n_features=4\]"),
    (np.ones((3, 2, 6)), np.ones((3, 2, 4)), "features"),
    (np.ones((3, 2, 6)), np.r_[np.ones((1, 2, 6)), np.zeros((1, 2, 6))], "zero vector"),
])
def test_leading_components_bad_input(fit, transform, message):
    step = LeadingComponents(5, normalize=True)
    with pytest.raises(ValueError, match=message):
        step.fit(fit).transform(fit if transform is None else transform)


def test_leading_components_before_fit():
    with pytest.raises(ValueError, match="not fitted"):
        LeadingComponents(2).transform(np.ones((3, 2, 4)))


# -- the selection equals an explicit loop -----------------------------------------------

@pytest.fixture(scope="module")
def digits_data():
    return digits_protocol_pairs(n_components=24)


def _explicit_loop(name, train, val, lams, dims, max_iter):
    """The same choice by hand: every (dimension, normalisation, lambda) fitted on train and
    scored by maxDA on val, first best kept (dimension outermost, lambda innermost); then one
    decade beyond the grid's edge at the chosen dimension and normalisation, kept only if
    strictly better."""
    def score(k, norm, lam):
        Xt, Xv = (LeadingComponents(k, norm).fit(train[0]).transform(p)
                  for p in (train[0], val[0]))
        method = verification.make_method(name, lam, max_iter).fit(Xt, train[1])
        return max_decision_accuracy(val[1], method.decision_function(Xv))[0]

    best, best_score = None, -np.inf
    for k in dims:
        for norm in (False, True):
            for lam in lams:
                s = score(k, norm, lam)
                if s > best_score:
                    best, best_score = (k, norm, lam), s
    k, norm, lam = best
    beyond = lam * 10 if lam == max(lams) else lam / 10 if lam == min(lams) else None
    if beyond is not None:
        s = score(k, norm, beyond)
        if s > best_score:
            best, best_score = (k, norm, beyond), s
    return best, best_score


@pytest.mark.parametrize("name, lams", [("tsml-sim", (1e-3, 1e-1, 10.0)),
                                        ("csml-i", (1e-2, 1.0)),
                                        ("tsml-lda", (1e-1, 1e1))])
def test_selection_equals_an_explicit_loop(digits_data, name, lams):
    train, val, _ = digits_data
    dims = (8, 16, 24)
    chosen = verification.select(name, train, val, lams, dims, max_iter=30)
    (k, norm, lam), score = _explicit_loop(name, train, val, lams, dims, 30)
    assert (chosen.n_components, chosen.normalize, chosen.lam) == (k, norm, lam)
    assert chosen.val_score == score


def test_selection_of_a_method_without_lambda(digits_data):
    train, val, _ = digits_data
    chosen = verification.select("wccn", train, val, dims=(8, 24))
    assert np.isnan(chosen.lam) and chosen.n_components in (8, 24)


@pytest.mark.parametrize("lam, lams, expected", [
    (1.0, (1e-2, 1e-1, 1.0), [10.0]), (1e-2, (1e-2, 1e-1, 1.0), [1e-3]),
    (1e-1, (1e-2, 1e-1, 1.0), []), (1.0, (1.0,), []), (0.0, (0.0, 1.0), []),
])
def test_edge_lambdas(lam, lams, expected):
    np.testing.assert_allclose(_edge_lams(lam, lams), expected)


# -- the test fold is never read ---------------------------------------------------------

def _synthetic_identities(n_identities=36, per_identity=6, d=40, seed=0):
    rng = np.random.RandomState(seed)
    centres = rng.randn(n_identities, d)
    labels = np.repeat(np.arange(n_identities), per_identity)
    vectors = centres[labels] + 1.5 * rng.randn(labels.size, d) + 3.0
    return vectors, labels


def _choices(experiments):
    return [[(r.method, r.lam, r.n_components, r.normalize) for r in results]
            for results in experiments]


def test_poisoned_test_fold_changes_no_choice():
    vectors, labels = _synthetic_identities()
    pairs, y, pair_fold, image_fold = labelled_folds(labels)
    methods = ("baseline", "wccn", "tsml-sim", "csml-wccn", "plda")
    config = ExperimentConfig(methods=methods, lams=(1e-2, 1.0), max_iter=20,
                              selection=dict(dims=(5, 10, 20)))
    clean = verification.run_folds(vectors, pairs, y, pair_fold, config, experiments=[0, 3])

    rotation = FoldRotation(pair_fold, n_train_folds=np.unique(pair_fold).size - 2)
    rotation_tests = {e: rotation.rotation(e)[2] for e in (0, 3)}
    for e, test_fold in rotation_tests.items():
        poisoned_y = y.copy()
        in_test = pair_fold == test_fold
        poisoned_y[in_test] = -poisoned_y[in_test]  # every test label flipped
        poisoned_x = vectors.copy()
        test_images = np.unique(pairs[in_test])
        assert not np.isin(test_images, pairs[~in_test]).any()
        poisoned_x[test_images] = 1e3 * np.random.RandomState(1).randn(test_images.size,
                                                                       vectors.shape[1])
        dirty = verification.run_folds(poisoned_x, pairs, poisoned_y, pair_fold, config,
                                       experiments=[e])
        assert _choices(dirty) == _choices([clean[list(rotation_tests).index(e)]])
        # the thresholds are chosen on validation too; the test accuracy did change
        assert [r.threshold for r in dirty[0]] == \
            [r.threshold for r in clean[list(rotation_tests).index(e)]]
        assert [r.accuracy for r in dirty[0]] != \
            [r.accuracy for r in clean[list(rotation_tests).index(e)]]


def test_selection_needs_no_test_fold_argument():
    import inspect

    assert "test" not in inspect.signature(verification.select).parameters


# -- the command line ----------------------------------------------------------------------

def test_cli_select_records_the_chosen_settings(tmp_path, capsys):
    out = tmp_path / "sel.json"
    assert main(["verify", "--quiet", "--repeats", "2", "--select", "--dims", "8,16",
                 "--lams", "0.01,1", "--methods", "wccn,tsml-sim,plda",
                 "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["selection"]["dims"] == [8, 16]
    assert len(record["results"]) == 6
    for r in record["results"]:
        assert r["n_components"] in (8, 16) and r["normalize"] in (True, False)
        assert (r["lam"] is None) == (r["method"] != "tsml-sim")
    assert "chosen on validation" in capsys.readouterr().out


def test_cli_without_select_records_no_choice(tmp_path):
    out = tmp_path / "plain.json"
    assert main(["verify", "--quiet", "--repeats", "1", "--methods", "wccn,tsml-sim",
                 "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["selection"] is None
    assert all(r["n_components"] is None for r in record["results"])


@pytest.mark.parametrize("argv, message", [
    (["--select", "--n-components", "10"], "exclude each other"),
    (["--select", "--dims", "8,x"], "--dims"),
    (["--select", "--dims", "0"], "--dims"),
])
def test_cli_select_errors(argv, message, capsys):
    assert main(["verify", "--quiet", *argv]) == 2
    assert message in capsys.readouterr().err


# -- the fusion's own choices, on the validation fold only --------------------------------

@pytest.fixture
def small_fusion_grid(monkeypatch):
    monkeypatch.setattr(verification, "FUSION_COLUMNS", (1, 2, None))
    monkeypatch.setattr(verification, "FUSION_CS", (1e-2, 1.0))


def _score_columns(n_columns=6, n_informative=2, n_experiments=2, seed=0):
    """{(source, method): experiments} of saved scores: the first columns carry the label,
    the others are noise."""
    rng = np.random.RandomState(seed)
    columns = {}
    ys = [(np.repeat([1, -1], 150), np.repeat([1, -1], 150)) for _ in range(n_experiments)]
    for j in range(n_columns):
        cells = []
        for val_y, y in ys:
            signal = 1.0 if j < n_informative else 0.0
            cells.append({"val_scores": signal * val_y + rng.randn(300), "val_y": val_y,
                          "scores": signal * y + rng.randn(300), "y": y})
        columns[("src", f"m{j}")] = cells
    return columns


def test_top_columns_ranks_by_maxda():
    y = np.repeat([1, -1], 50)
    rng = np.random.RandomState(0)
    Z = np.column_stack([rng.randn(100), y + 0.1 * rng.randn(100), y + rng.randn(100)])
    step = verification.TopColumns(2).fit(Z, y)
    assert step.columns_.tolist() == [1, 2]
    np.testing.assert_array_equal(step.transform(Z), Z[:, [1, 2]])
    assert verification.TopColumns().fit(Z, y).columns_.size == 3
    with pytest.raises(ValueError, match="one label per pair"):
        verification.TopColumns().fit(Z, y[:5])


def test_selected_fusion_records_its_choice_and_ignores_the_test_fold(small_fusion_grid):
    columns = _score_columns()
    clean = verification.fuse_saved(columns, select=True)
    for (result,) in clean:
        assert set(result.choice) == {"classifier", "C", "n_columns", "columns", "cv_maxda"}
        assert result.choice["classifier"] in ("svm", "logistic")
        assert result.accuracy > 0.75  # the two informative columns carry it
    poisoned = {key: [dict(c, scores=-c["scores"] + 5 * np.random.RandomState(1).randn(300),
                           y=-c["y"]) for c in cells] for key, cells in columns.items()}
    dirty = verification.fuse_saved(poisoned, select=True)
    assert [r.choice for (r,) in dirty] == [r.choice for (r,) in clean]
    assert [r.threshold for (r,) in dirty] == [r.threshold for (r,) in clean]


def test_selected_fusion_search_equals_its_grid_by_hand(small_fusion_grid):
    """The chosen (columns, classifier, C) has the best 5-fold CV maxDA of the grid."""
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    columns = _score_columns(n_columns=4, n_experiments=1)
    (cell,) = [cells[0] for cells in columns.values()][:1]
    Z = np.column_stack([cells[0]["val_scores"] for cells in columns.values()])
    y = cell["val_y"]
    search = verification.fusion_search().fit(Z, y)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    scores = [cross_val_score(clone(search.estimator).set_params(**params), Z, y, cv=cv,
                              scoring=verification.maxda_scorer).mean()
              for params in search.cv_results_["params"]]
    assert search.best_score_ == pytest.approx(max(scores))
    assert search.best_index_ == int(np.argmax(scores))


def test_cli_fuse_select(tmp_path, capsys, small_fusion_grid):
    path = tmp_path / "s.npz"
    arrays = {f"{src}/{m}/{e}/{k}": v for (src, m), cells in _score_columns().items()
              for e, c in enumerate(cells) for k, v in c.items()}
    np.savez(path, **arrays)
    out = tmp_path / "f.json"
    assert main(["fuse", str(path), "--select", "--json", str(out)]) == 0
    assert "chosen by 5-fold CV" in capsys.readouterr().out
    record = json.loads(out.read_text())
    fusion = [r for r in record["results"] if r["method"] == "fusion"]
    assert len(fusion) == 2 and all(r["choice"]["columns"] for r in fusion)


def test_cli_fuse_keeps_columns_of_two_files_with_one_source(tmp_path, capsys):
    """Two runs of one descriptor (e.g. other LBP cells) give the same SOURCE/METHOD keys: the
    second file's columns are renamed SOURCE@STEM, not silently dropped."""
    cells = _score_columns(n_columns=2, n_experiments=1)
    paths = []
    for stem in ("a", "b"):
        paths.append(tmp_path / f"{stem}.npz")
        np.savez(paths[-1], **{f"{src}/{m}/{e}/{k}": v for (src, m), cs in cells.items()
                               for e, c in enumerate(cs) for k, v in c.items()})
    out = tmp_path / "f.json"
    assert main(["fuse", *map(str, paths), "--json", str(out)]) == 0
    methods = {r["method"] for r in json.loads(out.read_text())["results"]}
    assert methods == {"src:m0", "src:m1", "src@b:m0", "src@b:m1", "fusion"}


# -- a descriptor variant chosen on validation (issue 15: several --lbp-block / --lbp-radius) --

def _result(method, val_acc_pairs, test_scores):
    """A Result whose validation scores separate the first ``val_acc_pairs`` of 10 pairs."""
    val_y = np.array([1] * 5 + [-1] * 5)
    val_scores = np.where(np.arange(10) < val_acc_pairs, val_y, -val_y).astype(float)
    y = np.array([1, -1])
    return verification.Result(method=method, accuracy=float(np.mean(np.sign(test_scores) == y)),
                               maxda=np.nan, eer=np.nan, lam=np.nan, threshold=0.0,
                               scores=np.asarray(test_scores, float), y=y,
                               val_scores=val_scores, val_y=val_y)


def test_choose_variant_takes_the_best_validation_accuracy_not_the_best_test():
    # variant 'a' is perfect on test but worse on validation in experiment 0: 'b' is taken
    runs = {"a": [[_result("m", 6, [1, -1]), _result("n", 10, [1, -1])]],
            "b": [[_result("m", 10, [-1, 1]), _result("n", 10, [-1, 1])]]}
    chosen = verification.choose_variant(runs)
    assert [r.descriptor for r in chosen[0]] == ["b", "a"]  # 'n': a tie, the first wins
    assert [r.accuracy for r in chosen[0]] == [0.0, 1.0]
    assert verification.summarise(chosen)[0]["descriptors"] == ["b"]
    # poisoning every test score and label leaves the choice unchanged
    for runs_ in runs.values():
        for r in runs_[0]:
            r.scores, r.y = -r.scores, -r.y
    assert [r.descriptor for r in verification.choose_variant(runs)[0]] == ["b", "a"]
    assert runs["a"][0][0].descriptor is None  # the inputs are not modified


def test_choose_variant_errors():
    with pytest.raises(ValueError, match="at least one variant"):
        verification.choose_variant({})
    with pytest.raises(ValueError, match="same experiments and methods"):
        verification.choose_variant({"a": [[_result("m", 5, [1, -1])]],
                                     "b": [[_result("n", 5, [1, -1])]]})
    no_val = _result("m", 5, [1, -1])
    no_val.val_scores = None
    with pytest.raises(ValueError, match="no validation scores"):
        verification.choose_variant({"a": [[no_val]]})


def test_cli_lbp_variants_chosen_on_validation(tmp_path, capsys):
    out = tmp_path / "variants.json"
    assert main(["verify", "--quiet", "--repeats", "2", "--select", "--dims", "8,16",
                 "--lams", "0.1", "--max-iter", "30", "--features", "sqrt-lbp",
                 "--lbp-block", "3,4", "--lbp-radius", "1,1+2", "--methods", "wccn,tsml-sim",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    labels = ["3x3 r1", "3x3 r1+2", "4x4 r1", "4x4 r1+2"]
    for label in labels:
        assert f"variant {label}:" in text
    assert "chosen on validation per method and experiment from " + ", ".join(labels) in text
    record = json.loads(out.read_text())
    assert list(record["variants"]) == labels
    for r in record["results"]:
        variant = record["variants"][r["descriptor"]]["results"]
        same = [v for v in variant if v["method"] == r["method"]
                and v["experiment"] == r["experiment"]]
        assert len(same) == 1 and {**same[0], "descriptor": r["descriptor"]} == r
    # the chosen variant has the best validation accuracy (the first one on a tie)
    for r in record["results"]:
        val = [next(v["val_maxda"] for v in record["variants"][label]["results"]
                    if v["method"] == r["method"] and v["experiment"] == r["experiment"])
               for label in labels]
        assert r["descriptor"] == labels[int(np.argmax(val))] and 0.5 <= r["val_maxda"] <= 1
    assert record["summary"][0]["descriptors"] == [r["descriptor"] for r in record["results"]
                                                   if r["method"] == "wccn"]


def test_cli_one_lbp_variant_records_no_choice(tmp_path, capsys):
    out = tmp_path / "one.json"
    assert main(["verify", "--quiet", "--repeats", "1", "--lams", "0.1", "--features", "lbp",
                 "--lbp-block", "4", "--lbp-radius", "2", "--methods", "wccn",
                 "--json", str(out)]) == 0
    assert "LBP 4x4 r2" in capsys.readouterr().out
    record = json.loads(out.read_text())
    assert "variants" not in record and record["results"][0]["descriptor"] is None


@pytest.mark.parametrize("argv, message", [
    (["--lbp-block", "4,4"], "argument --lbp-block: repeated cell side"),
    (["--lbp-block", "4,x"], "argument --lbp-block: expected a positive integer"),
    (["--lbp-block", "3,1"], "--lbp-block: the LBP cell side must be >= 2 pixels, got 1"),
    (["--lbp-radius", "0"], "argument --lbp-radius: expected comma-separated radii > 0"),
    (["--lbp-radius", "1+1"], "argument --lbp-radius: expected comma-separated radii > 0"),
    (["--lbp-radius", "1,,2"], "argument --lbp-radius: expected comma-separated radii > 0"),
    (["--lbp-radius", "x"], "argument --lbp-radius: expected comma-separated radii > 0"),
    (["--lbp-radius", "2,2.0"], "argument --lbp-radius: repeated radius setting"),
    (["--lbp-block", "3,4", "--fusion", "--methods", "wccn,baseline"],
     "--fusion and --snorm take one LBP setting"),
    (["--lbp-radius", "1,2", "--snorm", "5"], "--fusion and --snorm take one LBP setting"),
])
def test_cli_lbp_variant_errors(argv, message, capsys):
    assert main(["verify", "--quiet", "--features", "lbp", *argv]) == 2
    assert message in capsys.readouterr().err
