"""The objective factory: every pair loss through every mapping (convnet included) against
central differences; every fast path equal to the generic composition to 1e-10; index pairs
equal to vector pairs; the objectives trust data validated at the estimator's edge."""

import numpy as np
import pytest
from _reference import central_differences, relative_error

import metricfit.losses._linear as linear_module
import metricfit.mappings.objective as mapped_module
import metricfit.pairs.index as index_module
from metricfit.losses import PAIR_LOSSES
from metricfit.mappings import MLP, ConvNet, Linear, Tanh
from metricfit.objective import has_fast_path, make_objective
from metricfit.pairs.index import IndexPairs

FAST = ["triangular", "cosine", "ddml"]


def mappings(d):
    side = int(np.sqrt(d))
    return {"linear": Linear(d, 3), "tanh": Tanh(d, 3), "mlp": MLP(d, 4, 3),
            "convnet": ConvNet((side, side), n_components=3, n_maps=(2, 3, 4))}


def problem(n=6, d=36, seed=0, n_points=None):
    rng = np.random.default_rng(seed)
    s = np.where(np.arange(n) % 2, 1.0, -1.0)
    if n_points is None:
        return rng.normal(size=(n, 2, d)), s
    points = rng.normal(size=(n_points, d))
    index = np.stack([rng.integers(0, n_points, n), rng.integers(0, n_points, n)], axis=1)
    return IndexPairs(points, index), s


def numerical(f, theta):
    """Central differences of the cost of ``f(theta) -> (J, G)``."""
    return central_differences(lambda t: f(t)[0], theta)


@pytest.mark.parametrize("loss", PAIR_LOSSES)
@pytest.mark.parametrize("kind", ["linear", "tanh", "mlp", "convnet"])
def test_every_loss_through_every_mapping_matches_central_differences(loss, kind):
    pairs, s = problem(seed=1)
    mapping = mappings(36)[kind]
    rng = np.random.default_rng(2)
    theta = mapping.init(rng) + 0.1 * rng.normal(size=mapping.n_params)
    theta0 = 0.05 * rng.normal(size=mapping.n_params)
    f = make_objective(loss, mapping, pairs, s, lam=0.3, theta0=theta0)
    J, G = f(theta)
    assert np.isfinite(J) and G.shape == theta.shape and G.dtype == np.float64
    assert relative_error(G, numerical(f, theta)) < 1e-6


@pytest.mark.parametrize("loss", FAST)
@pytest.mark.parametrize("index", [False, True])
def test_fast_path_equals_generic_composition(loss, index):
    pairs, s = problem(n=40, d=9, seed=3, n_points=25 if index else None)
    mapping = Linear(9, 4)
    assert has_fast_path(loss, mapping)
    rng = np.random.default_rng(4)
    theta, theta0 = rng.normal(size=mapping.n_params), rng.normal(size=mapping.n_params)
    fast = make_objective(loss, mapping, pairs, s, lam=0.2, theta0=theta0)
    generic = make_objective(loss, mapping, pairs, s, lam=0.2, theta0=theta0, fast=False)
    assert type(fast) is not type(generic)
    (J1, G1), (J2, G2) = fast(theta), generic(theta)
    assert abs(J1 - J2) <= 1e-10 * max(1.0, abs(J2))
    assert relative_error(G1, G2) < 1e-10
    rows = np.arange(0, 40, 3)
    (J1, G1), (J2, G2) = fast.batch(theta, rows), generic.batch(theta, rows)
    assert abs(J1 - J2) <= 1e-10 * max(1.0, abs(J2)) and relative_error(G1, G2) < 1e-10


@pytest.mark.parametrize("loss", ["contrastive", "square_exponential", "triangular"])
@pytest.mark.parametrize("kind", ["mlp", "convnet"])
def test_index_pairs_equal_vector_pairs(loss, kind):
    index_pairs, s = problem(n=20, d=36, seed=5, n_points=12)
    vectors = index_pairs.points[index_pairs.index]
    mapping = mappings(36)[kind]
    theta = mapping.init(0)
    J1, G1 = make_objective(loss, mapping, index_pairs, s, lam=0.1)(theta)
    J2, G2 = make_objective(loss, mapping, vectors, s, lam=0.1)(theta)
    assert abs(J1 - J2) <= 1e-10 * max(1.0, abs(J2)) and relative_error(G1, G2) < 1e-10


def test_objectives_do_not_validate_again(monkeypatch):
    """Every check the objectives used to run raises if called: none is."""
    def refuse(*args, **kwargs):
        raise AssertionError("validated again")

    for module, name in [(linear_module, "check_pair_labels"), (mapped_module, "_check_pairs"),
                         (index_module, "check_point_store"), (index_module, "check_index_pairs"),
                         (index_module, "check_pair_labels")]:
        monkeypatch.setattr(module, name, refuse)
    for n_points in (None, 10):
        pairs, s = problem(n=8, d=36, n_points=n_points)
        for loss in ("triangular", "ddml", "contrastive"):
            for mapping in (Linear(36, 3), Tanh(36, 3)):
                J, G = make_objective(loss, mapping, pairs, s, lam=0.1)(mapping.init(0))
                assert np.isfinite(J)


def test_unknown_names_and_parameters():
    pairs, s = problem()
    with pytest.raises(ValueError, match="unknown loss 'hinge'; choose from triangular"):
        make_objective("hinge", Linear(36, 3), pairs, s)
    with pytest.raises(ValueError, match="takes no parameter.*margin"):
        make_objective("triangular", Linear(36, 3), pairs, s, params={"margin": 1.0})


@pytest.mark.parametrize("loss", ["square_exponential", "contrastive", "triangular"])
def test_convnet_fast_path_equals_generic_composition(loss):
    pairs, s = problem(n=10, d=36, seed=6)
    mapping = mappings(36)["convnet"]
    theta, theta0 = mapping.init(1), 0.1 * np.random.default_rng(0).normal(size=mapping.n_params)
    fast = make_objective(loss, mapping, pairs, s, lam=0.3, theta0=theta0)
    generic = make_objective(loss, mapping, pairs, s, lam=0.3, theta0=theta0, fast=False)
    assert type(fast) is not type(generic)
    rows = np.arange(4)
    for (J1, G1), (J2, G2) in [(fast(theta), generic(theta)),
                               (fast.batch(theta, rows), generic.batch(theta, rows))]:
        assert abs(J1 - J2) <= 1e-10 * max(1.0, abs(J2)) and relative_error(G1, G2) < 1e-10


def test_untrusted_data_are_validated(monkeypatch):
    """``trusted=False`` (explicit) scans the data again: the checks are called."""
    calls = []

    def record(*args, **kwargs):
        calls.append(args)
        raise AssertionError("validated")

    monkeypatch.setattr(linear_module, "check_pair_labels", record)
    monkeypatch.setattr(mapped_module, "_check_pairs", record)
    pairs, s = problem(n=8, d=36)
    for loss, mapping in [("triangular", Linear(36, 3)), ("contrastive", Tanh(36, 3))]:
        with pytest.raises(AssertionError, match="validated"):
            make_objective(loss, mapping, pairs, s, trusted=False)
    assert len(calls) == 2


@pytest.mark.parametrize("loss", ["contrastive", "square_square", "square_exponential"])
@pytest.mark.parametrize("kind", ["mlp", "convnet"])
def test_avg_non_zero_reducer_through_a_mapping_matches_central_differences(loss, kind):
    pairs, s = problem(seed=7)
    mapping = mappings(36)[kind]
    theta = mapping.init(0)
    params = {"reducer": "avg_non_zero"}
    f = make_objective(loss, mapping, pairs, s, lam=0.1, params=params)
    J, G = f(theta)
    assert relative_error(G, numerical(f, theta)) < 1e-6
    mean = make_objective(loss, mapping, pairs, s, lam=0.1)(theta)[0]
    assert J >= mean - 1e-12  # the same sum over no more pairs
