"""The C1-S2-C3-S4-C5-F6 network, its sizing, the losses and the siamese objective (float64,
finite differences), and the Gaussian model of section 4.1."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from test_cnn_kernels import numeric_grad, some

from metricfit.cnn import (
    ConvNetwork,
    SiameseObjective,
    _kernels,
    fit_gaussian,
    gaussian_claims,
    gaussian_log_density,
    network_spec,
    num_threads,
)
from metricfit.cnn.objective import _seed_000_loss as embedding_cost_grad
from metricfit.cnn.threads import CHUNK
from metricfit.losses import square_exponential
from metricfit.losses._energy import impostor
from metricfit.losses.distances import energy


def tiny_net():
    return ConvNetwork(network_spec((12, 10), n_maps=(3, 6, 8), n_outputs=4))


# -- sizing -------------------------------------------------------------------------------


def test_paper_network_has_the_sizes_of_section_3_2():
    net = ConvNetwork(network_spec((56, 46)))
    assert net.output_shapes == {"C1": (15, 50, 40), "S2": (15, 25, 20), "C3": (45, 20, 15),
                                 "S4": (45, 5, 5), "C5": (250,), "F6": (50,)}
    layers = net.layers
    assert layers["C1"].n_trainable == 750 and layers["S2"].n_trainable == 30
    assert layers["C3"].n_trainable == 7101  # paper: 7128 (see lenet_table)
    assert layers["C5"].n_trainable == 250 * (45 * 25 + 1)
    assert layers["F6"].n_trainable == 12550
    assert net.spec.s4_window == (4, 3)


@pytest.mark.parametrize("shape, expected", [
    ((62, 47), {"C1": (15, 56, 41), "S2": (15, 28, 20), "C3": (45, 23, 15), "S4": (45, 5, 5)}),
    ((8, 8), {"C1": (15, 6, 6), "S2": (15, 3, 3), "C3": (45, 2, 2), "S4": (45, 2, 2)}),
])
def test_network_is_sized_for_other_inputs(shape, expected):
    net = ConvNetwork(network_spec(shape))
    assert {k: net.output_shapes[k] for k in expected} == expected
    G = net.transform(net.init(0), np.zeros((3,) + shape))
    assert G.shape == (3, 50) and np.all(np.abs(G) < 1)


def test_too_small_input_raises():
    with pytest.raises(ValueError, match="too small"):
        network_spec((30, 30), kernel_sizes=(7, 13))


# -- the whole network ----------------------------------------------------------------------


def test_network_backward_matches_finite_differences():
    net = tiny_net()
    rng = np.random.default_rng(0)
    theta = net.init(rng)
    theta += 0.1 * rng.normal(size=theta.size)  # off the init: subsample coef != 1
    X = rng.normal(size=(3, 12, 10))
    R = rng.normal(size=(3, 4))
    G, cache = net.forward(theta, X)
    grad = net.backward(theta, cache, R)
    assert grad.shape == (net.n_params,) and grad.dtype == np.float64
    rows = np.concatenate([some(rng, net.n_params, 60), [0, net.n_params - 1]])
    numeric = numeric_grad(lambda: float((R * net.forward(theta, X)[0]).sum()), theta, rows)
    np.testing.assert_allclose(grad[rows], numeric, rtol=1e-6, atol=1e-9)


def test_transform_in_batches_matches_forward_and_float32_is_close():
    net = tiny_net()
    theta = net.init(1)
    X = np.random.default_rng(1).normal(size=(7, 12, 10))
    G = net.forward(theta, X)[0]
    # equal up to BLAS rounding (a batch of one row takes another GEMM path)
    np.testing.assert_allclose(net.transform(theta, X, batch_size=2), G, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(net.transform(theta, X.astype(np.float32)), G, atol=1e-5)


def test_unconnected_c3_weights_stay_zero():
    net = ConvNetwork(network_spec((12, 10), n_maps=(6, 16, 8), n_outputs=4))
    rng = np.random.default_rng(2)
    theta = net.init(rng)
    C3 = net.layers["C3"]
    assert not net.unpack(theta)["C3"]["W"][~C3.table].any()
    grad = net.backward(theta, net.forward(theta, rng.normal(size=(2, 12, 10)))[1],
                        rng.normal(size=(2, 4)))
    assert not net.unpack(grad)["C3"]["W"][~C3.table].any()


# -- losses -------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["square_exponential", "contrastive"])
@pytest.mark.parametrize("kind", ["l1", "l2"])
@pytest.mark.parametrize("label", [1, -1])
def test_loss_gradient_matches_finite_differences(loss, kind, label):
    rng = np.random.default_rng(3)
    a, b = rng.uniform(-1, 1, size=(2, 5, 6))
    s = np.full(5, label)
    J, da, db = embedding_cost_grad(a, b, s, loss=loss, kind=kind, margin=4.0)
    for x, g in [(a, da), (b, db)]:
        rows = some(rng, x.size, 30)
        numeric = numeric_grad(lambda: embedding_cost_grad(a, b, s, loss=loss, kind=kind,
                                                           margin=4.0)[0], x, rows)
        np.testing.assert_allclose(g.reshape(-1)[rows], numeric, rtol=1e-6, atol=1e-9)


def test_eq8_values_and_label_mapping():
    E, Q = np.array([0.0, 10.0]), 100.0
    L_gen, _ = square_exponential.per_pair(E, impostor(np.array([1, 1])), Q)  # s = +1: Y = 0
    L_imp, _ = square_exponential.per_pair(E, impostor(np.array([-1, -1])), Q)  # s = -1: Y = 1
    np.testing.assert_allclose(L_gen, [0.0, 2 / Q * 100])
    np.testing.assert_allclose(L_imp, 2 * Q * np.exp(-2.77 * E / Q))
    assert energy(np.ones((1, 3)), -np.ones((1, 3)))[0] == 6.0  # the L1 norm


# -- the siamese objective ----------------------------------------------------------------


def test_objective_is_the_sum_over_both_branches():
    net = tiny_net()
    rng = np.random.default_rng(4)
    theta = net.init(rng)
    pairs = rng.normal(size=(6, 2, 12, 10))
    s = np.array([1, -1, 1, -1, 1, -1])
    obj = SiameseObjective(net, pairs, s, chunk_size=4)
    J, G = obj(theta)
    J_b, G_b = obj.batch(theta, np.arange(6))
    assert J == pytest.approx(J_b) and np.allclose(G, G_b)
    # by hand: two separate branches, gradients added
    A, ca = net.forward(theta, pairs[:, 0])
    B, cb = net.forward(theta, pairs[:, 1])
    J_h, da, db = embedding_cost_grad(A, B, s)
    np.testing.assert_allclose(G, net.backward(theta, ca, da) + net.backward(theta, cb, db),
                               rtol=1e-10, atol=1e-12)
    rows = some(rng, net.n_params, 20)
    np.testing.assert_allclose(G[rows], numeric_grad(lambda: obj(theta)[0], theta, rows),
                               rtol=1e-5, atol=1e-8)


# -- Gaussian model (section 4.1) ----------------------------------------------------------


def test_gaussian_density_and_shrinkage():
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(5, 10))  # 5 images in 10 dimensions: singular sample covariance
    mean, cov = fit_gaussian(Z, shrinkage=0.3)
    assert np.linalg.eigvalsh(cov).min() > 0
    np.testing.assert_allclose(np.trace(cov), np.trace(np.cov(Z.T)))
    probes = rng.normal(size=(4, 10))
    np.testing.assert_allclose(gaussian_log_density(probes, mean, cov),
                               multivariate_normal(mean, cov).logpdf(probes))
    with pytest.raises(ValueError, match="shrinkage"):
        fit_gaussian(Z, shrinkage=0.0)


def test_gaussian_claims_follow_section_4_1():
    rng = np.random.default_rng(6)
    subjects = np.repeat(np.arange(3), 6)
    index = np.tile(np.arange(1, 7), 3)
    Z = rng.normal(size=(18, 4)) + 10 * subjects[:, None]
    claims = gaussian_claims(Z, subjects, index <= 3, shrinkage=0.5)
    assert claims["genuine"].sum() == 3 * 3 and (~claims["genuine"]).sum() == 3 * 12
    c = 0  # Prob(genuine) = p_g / (p_g + p_i), p_i the mean p_g of the impostor claims of c
    mean, cov = fit_gaussian(Z[(subjects == c) & (index <= 3)], 0.5)
    mine = claims["claimed"] == c
    p_g = np.exp(gaussian_log_density(Z[claims["probe"][mine]], mean, cov))
    p_i = p_g[~claims["genuine"][mine]].mean()
    np.testing.assert_allclose(claims["prob"][mine], p_g / (p_g + p_i), rtol=1e-10)
    assert claims["score"][claims["genuine"]].min() > claims["score"][~claims["genuine"]].max()


# -- threads: fixed chunks of a batch ------------------------------------------------------


@pytest.mark.parametrize("n_images", [1, CHUNK - 1, 2 * CHUNK + 3])
def test_chunked_layers_match_the_whole_batch_kernels(n_images):
    """The layers run the kernels on chunks of CHUNK images in threads; in float64 that equals
    one kernel call on the whole batch (up to the order of the per-chunk gradient sums)."""
    net = ConvNetwork(network_spec((14, 12), n_maps=(3, 6, 8), n_outputs=4, kernel_sizes=(3, 2)))
    rng = np.random.default_rng(7)
    params = net.unpack(net.init(rng))
    X = rng.normal(size=(n_images, 1, 14, 12))
    for name in ("C1", "S2"):
        layer, p = net.layers[name], params[name]
        with num_threads(2):
            Y, cache = layer.forward(p, X)
            dY = rng.normal(size=Y.shape)
            dX, grads = layer.backward(p, cache, dY)
        if name == "C1":
            assert layer.squash  # tanh fused
            np.testing.assert_array_equal(Y, _kernels.conv2d_forward(X, p["W"], p["b"],
                                                                     layer._table_u8, True))
            ref = _kernels.conv2d_backward(X, p["W"], layer._table_u8, dY, True, Y)
            np.testing.assert_array_equal(dX, ref[0])
            np.testing.assert_allclose(grads["W"], ref[1], rtol=1e-12, atol=1e-12)
        else:
            Y_ref, means = _kernels.subsample_forward(X, p["coef"], p["bias"], *layer.window,
                                                      True)
            np.testing.assert_array_equal(Y, Y_ref)
            ref = _kernels.subsample_backward(means, p["coef"], dY, *X.shape[2:], *layer.window,
                                              Y)
            np.testing.assert_array_equal(dX, ref[0])
            np.testing.assert_allclose(grads["coef"], ref[1], rtol=1e-12, atol=1e-12)
        X = Y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient_is_the_same_on_any_thread_count(dtype):
    net = ConvNetwork(network_spec((28, 24), n_maps=(4, 8, 16), n_outputs=6))
    rng = np.random.default_rng(8)
    theta = net.init(rng)
    pairs = rng.normal(size=(2 * CHUNK + 5, 2, 28, 24)).astype(dtype)
    s = np.where(np.arange(len(pairs)) % 2 == 0, 1, -1)
    objective = SiameseObjective(net, pairs, s)
    results = []
    for n in (1, 2, 3):
        with num_threads(n):
            results.append(objective.batch(theta, np.arange(len(pairs))))
    for J, G in results[1:]:
        assert J == results[0][0]
        np.testing.assert_array_equal(G, results[0][1])


def fresh_step(net, pairs, s, theta, rows):
    """One step of the siamese objective without a workspace: every array new."""
    images = np.concatenate([pairs[rows, 0], pairs[rows, 1]])
    G, cache = net.forward(theta, images)
    J, dJ_da, dJ_db = embedding_cost_grad(G[:rows.size], G[rows.size:], s[rows])
    # J in the compute dtype, as SiameseObjective returns it (NumPy 1.x computes the loss's
    # mean of float32 energies in float64; NumPy 2 keeps float32)
    return pairs.dtype.type(J), net.backward(theta, cache, np.concatenate([dJ_da, dJ_db]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_steps_reusing_the_workspace_equal_fresh_steps(dtype):
    """SiameseObjective.batch reuses its arrays from step to step (no fresh pages): a step
    after steps with other weights and another batch size gives, bit for bit, what a step
    with new arrays gives, and what an earlier step returned is not overwritten."""
    net = ConvNetwork(network_spec((28, 24), n_maps=(4, 8, 16), n_outputs=6))
    rng = np.random.default_rng(9)
    thetas = [net.init(rng) for _ in range(2)]
    pairs = rng.normal(size=(CHUNK + 7, 2, 28, 24)).astype(dtype)
    s = np.where(np.arange(len(pairs)) % 3 == 0, 1, -1)
    rows, few = np.arange(len(pairs)), np.arange(5)
    reused = SiameseObjective(net, pairs, s)
    J0, G0 = reused.batch(thetas[0], rows)
    kept = G0.copy()
    reused.batch(thetas[1], few)
    J1, G1 = reused.batch(thetas[1], rows)
    J_fresh, G_fresh = fresh_step(net, pairs, s, thetas[1], rows)
    assert J1 == J_fresh
    np.testing.assert_array_equal(G1, G_fresh)
    np.testing.assert_array_equal(G0, kept)
    assert reused.batch(thetas[0], rows)[0] == fresh_step(net, pairs, s, thetas[0], rows)[0]


def test_num_threads_rejects_zero():
    with pytest.raises(ValueError, match="threads"):
        with num_threads(0):
            pass
