"""Pair losses on embeddings (the grid's rows): central differences in float64 for every loss,
both labels, several (n, k) and hyper-parameters (both reducers of the energy losses); the
seed 000 losses of the convnet unchanged; distances and reducers; the registry's errors."""

import numpy as np
import pytest
from _reference import central_differences as numerical
from _reference import relative_error

import metricfit.cnn
from metricfit.cnn.objective import _seed_000_loss
from metricfit.losses import (
    PAIR_LOSSES,
    contrastive,
    get_loss,
    loss_params,
    signature_cosine,
    square_exponential,
    square_square,
)
from metricfit.losses._energy import energy, impostor
from metricfit.losses.distances import L1Energy, L2Energy, energy_bound, get_distance
from metricfit.losses.reducers import AvgNonZeroReducer, get_reducer

SHAPES = [(7, 3), (5, 1), (4, 6)]  # (n, k)
LABELS = ["similar", "dissimilar", "mixed"]
PARAMS = {
    "triangular": [{}],
    "cosine": [{}],
    "ddml": [{}, {"T": 3.0, "tau": 0.5}],
    "contrastive": [{}, {"margin": 3.0, "energy": "l1"}, {"margin": 2.5},
                    {"margin": 2.5, "reducer": "avg_non_zero"},
                    {"margin": 3.0, "energy": L1Energy(), "reducer": AvgNonZeroReducer()}],
    "square_square": [{}, {"margin": 3.0, "energy": "l1"}, {"margin": 2.5},
                      {"margin": 2.5, "reducer": "avg_non_zero"}],
    "square_exponential": [{}, {"Q": 4.0, "energy": "l2"}, {"reducer": "avg_non_zero"}],
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


def test_seed_000_losses_of_the_convnet_unchanged():
    """The convnet's default loss: eq. 8 and contrastive with the convnet's defaults."""
    a, b, s = make(9, 5, "mixed", seed=7)
    Q = energy_bound(5, "l1")
    J, Ga, Gb = _seed_000_loss(a, b, s)
    J2, Ga2, _ = square_exponential.embedding_cost_grad(a, b, s, Q=Q, energy="l1")
    np.testing.assert_array_equal(Ga, Ga2)
    assert J == J2
    J, Ga, _ = _seed_000_loss(a, b, s, loss="contrastive", kind="l2")
    J2, Ga2, _ = contrastive.embedding_cost_grad(a, b, s, margin=energy_bound(5, "l2") / 4)
    np.testing.assert_array_equal(Ga, Ga2)
    with pytest.raises(ValueError, match="loss must be one of"):
        _seed_000_loss(a, b, s, loss="nope")


@pytest.mark.parametrize("name", ["embedding_cost_grad", "energy", "energy_bound"])
def test_names_of_the_removed_cnn_loss_are_deprecated(name):
    with pytest.warns(FutureWarning, match=f"metricfit.cnn.{name} is deprecated"):
        value = getattr(metricfit.cnn, name)
    assert callable(value)
    with pytest.raises(AttributeError):
        _ = metricfit.cnn.no_such_name


def test_mean_reducer_is_the_mean_as_before():
    """The default reducer computes exactly what the mean built into the losses did."""
    a, b, s = make(9, 4, "mixed", seed=4)
    diff = a - b
    E = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    Y = impostor(s)
    L, dL = contrastive.per_pair(E, Y, 1.5)
    J, Ga, Gb = contrastive.embedding_cost_grad(a, b, s, margin=1.5)
    assert J == float(np.mean(L)) and type(J) is float
    np.testing.assert_array_equal(Ga, (dL / 9)[:, None] * (diff * (1 / E)[:, None]))
    np.testing.assert_array_equal(Gb, -Ga)


def test_avg_non_zero_averages_over_the_pairs_that_pay():
    a, b, s = make(10, 3, "dissimilar", seed=1)
    E = energy(a, b, "l2")[0]
    m = float(np.median(E))  # about half of the impostors are beyond the margin
    L = np.maximum(0.0, m - E) ** 2 / 2
    count = np.count_nonzero(L > 0)
    assert 0 < count < 10
    J = contrastive.embedding_cost_grad(a, b, s, margin=m, reducer="avg_non_zero")[0]
    np.testing.assert_allclose(J, L.sum() / count, rtol=1e-12)
    J_mean = contrastive.embedding_cost_grad(a, b, s, margin=m)[0]
    np.testing.assert_allclose(J_mean * 10 / count, J, rtol=1e-12)
    J, Ga, Gb = contrastive.embedding_cost_grad(a, b, s, margin=1e-3 * E.min(),
                                                reducer="avg_non_zero")
    assert J == 0.0 and not Ga.any() and not Gb.any()  # every impostor beyond the margin


def test_distances_and_reducers_by_name_and_errors():
    assert get_distance("l1") == L1Energy() and get_distance(L2Energy()) == L2Energy()
    assert get_reducer("avg_non_zero") == AvgNonZeroReducer()
    a, b, _ = make(4, 3, "mixed")
    for name in ("l1", "l2"):
        E, dE = get_distance(name).value_grad(a, b)
        np.testing.assert_array_equal(E, energy(a, b, name)[0])
        np.testing.assert_allclose(get_distance(name).score(a, b), -E, rtol=1e-12)
    with pytest.raises(ValueError, match="energy must be one of"):
        get_distance("cosine")
    with pytest.raises(ValueError, match="reducer must be one of mean, avg_non_zero"):
        get_reducer("sum")


def test_registry_names_and_errors():
    assert get_loss("tsml") is PAIR_LOSSES["triangular"]
    assert get_loss(contrastive) is contrastive.SPEC is get_loss(contrastive.SPEC)
    with pytest.raises(ValueError, match="choose from triangular, cosine, ddml, contrastive"):
        get_loss("hinge")
    with pytest.raises(ValueError, match="loss must be a name or a PairLoss"):
        get_loss(3)
    assert loss_params(contrastive, {"margin": 2}) == {"margin": 2, "energy": "l2",
                                                       "reducer": "mean"}
    with pytest.raises(ValueError, match="takes no parameter.*it takes: margin, energy, reducer"):
        loss_params(contrastive, {"T": 1})
    a, b, s = make(3, 2, "mixed")
    for module in (contrastive, square_square, square_exponential):
        with pytest.raises(ValueError, match="energy must be one of"):
            module.embedding_cost_grad(a, b, s, energy="l3")
        with pytest.raises(ValueError, match="reducer must be one of"):
            module.embedding_cost_grad(a, b, s, reducer="median")


@pytest.mark.parametrize("name", PAIR_LOSSES)
def test_pair_scores_rank_similar_pairs_higher(name):
    loss = PAIR_LOSSES[name]
    rng = np.random.default_rng(0)
    a = rng.normal(size=(50, 4))
    close, far = a + 0.01 * rng.normal(size=a.shape), rng.normal(size=a.shape)
    assert np.all(loss.pair_score(a, close) > loss.pair_score(a, far))
