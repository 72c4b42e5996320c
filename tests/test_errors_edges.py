"""Errors that name the user's argument at the public edge: empty inputs, 2-D labels, string
or negative counts and NaN class labels are ValueErrors naming the argument; messages
suggest only parameters that exist; loaders name the file and key."""

import inspect
import re
import warnings

import numpy as np
import pytest
from estimator_registry import NAMES, POINTS, Case

from metricfit import TSML, WCCN, MkNN
from metricfit.datasets import read_npz
from metricfit.pairs import check_pair_labels, sample_pairs


@pytest.mark.parametrize("name", NAMES)
def test_calibrate_threshold_on_empty_input(name):
    case = Case(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = case.estimator().fit(*case.fit_data())
    X, y = case.pairs()
    with pytest.raises(ValueError, match="empty|0 |n_pairs >= 1"):
        est.calibrate_threshold(X[:0], y[:0])
    with pytest.raises(ValueError, match="y must be 1-D"):
        est.calibrate_threshold(X, np.column_stack([y, y]))
    with pytest.raises(ValueError, match="strategy"):
        est.calibrate_threshold(X, y, strategy="best")


@pytest.mark.parametrize("name", [n for n in NAMES if Case(n).kind != POINTS])
def test_fit_rejects_bad_labels_naming_y(name):
    case = Case(name)
    X, y = case.fit_data()
    for bad, message in ((np.column_stack([y, y]), "y must be 1-D"),
                         (np.where(y > 0, 1.0, np.nan), "y contains NaN"),
                         (y[:0], "y"),
                         (y * 2, "y: pair labels must be in")):
        with pytest.raises(ValueError, match=message):
            case.estimator().fit(X, bad)


@pytest.mark.parametrize("labels, n_similar, n_dissimilar, message", [
    ([[0, 1], [1, 0]], 2, 2, "labels must be 1-D"),
    ([], 2, 2, "labels is empty"),
    ([0.0, np.nan, 1.0, 1.0], 2, 2, "labels contains NaN"),
    (np.array([0, None, 1, 1], dtype=object), 2, 2, "labels contains None"),
    ([0, 0, 1, 1], "3", 2, "n_similar must be an integer"),
    ([0, 0, 1, 1], 2, -1, "n_dissimilar must be an integer >= 0"),
    ([0, 0, 1, 1], 2.5, 2, "n_similar must be an integer"),
    ([0, 0, 1, 1], True, 2, "n_similar must be an integer"),
])
def test_sample_pairs_checks_its_arguments(labels, n_similar, n_dissimilar, message):
    with pytest.raises(ValueError, match=message):
        sample_pairs(labels, n_similar, n_dissimilar)


@pytest.mark.parametrize("Estimator", [MkNN, WCCN])
def test_class_labels_nan_or_2d_raise(Estimator):
    X, ids = Case("MkNN").fit_data()
    with pytest.raises(ValueError, match="y contains NaN"):
        Estimator().fit(X, np.where(ids == 0, np.nan, ids.astype(float)))
    with pytest.raises(ValueError, match="y must be 1-D"):
        Estimator().fit(X, ids[:, None])
    with pytest.raises(ValueError, match="y has"):
        Estimator().fit(X, ids[:-1])


def test_pair_labels_messages_name_the_argument():
    with pytest.raises(ValueError, match="y_val must be 1-D"):
        check_pair_labels(np.ones((3, 2)), 3, what="y_val")
    with pytest.raises(ValueError, match="y is empty"):
        check_pair_labels([], 0)


def test_advice_names_only_existing_parameters():
    """TSML(init='wccn') on too few similar pairs: advice in TSML's own parameters (WCCN's
    'reg' is not one of them)."""
    rng = np.random.default_rng(0)
    pairs = rng.normal(size=(6, 2, 10))
    y = np.array([1, 1, -1, -1, -1, -1])
    with pytest.raises(ValueError) as info:
        TSML(init="wccn").fit(pairs, y)
    message = str(info.value)
    params = set(inspect.signature(TSML).parameters)
    for suggested in re.findall(r"\b([a-z_]+)\s*(?:=|>|<)", message):
        assert suggested in params, (suggested, message)
    assert "reg" not in re.findall(r"\b[a-z_]+\b", message)


def test_read_npz_names_the_file_and_key(tmp_path):
    text = tmp_path / "notes.npz"
    text.write_text("hello")
    with pytest.raises(ValueError, match=re.escape(str(text))):
        read_npz(text)
    single = tmp_path / "single.npz"
    with open(single, "wb") as f:
        np.save(f, np.zeros(3))
    with pytest.raises(ValueError, match="single .npy array"):
        read_npz(single)
    good = tmp_path / "good.npz"
    np.savez(good, images=np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"good.npz: key 'labels' not found.*\['images'\]"):
        read_npz(good, ["images", "labels"])
    objects = tmp_path / "objects.npz"
    np.savez(objects, names=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match=r"objects.npz, key 'names'"):
        read_npz(objects)
