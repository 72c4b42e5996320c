"""The experiments room: lambda chosen by scikit-learn's GridSearchCV over the validation pairs
(:class:`metricfit.pairs.ValidationSplit`) picks what an explicit loop over lambda picks."""

from dataclasses import replace

import numpy as np
import pytest
from conftest import digits_protocol_pairs

from metricfit.experiments import verification
from metricfit.experiments.verification import ExperimentConfig
from metricfit.metrics import max_decision_accuracy
from metricfit.pairs import ValidationSplit
from metricfit.pairs.splits import digits_split


def test_validation_split_is_one_train_validation_split():
    cv = ValidationSplit([False, True, False, True])
    ((train, val),) = list(cv.split(np.zeros((4, 2, 3))))
    assert train.tolist() == [0, 2] and val.tolist() == [1, 3]
    assert cv.get_n_splits() == 1 and train.dtype == np.int64


@pytest.mark.parametrize("bad, message", [
    ([True, True], "not all"), ([False, False], "not all"), ([0, 1], "boolean"),
    ([[True, False]], "1-D"),
])
def test_validation_split_bad_input(bad, message):
    with pytest.raises(ValueError, match=message):
        ValidationSplit(bad)


def test_validation_split_checks_the_number_of_pairs():
    with pytest.raises(ValueError, match="3 pairs but is_validation has 2"):
        next(ValidationSplit([False, True]).split(np.zeros((3, 2, 1))))


@pytest.fixture(scope="module")
def digits_data():
    return digits_protocol_pairs(n_components=16)


@pytest.mark.parametrize("name", ["tsml-i", "csml-i"])
def test_grid_search_picks_what_a_loop_over_lambda_picks(digits_data, name):
    train, val, _ = digits_data
    lams = (1e-3, 1e-1, 10.0, 1e3)
    accuracies = [max_decision_accuracy(val[1], verification.make_method(name, lam, 30)
                                        .fit(*train).decision_function(val[0]))[0]
                  for lam in lams]
    best = lams[int(np.argmax(accuracies))]
    assert verification.select_lambda(name, train, val, lams, 30) == best


def test_a_method_without_lambda_selects_none(digits_data):
    assert np.isnan(verification.select_lambda("baseline", *digits_data[:2]))


SMALL_CNN = dict(n_components=4, n_maps=(2, 3, 8), max_epochs=1, n_jobs=1)


@pytest.fixture(scope="module")
def digits_images():
    """Digits as images (n, 8, 8) and vectors (n, 64), and one small protocol split."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    split = digits_split(digits.target, n_pairs=60, random_state=0)
    splits = [split[s] for s in ("train", "val", "test")]
    return digits.images, digits.data, splits


def test_the_image_method_gets_image_pairs_and_the_others_vectors(digits_images, monkeypatch):
    images, vectors, splits = digits_images
    seen = {}
    for name, cls in (("cnn", "SiameseCNN"), ("baseline", "CosineSimilarity")):
        module = __import__("metricfit.learners", fromlist=[cls])
        original = getattr(module, cls).fit

        def spy(self, pairs, y, *args, _name=name, _original=original, **kwargs):
            seen[_name] = (np.shape(pairs), sorted(kwargs))
            return _original(self, pairs, y, *args, **kwargs)
        monkeypatch.setattr(getattr(module, cls), "fit", spy)
    config = ExperimentConfig(methods=["cnn", "baseline"], n_components=16, cnn=SMALL_CNN)
    results = verification.run_experiment(vectors, splits, config, images=images)
    n_train = len(splits[0][1])
    assert seen["cnn"] == ((n_train, 2, 8, 8), ["validation_data"])  # early stopping on val
    assert seen["baseline"] == ((n_train, 2, 16), [])
    cnn = results[0]
    assert cnn.method == "cnn" and np.isnan(cnn.lam) and cnn.model.max_epochs == 1
    assert cnn.model.loss == "contrastive" and cnn.model.augment is True  # the recipe
    assert cnn.scores.shape == (len(splits[2][1]),) and np.isfinite(cnn.scores).all()
    threshold = max_decision_accuracy(splits[1][1], cnn.val_scores)[1]
    assert cnn.threshold == threshold  # chosen on the validation fold
    assert cnn.choice == {"best_epoch": cnn.model.best_epoch_,  # in the JSON records
                          "n_epochs": cnn.model.n_epochs_}


def test_fusion_and_selection_with_the_image_method(digits_images):
    images, vectors, splits = digits_images
    config = ExperimentConfig(methods=["cnn", "baseline", "tsml-sim"], n_components=16,
                              lams=(0.1,), max_iter=20, fusion=True,
                              selection=dict(dims=(8, 16), normalize=(False,)), cnn=SMALL_CNN)
    results = verification.run_experiment(vectors, splits, config, images=images)
    assert [r.method for r in results] == ["cnn", "baseline", "tsml-sim", "fusion"]
    assert results[0].n_components is None and results[2].n_components in (8, 16)
    fusion = results[-1]
    assert fusion.scores.shape == (len(splits[2][1]),) and np.isfinite(fusion.scores).all()
    assert fusion.model.n_estimators_ == 3 and fusion.model.estimators[0][1] is results[0].model


def test_the_image_method_needs_images_and_refuses_snorm(digits_images):
    images, vectors, splits = digits_images
    config = ExperimentConfig(methods=["cnn"], n_components=16)
    with pytest.raises(ValueError, match="cnn take image pairs: pass the images"):
        verification.run_experiment(vectors, splits, config)
    with pytest.raises(ValueError, match=r"take images \(n_images, height, width\)"):
        verification.run_experiment(vectors, splits, config, images=vectors)
    with pytest.raises(ValueError, match="snorm does not apply to the image method"):
        verification.run_experiment(vectors, splits, replace(config, snorm=10), images=images)


def test_run_folds_runs_the_experiments_asked_and_numbers_them():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(40, 6))
    pair_index = rng.integers(0, 40, size=(80, 2))
    y = np.tile([1, -1], 40)
    fold = np.repeat(np.arange(4), 20)
    config = ExperimentConfig(methods=("baseline",), n_components=4)
    out = verification.run_folds(vectors, pair_index, y, fold, config, experiments=[3, 1])
    assert len(out) == 2
    expected = verification.run_folds(vectors, pair_index, y, fold, config)
    assert out[0][0].accuracy == expected[3][0].accuracy
    assert [r["experiment"] for r in verification.as_records(out, [3, 1])] == [3, 1]
    for wrong in ([4], [-1], [0.5]):
        with pytest.raises(ValueError, match="out of range: this rotation has 4 experiments"):
            verification.run_folds(vectors, pair_index, y, fold, config, experiments=wrong)


def test_settings_as_arguments_are_deprecated_and_give_the_same_run():
    """The settings of 0.1 (methods, n_components, ... as arguments) still run, with a
    FutureWarning, the experiment that ``config=ExperimentConfig(...)`` runs."""
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(40, 6))
    pair_index = rng.integers(0, 40, size=(80, 2))
    y = np.tile([1, -1], 40)
    fold = np.repeat(np.arange(4), 20)
    config = ExperimentConfig(methods=("baseline", "wccn"), n_components=4)
    expected = verification.run_folds(vectors, pair_index, y, fold, config, experiments=[1])
    with pytest.warns(FutureWarning, match="use config=ExperimentConfig"):
        by_name = verification.run_folds(vectors, pair_index, y, fold,
                                         methods=("baseline", "wccn"), n_components=4,
                                         experiments=[1])
    with pytest.warns(FutureWarning, match="use config=ExperimentConfig"):
        by_position = verification.run_folds(vectors, pair_index, y, fold,
                                             ("baseline", "wccn"), 4, experiments=[1])
    for run in (by_name, by_position):
        assert [r.accuracy for r in run[0]] == [r.accuracy for r in expected[0]]
    with pytest.raises(TypeError, match="unexpected argument"), \
            pytest.warns(FutureWarning):
        verification.run_folds(vectors, pair_index, y, fold, method=("baseline",))
    with pytest.raises(TypeError, match="n_components given beside config"):
        verification.run_folds(vectors, pair_index, y, fold, config, n_components=3)


@pytest.mark.parametrize("name", ["labelled_folds", "unrestricted_train_pairs",
                                  "digits_split"])
def test_pair_drawing_moved_to_pairs_splits(name):
    from metricfit.pairs import splits

    with pytest.warns(FutureWarning, match=f"use metricfit.pairs.splits.{name} instead"):
        assert getattr(verification, name) is getattr(splits, name)


def test_the_registry_is_the_one_list_of_methods():
    from metricfit.experiments.methods import REGISTRY

    assert verification.METHODS == tuple(REGISTRY)
    assert verification.DEFAULT_METHODS == ("baseline", "wccn", "csml-i", "tsml-i",
                                            "tsml-wccn", "tsml-sim")
    assert verification.ALIASES == {"csml": "csml-i", "tsml": "tsml-i", "ddml": "ddml-i"}
    assert verification.IMAGE_METHODS == ("cnn",)
    no_lam = ("baseline", "wccn", "plda", "plda-lnorm", "cnn", "itml", "mmc", "sdml",
              "lmnn", "lfda", "mlkr")
    assert not any(map(verification.has_lam, no_lam))
    assert all(verification.has_lam(name) for name in verification.METHODS
               if name not in no_lam)
    for spec in REGISTRY.values():
        assert spec.similar_only is None or spec.similar_only in REGISTRY
