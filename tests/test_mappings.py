"""Mappings: backward vs finite differences, layouts, Glorot init, and the siamese objective
(finite differences, the linear fast path, eq. 12 pair by pair, chunking, batches, dtypes)."""

from functools import partial

import numpy as np
import pytest
from _reference import central_differences, relative_error
from hypothesis import given, settings
from hypothesis import strategies as st

from metricfit.losses import csml, tsml
from metricfit.mappings import MAPPINGS, MLP, ConvNet, Linear, MappedObjective, Tanh, l2_normalize

try:  # DDML is written in parallel: use it when it is there
    from metricfit.losses import ddml
except ImportError:  # pragma: no cover
    ddml = None

# (k != d and hidden != k everywhere)
MAPPING_CASES = {
    "linear-5-3": lambda: Linear(5, 3),
    "linear-3-5": lambda: Linear(3, 5),
    "tanh-5-3": lambda: Tanh(5, 3),
    "tanh-3-4": lambda: Tanh(3, 4),
    "mlp-5-4-3": lambda: MLP(5, 4, 3),
    "mlp-3-6-2": lambda: MLP(3, 6, 2),
}
LOSSES = {"tsml": tsml.embedding_cost_grad, "csml": csml.embedding_cost_grad}
FAST_PATHS = {"tsml": tsml.objective, "csml": csml.objective}
if ddml is not None:
    LOSSES["ddml"] = partial(ddml.embedding_cost_grad, T=3.0, tau=0.5)
    FAST_PATHS["ddml"] = partial(ddml.objective, T=3.0, tau=0.5)
LABELS = ["similar", "dissimilar", "mixed"]


def make_pairs(d, n=9, labels="mixed", seed=0):
    rng = np.random.default_rng(seed)
    s = {"similar": np.ones(n), "dissimilar": -np.ones(n), "mixed": rng.choice([-1, 1], n)}
    return rng.normal(size=(n, d)), rng.normal(size=(n, d)), s[labels]


def random_theta(mapping, seed=0, scale=0.5):
    return np.random.default_rng(seed).normal(scale=scale, size=mapping.n_params)


# ------------------------------------------------------------------------------- mappings
@pytest.mark.parametrize("case", MAPPING_CASES)
def test_backward_matches_central_differences(case):
    """backward(dZ = R) is the gradient of the linear functional theta -> <R, forward(theta)>."""
    mapping = MAPPING_CASES[case]()
    rng = np.random.default_rng(1)
    X = rng.normal(size=(7, mapping.n_features))
    R = rng.normal(size=(7, mapping.n_components))
    theta = random_theta(mapping)
    Z, cache = mapping.forward(theta, X)
    G = mapping.backward(theta, cache, R)
    num = central_differences(lambda t: np.sum(R * mapping.forward(t, X)[0]), theta)
    assert G.shape == theta.shape and G.dtype == np.float64
    assert relative_error(G, num) < 1e-6


@pytest.mark.parametrize("case", MAPPING_CASES)
def test_forward_is_the_formula_and_pure(case):
    mapping = MAPPING_CASES[case]()
    rng = np.random.default_rng(2)
    X = rng.normal(size=(6, mapping.n_features))
    theta = random_theta(mapping)
    theta_copy, X_copy = theta.copy(), X.copy()
    p = mapping.unpack(theta)
    if isinstance(mapping, Linear):
        expected = X @ p["W"].T
    elif isinstance(mapping, Tanh):
        expected = np.tanh(X @ p["W"].T + p["h"])  # eq. 10
    else:
        expected = np.tanh(np.tanh(X @ p["W1"].T + p["h1"]) @ p["W2"].T + p["h2"])
    Z, cache = mapping.forward(theta, X)
    dZ = rng.normal(size=Z.shape)
    dZ_copy = dZ.copy()
    mapping.backward(theta, cache, dZ)
    assert Z.shape == (6, mapping.n_components)
    np.testing.assert_allclose(Z, expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(mapping.transform(theta, X), Z)
    for after, before in ((theta, theta_copy), (X, X_copy), (dZ, dZ_copy)):
        np.testing.assert_array_equal(after, before)


@pytest.mark.parametrize("case", MAPPING_CASES)
def test_pack_unpack_round_trip(case):
    mapping = MAPPING_CASES[case]()
    theta = random_theta(mapping)
    blocks = mapping.unpack(theta)
    assert list(blocks) == list(mapping.shapes)
    assert sum(b.size for b in blocks.values()) == mapping.n_params
    for name, block in blocks.items():
        assert block.shape == mapping.shapes[name]
        assert np.shares_memory(block, theta)  # views, not copies
    np.testing.assert_array_equal(mapping.pack(**blocks), theta)
    assert mapping.pack(**{k: v.astype(np.float32) for k, v in blocks.items()}).dtype == np.float32


@settings(max_examples=30, deadline=None)
@given(d=st.integers(1, 6), m=st.integers(1, 6), k=st.integers(1, 6), seed=st.integers(0, 99))
def test_round_trip_any_sizes(d, m, k, seed):
    for mapping in (Linear(d, k), Tanh(d, k), MLP(d, m, k)):
        theta = random_theta(mapping, seed)
        np.testing.assert_array_equal(mapping.pack(**mapping.unpack(theta)), theta)
        assert mapping.init(seed).shape == (mapping.n_params,)


@pytest.mark.parametrize("k, d", [(3, 5), (5, 3), (4, 4)])
def test_linear_init_is_identity(k, d):
    mapping = Linear(d, k)
    W0 = mapping.unpack(mapping.init(0))["W"]
    np.testing.assert_array_equal(W0, np.eye(k, d))


@pytest.mark.parametrize("mapping, layers", [
    (Tanh(300, 100), {"W": (300, 100), "h": (300, 100)}),
    (MLP(300, 200, 50), {"W1": (300, 200), "h1": (300, 200), "W2": (200, 50), "h2": (200, 50)}),
])
def test_glorot_uniform_init(mapping, layers):
    """Seed 004 eq. 13: every W and h of layer j from U[-sqrt6/sqrt(n_j + n_j+1), +...]."""
    theta = mapping.init(random_state=0)
    assert theta.shape == (mapping.n_params,) and theta.dtype == np.float64
    for name, block in mapping.unpack(theta).items():
        bound = np.sqrt(6) / np.sqrt(sum(layers[name]))
        assert np.abs(block).max() <= bound
        assert np.abs(block).max() > 0.9 * bound  # the whole interval is used
        if block.size >= 1000:  # std of U[-r, r] is r / sqrt(3); mean 0
            assert abs(block.std() / (bound / np.sqrt(3)) - 1) < 0.03
            assert abs(block.mean()) < 5 * bound / np.sqrt(3 * block.size)
    np.testing.assert_array_equal(mapping.init(0), theta)
    np.testing.assert_array_equal(mapping.init(np.random.RandomState(0)), theta)
    assert not np.array_equal(mapping.init(1), theta)
    assert mapping.init(np.random.default_rng(0)).shape == theta.shape


def test_registry_and_bad_sizes():
    assert MAPPINGS == {"linear": Linear, "tanh": Tanh, "mlp": MLP, "convnet": ConvNet}
    assert repr(MLP(3, 4, 2)) == "MLP(n_features=3, n_hidden=4, n_components=2)"
    for bad in (0, -1, 2.5, True, None):
        with pytest.raises(ValueError, match="integer >= 1"):
            Tanh(bad, 2)
    mapping = MLP(3, 4, 2)
    theta = mapping.init(0)
    with pytest.raises(ValueError, match="n_params"):
        mapping.unpack(theta[:-1])
    with pytest.raises(ValueError, match="shape"):
        mapping.forward(theta, np.ones((5, 4)))
    for m in (Linear(3, 2), Tanh(3, 2), mapping):
        th = m.init(0)
        with pytest.raises(ValueError, match="shape"):
            m.backward(th, m.forward(th, np.ones((5, 3)))[1], np.ones((5, 3)))
    blocks = mapping.unpack(theta)
    with pytest.raises(ValueError, match="exactly"):
        mapping.pack(W1=blocks["W1"])
    with pytest.raises(ValueError, match="W2 must have shape"):
        mapping.pack(**{**blocks, "W2": blocks["W2"].T})


# ------------------------------------------------------------------------ siamese objective
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("case", MAPPING_CASES)
@pytest.mark.parametrize("labels", LABELS)
@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_objective_matches_central_differences(loss, case, labels, lam):
    mapping = MAPPING_CASES[case]()
    X1, X2, s = make_pairs(mapping.n_features, labels=labels, seed=3)
    theta0 = random_theta(mapping, seed=4)
    f = MappedObjective(LOSSES[loss], mapping, X1, X2, s, lam=lam, theta0=theta0)
    theta = random_theta(mapping, seed=5)
    J, G = f(theta)
    num = central_differences(lambda t: f(t)[0], theta)
    assert G.shape == theta.shape and G.dtype == np.float64 and np.isfinite(J)
    assert relative_error(G, num) < 1e-6


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("k, d", [(3, 5), (5, 3), (4, 4)])
def test_generic_linear_path_equals_fast_path(loss, k, d):
    """The house rule: composition (loss on embeddings + Linear backward) == prepared objective."""
    X1, X2, s = make_pairs(d, n=40, seed=6)
    rng = np.random.default_rng(7)
    A, A0 = rng.normal(size=(k, d)), rng.normal(size=(k, d))
    J_fast, G_fast = FAST_PATHS[loss](X1, X2, s, lam=0.4, A0=A0)(A)
    f = MappedObjective(LOSSES[loss], Linear(d, k), X1, X2, s, lam=0.4, theta0=A0.ravel())
    for theta in (A.ravel(), A):  # flat (the optimizers') or (k, d)
        J, G = f(theta)
        np.testing.assert_allclose(J, J_fast, rtol=1e-10)
        assert relative_error(G.reshape(k, d), G_fast) < 1e-10
        assert G.shape == theta.shape


def test_tanh_tsml_matches_eq_12_pair_by_pair():
    """Seed 004 eq. 12 as printed, one pair at a time: [(1 - a*a) * (a - c/|c|)] [x; 1]^T + ..."""
    mapping = Tanh(5, 3)
    X1, X2, s = make_pairs(5, n=8, seed=8)
    theta = random_theta(mapping, seed=9)
    p = mapping.unpack(theta)
    Wp = np.hstack([p["W"], p["h"][:, None]])  # W' = [W h] (eq. 11)
    J_ref, G_ref = 0.0, np.zeros_like(Wp)
    for x, y, si in zip(X1, X2, s, strict=True):
        a, b = np.tanh(Wp @ np.append(x, 1)), np.tanh(Wp @ np.append(y, 1))
        c = a + si * b
        J_ref += 0.5 * a @ a + 0.5 * b @ b - np.linalg.norm(c) + 1
        unit = c / np.linalg.norm(c)
        G_ref += np.outer((1 - a * a) * (a - unit), np.append(x, 1))
        G_ref += np.outer((1 - b * b) * (b - si * unit), np.append(y, 1))
    J, G = MappedObjective(tsml.embedding_cost_grad, mapping, X1, X2, s)(theta)
    g = mapping.unpack(G)
    np.testing.assert_allclose(J, J_ref / 8, rtol=1e-12)
    np.testing.assert_allclose(np.hstack([g["W"], g["h"][:, None]]), G_ref / 8, rtol=1e-10)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("case", ["linear-5-3", "tanh-3-4", "mlp-5-4-3"])
def test_chunking_does_not_change_the_result(loss, case):
    mapping = MAPPING_CASES[case]()
    X1, X2, s = make_pairs(mapping.n_features, n=50, seed=10)
    theta, theta0 = random_theta(mapping, 11), random_theta(mapping, 12)
    J, G = MappedObjective(LOSSES[loss], mapping, X1, X2, s, 0.2, theta0)(theta)
    for chunk_size in (1, 7, 49, 50):
        f = MappedObjective(LOSSES[loss], mapping, X1, X2, s, 0.2, theta0, chunk_size=chunk_size)
        Jc, Gc = f(theta)
        np.testing.assert_allclose(Jc, J, rtol=1e-12)
        np.testing.assert_allclose(Gc, G, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("case", ["linear-5-3", "tanh-3-4", "mlp-5-4-3"])
def test_batch_is_the_objective_on_the_subset(case):
    mapping = MAPPING_CASES[case]()
    X1, X2, s = make_pairs(mapping.n_features, n=30, seed=13)
    theta, theta0 = random_theta(mapping, 14), random_theta(mapping, 15)
    f = MappedObjective(tsml.embedding_cost_grad, mapping, X1, X2, s, 0.1, theta0, chunk_size=4)
    assert f.n_pairs == 30 and f.labels.shape == (30,) and set(f.labels) <= {-1.0, 1.0}
    for idx in (np.array([3, 17, 4, 29, 0, 8]), np.array([5, 5, 2]), np.array([11])):
        sub = MappedObjective(tsml.embedding_cost_grad, mapping, X1[idx], X2[idx], s[idx], 0.1,
                              theta0)
        Jb, Gb = f.batch(theta, idx)
        Js, Gs = sub(theta)
        np.testing.assert_allclose(Jb, Js, rtol=1e-12)
        np.testing.assert_allclose(Gb, Gs, rtol=1e-11, atol=1e-13)
    np.testing.assert_array_equal(f.batch(theta, np.arange(30))[1], f(theta)[1])


@pytest.mark.parametrize("loss", ["tsml", "csml"])
@pytest.mark.parametrize("case", ["linear-5-3", "tanh-3-4", "mlp-5-4-3"])
def test_float32_matches_float64(loss, case):
    mapping = MAPPING_CASES[case]()
    X1, X2, s = make_pairs(mapping.n_features, n=200, seed=16)
    theta, theta0 = random_theta(mapping, 17), random_theta(mapping, 18)
    J64, G64 = MappedObjective(LOSSES[loss], mapping, X1, X2, s, 0.2, theta0)(theta)
    f32 = MappedObjective(LOSSES[loss], mapping, X1.astype(np.float32), X2.astype(np.float32),
                          s, 0.2, theta0)
    J32, G32 = f32(theta)  # float64 theta is cast to the data dtype
    assert f32.dtype == np.float32 and J32.dtype == G32.dtype == np.float32
    assert abs(J32 - J64) / abs(J64) < 1e-4
    assert relative_error(G32, G64) < 1e-4


def test_objective_bad_input_raises():
    mapping = Tanh(5, 3)
    X1, X2, s = make_pairs(5, n=6, seed=19)
    loss = tsml.embedding_cost_grad
    with pytest.raises(ValueError, match="same shape"):
        MappedObjective(loss, mapping, X1, X2[:, :4], s)
    with pytest.raises(ValueError, match="mapping takes 4"):
        MappedObjective(loss, Tanh(4, 3), X1, X2, s)
    with pytest.raises(ValueError, match="no pairs"):
        MappedObjective(loss, mapping, X1[:0], X2[:0], s[:0])
    with pytest.raises(ValueError, match="NaN"):
        MappedObjective(loss, mapping, np.where(X1 > 1, np.nan, X1), X2, s)
    with pytest.raises(ValueError, match="labels"):
        MappedObjective(loss, mapping, X1, X2, s * 2)
    with pytest.raises(ValueError, match="labels"):
        MappedObjective(loss, mapping, X1, X2, s[:5])
    with pytest.raises(ValueError, match="lam"):
        MappedObjective(loss, mapping, X1, X2, s, lam=-1.0)
    with pytest.raises(ValueError, match="theta0"):
        MappedObjective(loss, mapping, X1, X2, s, theta0=np.zeros(3))
    with pytest.raises(ValueError, match="chunk_size"):
        MappedObjective(loss, mapping, X1, X2, s, chunk_size=0)
    with pytest.raises(ValueError, match="callable"):
        MappedObjective("tsml", mapping, X1, X2, s)
    f = MappedObjective(loss, mapping, X1, X2, (s > 0).astype(int))  # {0, 1} coding accepted
    np.testing.assert_array_equal(f.labels, s)
    with pytest.raises(ValueError, match="n_params"):
        f(np.zeros(mapping.n_params + 1))
    with pytest.raises(ValueError, match="indices"):
        f.batch(mapping.init(0), np.array([], dtype=int))


def test_l2_normalize():
    X = np.array([[3.0, 4.0], [0.0, 0.0], [1e-310, 0.0], [1e300, 1e300]])
    Y = l2_normalize(X)
    np.testing.assert_allclose(Y, [[0.6, 0.8], [0, 0], [1, 0], [2**-0.5, 2**-0.5]], rtol=1e-15)
    assert X[0, 0] == 3.0  # input untouched
    assert l2_normalize(X[:2].astype(np.float32)).dtype == np.float32
    assert l2_normalize(np.array([[1, 1]])).dtype == np.float64
    rng = np.random.default_rng(20)
    np.testing.assert_allclose(np.linalg.norm(l2_normalize(rng.normal(size=(9, 2, 7))), axis=-1),
                               1.0, rtol=1e-14)


def test_tanh_kernels_match_numpy():
    """The fused float64 tanh (Cephes form) is within 2 ulp of np.tanh everywhere."""
    from metricfit.mappings._base import tanh_backward, tanh_forward

    x = np.logspace(-320, 3, 20001)
    x = np.concatenate([x, -x, [0.0, 0.625, np.nextafter(0.625, 0), np.inf, -np.inf]])[:, None]
    h = np.zeros(1)
    Z = tanh_forward(x.copy(), h)
    ref = np.tanh(x)
    assert np.max(np.abs(Z - ref) / np.spacing(np.abs(ref))) <= 2
    assert np.isnan(tanh_forward(np.array([[np.nan]]), h)).all()
    rng = np.random.default_rng(21)
    P, h = rng.normal(size=(50, 7)), rng.normal(size=7)
    np.testing.assert_allclose(tanh_forward(P.copy(), h), np.tanh(P + h), rtol=1e-15, atol=0)
    Z32 = tanh_forward(P.astype(np.float32), h.astype(np.float32))  # the NumPy path
    assert Z32.dtype == np.float32
    np.testing.assert_allclose(Z32, np.tanh(P + h), rtol=1e-6, atol=1e-6)
    dZ = rng.normal(size=P.shape)
    Z = np.tanh(P)
    Z32, dZ32 = Z.astype(np.float32), dZ.astype(np.float32)
    for z, dz in ((Z, dZ), (Z32, dZ32), (Z32, dZ)):  # numba (two dtypes), NumPy (mixed)
        D = tanh_backward(z, dz)
        assert D.dtype == np.result_type(z, dz)
        rtol = 1e-5 if np.float32 in (z.dtype, dz.dtype) else 1e-15
        np.testing.assert_allclose(D, dZ * (1 - Z**2), rtol=rtol)
    with pytest.raises(ValueError, match="shape of the output"):
        tanh_backward(Z, dZ[:, :3])
