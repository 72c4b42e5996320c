"""The experiments room: lambda chosen by scikit-learn's GridSearchCV over the validation pairs
(:class:`metricfit.pairs.ValidationSplit`) picks what an explicit loop over lambda picks."""

import numpy as np
import pytest
from conftest import digits_protocol_pairs

from metricfit.experiments import verification
from metricfit.metrics import max_decision_accuracy
from metricfit.pairs import ValidationSplit


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
    assert verification.select_lambda(name, train, val, lams, 30) == lams[int(np.argmax(accuracies))]


def test_a_method_without_lambda_selects_none(digits_data):
    assert np.isnan(verification.select_lambda("baseline", *digits_data[:2]))
