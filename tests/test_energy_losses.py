"""Pair losses on embeddings (the grid's rows): central differences in float64 for every loss,
both labels, several (n, k) and hyper-parameters; the moved seed 000 losses unchanged; the
registry's errors."""

import numpy as np
import pytest

from metricfit.cnn import loss as cnn_loss
from metricfit.losses import (PAIR_LOSSES, contrastive, get_loss, loss_params,
                              signature_cosine, square_exponential, square_square)
from metricfit.losses._energy import energy
from _reference import central_differences as numerical
from _reference import relative_error

SHAPES = [(7, 3), (5, 1), (4, 6)]  # (n, k)
LABELS = ["similar", "dissimilar", "mixed"]
PARAMS = {
    "triangular": [{}],
    "cosine": [{}],
    "ddml": [{}, {"T": 3.0, "tau": 0.5}],
    "contrastive": [{}, {"margin": 3.0, "energy": "l1"}, {"margin": 2.5}],
    "square_square": [{}, {"margin": 3.0, "energy": "l1"}, {"margin": 2.5}],
    "square_exponential": [{}, {"Q": 4.0, "energy": "l2"}],
    "signature_cosine": [{}, {"impostor_target": -1.0}, {"impostor_target": -0.9}],
}
CASES = [(name, p) for name, ps in PARAMS.items() for p in ps]


def make(n, k, labels, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, k)), rng.normal(size=(n, k))
    s = {"similar": np.ones(n), "dissimilar": -np.ones(n),
         "mixed": np.where(np.arange(n) % 2, 1.0, -1.0)}[labels]
    return a, b, s


@pytest.mark.parametrize("name, params", CASES)
@pytest.mark.parametrize("n, k", SHAPES)
@pytest.mark.parametrize("labels", LABELS)
def test_embedding_gradient_matches_central_differences(name, params, n, k, labels):
    loss = PAIR_LOSSES[name]
    a, b, s = make(n, k, labels)
    J, Ga, Gb = loss.embedding_cost_grad(a, b, s, **params)
    assert np.isfinite(J) and Ga.shape == a.shape and Gb.shape == b.shape
    assert Ga.dtype == Gb.dtype == np.float64
    num_a = numerical(lambda x: loss.embedding_cost_grad(x, b, s, **params)[0], a)
    num_b = numerical(lambda x: loss.embedding_cost_grad(a, x, s, **params)[0], b)
    assert relative_error(np.r_[Ga.ravel(), Gb.ravel()], np.r_[num_a.ravel(), num_b.ravel()]) < 1e-6


@pytest.mark.parametrize("name, params", CASES)
def test_float32_kept_and_close(name, params):
    loss = PAIR_LOSSES[name]
    a, b, s = make(6, 4, "mixed", seed=3)
    J64, Ga64, _ = loss.embedding_cost_grad(a, b, s, **params)
    J32, Ga32, Gb32 = loss.embedding_cost_grad(a.astype(np.float32), b.astype(np.float32), s,
                                               **params)
    assert Ga32.dtype == Gb32.dtype == np.float32
    np.testing.assert_allclose(J32, J64, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(Ga32, Ga64, rtol=1e-3, atol=1e-5)


def energy_reference(a, b, kind):
    d = a - b
    return np.abs(d).sum(1) if kind == "l1" else np.sqrt((d * d).sum(1))


@pytest.mark.parametrize("kind", ["l1", "l2"])
def test_energy_losses_match_their_formulas(kind):
    a, b, s = make(8, 3, "mixed", seed=5)
    E = energy_reference(a, b, kind)
    Y = (1 - s) / 2
    m, Q = 2.0, 5.0
    want = {
        contrastive: np.mean((1 - Y) * E**2 / 2 + Y * np.maximum(0, m - E) ** 2 / 2),
        square_square: np.mean((1 - Y) * E**2 + Y * np.maximum(0, m - E) ** 2),
    }
    for module, value in want.items():
        np.testing.assert_allclose(module.embedding_cost_grad(a, b, s, margin=m, energy=kind)[0],
                                   value, rtol=1e-12)
    eq8 = np.mean((1 - Y) * 2 / Q * E**2 + Y * 2 * Q * np.exp(-2.77 * E / Q))
    np.testing.assert_allclose(square_exponential.embedding_cost_grad(a, b, s, Q=Q,
                                                                      energy=kind)[0], eq8)
    np.testing.assert_allclose(energy(a, b, kind)[0], E, rtol=1e-12)


def test_square_exponential_default_bound_is_seed_000s():
    a, b, s = make(5, 4, "mixed")
    np.testing.assert_allclose(square_exponential.embedding_cost_grad(a, b, s)[0],
                               square_exponential.embedding_cost_grad(a, b, s, Q=8.0)[0])


def test_signature_cosine_formula_and_zero_vectors():
    a, b, s = make(6, 3, "mixed", seed=2)
    c = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    t = np.where(s > 0, 1.0, -0.9)
    J = signature_cosine.embedding_cost_grad(a, b, s, impostor_target=-0.9)[0]
    np.testing.assert_allclose(J, np.mean(0.5 * (c - t) ** 2), rtol=1e-12)
    a[0] = 0.0
    J, Ga, Gb = signature_cosine.embedding_cost_grad(a, b, s)
    assert np.isfinite(J) and np.all(Ga[0] == 0) and np.all(Gb[0] == 0)
    np.testing.assert_allclose(signature_cosine.pair_score(a, b)[1:], c[1:])


def test_seed_000_losses_moved_unchanged():
    """cnn.loss is a re-export: eq. 8 and contrastive with the convnet's defaults."""
    a, b, s = make(9, 5, "mixed", seed=7)
    Q = cnn_loss.energy_bound(5, "l1")
    J, Ga, Gb = cnn_loss.embedding_cost_grad(a, b, s)
    J2, Ga2, _ = square_exponential.embedding_cost_grad(a, b, s, Q=Q, energy="l1")
    np.testing.assert_array_equal(Ga, Ga2)
    assert J == J2
    J, Ga, _ = cnn_loss.embedding_cost_grad(a, b, s, loss="contrastive", kind="l2")
    J2, Ga2, _ = contrastive.embedding_cost_grad(a, b, s, margin=cnn_loss.energy_bound(5, "l2") / 4)
    np.testing.assert_array_equal(Ga, Ga2)
    with pytest.raises(ValueError, match="loss must be one of"):
        cnn_loss.embedding_cost_grad(a, b, s, loss="nope")


def test_registry_names_and_errors():
    assert get_loss("tsml") is PAIR_LOSSES["triangular"] and get_loss(contrastive) is contrastive
    with pytest.raises(ValueError, match="choose from triangular, cosine, ddml, contrastive"):
        get_loss("hinge")
    with pytest.raises(ValueError, match="loss must be a name or a loss module"):
        get_loss(3)
    assert loss_params(contrastive, {"margin": 2}) == {"margin": 2, "energy": "l2"}
    with pytest.raises(ValueError, match="takes no parameter.*it takes: margin, energy"):
        loss_params(contrastive, {"T": 1})
    a, b, s = make(3, 2, "mixed")
    for module in (contrastive, square_square, square_exponential):
        with pytest.raises(ValueError, match="energy must be one of"):
            module.embedding_cost_grad(a, b, s, energy="l3")


@pytest.mark.parametrize("name", PAIR_LOSSES)
def test_pair_scores_rank_similar_pairs_higher(name):
    loss = PAIR_LOSSES[name]
    rng = np.random.default_rng(0)
    a = rng.normal(size=(50, 4))
    close, far = a + 0.01 * rng.normal(size=a.shape), rng.normal(size=a.shape)
    assert np.all(loss.pair_score(a, close) > loss.pair_score(a, far))
