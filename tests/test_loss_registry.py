"""The contract of a pair loss (issue 25): every registered loss is one frozen declaration with
every field; its gradient, taken through the declaration, matches central differences; J is a
Python float; its score kind is one of the allowed; aliases resolve and unknown names raise; a
loss declared outside the package plugs into the objective factory without touching it."""

import dataclasses
import functools

import numpy as np
import pytest
from _reference import central_differences, relative_error

from metricfit import losses
from metricfit.losses import PAIR_LOSSES, LinearPath, PairLoss, get_loss, loss_params
from metricfit.losses._spec import SCORE_KINDS
from metricfit.mappings import Linear, Tanh
from metricfit.objective import has_fast_path, make_objective

NAMES = list(PAIR_LOSSES)


def pairs_of_embeddings(n=7, k=3, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(2, n, k)).astype(dtype)
    return a, b, np.where(np.arange(n) % 2, 1.0, -1.0)


@pytest.mark.parametrize("name", NAMES)
def test_every_loss_declares_every_field(name):
    loss = PAIR_LOSSES[name]
    assert isinstance(loss, PairLoss) and loss.name == name
    assert callable(loss.embedding_cost_grad) and callable(loss.pair_score)
    assert loss.score_kind in SCORE_KINDS
    assert isinstance(loss.aliases, tuple) and isinstance(loss.checks_input, bool)
    assert dict(loss.defaults) == loss_params(loss)
    if loss.linear is not None:
        assert isinstance(loss.linear, LinearPath)
        assert all(callable(f) for f in dataclasses.astuple(loss.linear))
    with pytest.raises(dataclasses.FrozenInstanceError):
        loss.name = "other"
    with pytest.raises(TypeError):
        loss.defaults["new"] = 1.0  # read-only


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("trusted", [False, True])
def test_gradient_through_the_declaration_matches_central_differences(name, trusted):
    loss = PAIR_LOSSES[name]
    cost_grad = loss.cost_grad_on(loss_params(loss), trusted=trusted)
    a, b, s = pairs_of_embeddings(seed=1)
    J, Ga, Gb = cost_grad(a, b, s)
    assert type(J) is float
    for x, G, f in [(a, Ga, lambda x: cost_grad(x, b, s)[0]),
                    (b, Gb, lambda x: cost_grad(a, x, s)[0])]:
        assert G.shape == x.shape and G.dtype == np.float64
        assert relative_error(G, central_differences(f, x)) < 1e-6


@pytest.mark.parametrize("name", NAMES)
def test_cost_is_a_python_float_in_float32_too(name):
    loss = PAIR_LOSSES[name]
    a, b, s = pairs_of_embeddings(seed=2, dtype=np.float32)
    J, Ga, Gb = loss.cost_grad_on(loss_params(loss))(a, b, s)
    assert type(J) is float and Ga.dtype == Gb.dtype == np.float32


@pytest.mark.parametrize("name", NAMES)
def test_scores_follow_the_declared_kind(name):
    loss = PAIR_LOSSES[name]
    a, b, _ = pairs_of_embeddings(n=20, seed=3)
    scores = loss.pair_score(a, b, **loss_params(loss))
    assert scores.shape == (20,)
    if loss.score_kind == "cosine":
        assert np.all(np.abs(scores) <= 1.0)
    else:  # minus a distance or an energy
        assert np.all(scores <= 0.0) and np.all(loss.pair_score(a, a) == 0.0)


def test_aliases_modules_and_declarations_resolve():
    for loss in PAIR_LOSSES.values():
        assert get_loss(loss.name) is get_loss(loss) is loss
        for alias in loss.aliases:
            assert get_loss(alias) is loss and alias not in PAIR_LOSSES
    assert get_loss("tsml") is losses.tsml.SPEC and get_loss("csml") is losses.csml.SPEC
    assert get_loss(losses.contrastive) is losses.contrastive.SPEC
    assert losses.ALIASES == {"tsml": "triangular", "csml": "cosine"}


@pytest.mark.parametrize("bad", ["hinge", "TSML", "", 3, None, np.mean, losses.ldml])
def test_unknown_names_raise(bad):
    with pytest.raises(ValueError, match="unknown loss|loss must be a name or a PairLoss"):
        get_loss(bad)


def test_a_wrong_score_kind_is_refused():
    with pytest.raises(ValueError, match="score_kind must be one of"):
        PairLoss("x", losses.tsml.embedding_cost_grad, losses.tsml.pair_score, "similarity")


@pytest.mark.parametrize("name", [n for n in NAMES if PAIR_LOSSES[n].linear is not None])
def test_the_linear_path_is_the_declared_losss(name):
    loss = PAIR_LOSSES[name]
    rng = np.random.default_rng(4)
    X1, X2 = rng.normal(size=(2, 30, 5))
    s = np.where(np.arange(30) % 3, 1.0, -1.0)
    A, A0 = rng.normal(size=(2, 2, 5))
    J1, G1 = loss.linear.cost_grad(A, X1, X2, s, lam=0.1, A0=A0)
    J2, G2 = loss.linear.objective(X1, X2, s, lam=0.1, A0=A0)(A)
    assert abs(J1 - J2) < 1e-12 and relative_error(G1, G2) < 1e-12
    assert has_fast_path(loss, Linear(5, 2)) and not has_fast_path(loss, Tanh(5, 2))


def _squared_distance_cost_grad(a, b, s, margin=1.0):
    """A loss declared outside the package: ``s |a - b|^2 + margin`` per pair, meaned."""
    diff = a - b
    d2 = np.einsum("ij,ij->i", diff, diff)
    n = a.shape[0]
    G = (2 * s / n)[:, None] * diff
    return float(np.mean(s * d2 + margin)), G, -G


def test_a_loss_declared_outside_plugs_into_the_factory():
    loss = PairLoss("squared", _squared_distance_cost_grad,
                    lambda a, b, margin=1.0: -np.sum((a - b) ** 2, axis=1),
                    score_kind="distance", defaults={"margin": 1.0})
    assert not has_fast_path(loss, Linear(4, 2))
    rng = np.random.default_rng(5)
    pairs, s = rng.normal(size=(10, 2, 4)), np.where(np.arange(10) % 2, 1.0, -1.0)
    mapping = Tanh(4, 2)
    f = make_objective(loss, mapping, pairs, s, lam=0.2, params={"margin": 3.0})
    theta = mapping.init(0)
    J, G = f(theta)
    assert relative_error(G, central_differences(lambda t: f(t)[0], theta)) < 1e-6
    with pytest.raises(ValueError, match="loss 'squared' takes no parameter"):
        make_objective(loss, mapping, pairs, s, params={"T": 1.0})
    bound = loss.cost_grad_on({"margin": 3.0})
    assert isinstance(bound, functools.partial)
