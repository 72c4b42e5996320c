"""The convnet's layers on fixed work units: the same numbers on any thread count (bit for bit),
the same as one whole-batch kernel call, and the spans that share the units among threads."""

import numpy as np
import pytest

from metricfit.cnn import ConvNetwork, SiameseObjective, _kernels, network_spec, num_threads
from metricfit.cnn.layers import (
    GEMM_SPLIT,
    TANH_SPLIT,
    Conv2D,
    Subsample,
    Tanh,
    dense_backward,
    dense_forward,
    lenet_table,
)
from metricfit.cnn.network import INFER_IMAGES
from metricfit.cnn.threads import CHUNK, DRIVER_MIN_THREADS, GRAIN, MIN_SPANS, map_spans, spans

THREADS = (1, 2, 3, 5)  # 5 image blocks below: 1 and 5 threads take whole blocks, 2 and 3 units


def test_spans_cover_the_units_in_order_and_balance_their_cost():
    costs = np.array([1, 1, 1, 1, 8, 1, 1, 1, 1, 8], float)
    for n in (1, 2, 3, 4, 16):
        parts = spans(costs, n)
        assert parts[0][0] == 0 and parts[-1][1] == costs.size
        assert all(a < b for a, b in parts)
        assert all(b == c for (_, b), (c, _) in zip(parts[:-1], parts[1:], strict=True))
        assert len(parts) <= min(n, costs.size)
    assert spans(costs, 2) == [(0, 5), (5, 10)]  # 12 and 12
    assert spans(np.ones(3), 8) == [(0, 1), (1, 2), (2, 3)]
    assert spans(np.zeros(0), 4) == []


def test_map_spans_returns_the_results_in_span_order():
    for n in (1, 2, 3):
        with num_threads(n):
            parts = map_spans(lambda a, b: list(range(a, b)), np.ones(7))
        assert sum(parts, []) == list(range(7))
        assert len(parts) == min(7, 1 if n == 1 else max(GRAIN * n, MIN_SPANS))


def test_map_spans_takes_at_most_max_threads():
    """``max_threads`` caps the threads (and so the spans) of one call; 0 or less: one."""
    import threading
    import time

    def who(a, b):
        time.sleep(0.002)  # so that a second thread, were it allowed, would take a span
        return threading.get_ident()

    with num_threads(3):
        for cap, want_spans in ((None, max(GRAIN * 3, MIN_SPANS)), (2, max(GRAIN * 2, MIN_SPANS)),
                                (1, 1), (0, 1)):
            idents = map_spans(who, np.ones(12), max_threads=cap)
            assert len(idents) == want_spans
            assert len(set(idents)) <= (3 if cap is None else max(cap, 1))
        assert set(map_spans(who, np.ones(12), max_threads=1)) == {threading.get_ident()}


def test_the_backward_products_take_a_thread_per_gemm_share(monkeypatch):
    """C5's backward products on a batch of 128 (2 x 128 x 1125 x 250 multiply-adds): at most
    4 threads (GEMM_PER_THREAD); without dX, 2. The numbers do not depend on the cap."""
    from metricfit.cnn import layers

    rng = np.random.default_rng(0)
    X, W = rng.normal(size=(128, 1125)), rng.normal(size=(250, 1125))
    dY = rng.normal(size=(128, 250))
    asked, real = [], layers.map_spans

    def spy(*args, max_threads=None, **kwargs):
        asked.append(max_threads)
        return real(*args, max_threads=max_threads, **kwargs)

    with num_threads(1):
        want = dense_backward(X, W, dY)
    with num_threads(3):
        monkeypatch.setattr(layers, "map_spans", spy)
        got = dense_backward(X, W, dY)
        dense_backward(X, W, dY, input_grad=False)
    assert layers.GEMM_PER_THREAD == 2 ** 24 and asked == [4, 2]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_paper_network_gives_the_same_numbers_on_any_thread_count(dtype):
    """56x46 images, 37 pairs (74 images: 5 blocks of CHUNK, the last partial): C5's GEMMs
    run in blocks (74 x 1125 x 250 multiply-adds > GEMM_SPLIT), C3 has its partial table."""
    net = ConvNetwork(network_spec((56, 46)))
    assert 74 * 1125 * 250 >= GEMM_SPLIT and -(-74 // CHUNK) == 5
    rng = np.random.default_rng(3)
    theta = net.init(rng)
    pairs = rng.normal(size=(37, 2, 56, 46)).astype(dtype)
    s = np.where(np.arange(37) % 3 == 0, 1, -1)
    objective = SiameseObjective(net, pairs, s)
    results = []
    for n in THREADS:
        with num_threads(n):
            J, G = objective.batch(theta, np.arange(37))
            E = net.transform(theta, pairs[:, 1], batch_size=50)
        results.append((J, G, E))
    for J, G, E in results[1:]:
        assert J == results[0][0]
        np.testing.assert_array_equal(G, results[0][1])
        np.testing.assert_array_equal(E, results[0][2])
    assert np.isfinite(results[0][1]).all() and np.abs(results[0][1]).max() > 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transform_in_spans_gives_the_forward_pass_numbers(dtype, monkeypatch):
    """transform carries INFER_IMAGES images at a time through C1-S4 in each thread's own
    arrays (37 images: spans of 16, 16 and 5 on one thread, the pool's spans on more): bit for
    bit what forward gives on the same batch, on any thread count. forward's whole-batch path
    is blocked while transform runs, so the spans are what is tested."""
    net = ConvNetwork(network_spec((56, 46)))
    rng = np.random.default_rng(8)
    theta = net.init(rng)
    X = rng.normal(size=(37, 56, 46)).astype(dtype)
    with num_threads(1):
        whole = net.forward(theta, X)[0]
        halves = np.concatenate([net.forward(theta, X[:20])[0], net.forward(theta, X[20:])[0]])
    assert 37 % INFER_IMAGES and INFER_IMAGES < 20

    def blocked(*args, **kwargs):
        raise AssertionError("transform took the whole-batch path")

    monkeypatch.setattr(ConvNetwork, "_forward_layers", blocked)
    monkeypatch.setenv("METRICFIT_KERNEL_THREADS", "pool")
    for n in THREADS:
        with num_threads(n):
            np.testing.assert_array_equal(net.transform(theta, X, batch_size=37), whole)
            np.testing.assert_array_equal(net.transform(theta, X, batch_size=20), halves)


@pytest.mark.parametrize("threads", THREADS)
def test_conv_and_subsampling_units_match_the_whole_batch_kernels(threads):
    """float64, a partial connection table: the layers' units (per image, per (block, map))
    give what one whole-batch kernel call gives (the weight gradients up to the order of the
    blocks' sums)."""
    rng = np.random.default_rng(4)
    n = 2 * CHUNK + 7
    X = rng.normal(size=(n, 6, 13, 11))
    conv = Conv2D(6, 10, (6, 6), lenet_table(6, 10), squash=True)
    sub = Subsample(10, (3, 2), squash=True)  # 8x6 -> 2x3: two rows dropped
    assert not conv.table.all()
    p, q = conv.init(rng), {"coef": rng.normal(size=10), "bias": rng.normal(size=10)}
    with num_threads(threads):
        Y, cache = conv.forward(p, X)
        dY = rng.normal(size=Y.shape)
        dX, grads = conv.backward(p, cache, dY)
    np.testing.assert_array_equal(Y, _kernels.conv2d_forward(X, p["W"], p["b"], conv._table_u8,
                                                             True))
    ref = _kernels.conv2d_backward(X, p["W"], conv._table_u8, dY, True, Y)
    np.testing.assert_array_equal(dX, ref[0])
    np.testing.assert_allclose(grads["W"], ref[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads["b"], ref[2], rtol=1e-12, atol=1e-12)
    assert not grads["W"][~conv.table].any()
    with num_threads(threads):
        Z, cache = sub.forward(q, Y)
        dZ = rng.normal(size=Z.shape)
        dY2, sub_grads = sub.backward(q, cache, dZ)
    Z_ref, means = _kernels.subsample_forward(Y, q["coef"], q["bias"], *sub.window, True)
    np.testing.assert_array_equal(Z, Z_ref)
    ref = _kernels.subsample_backward(means, q["coef"], dZ, *Y.shape[2:], *sub.window, Z)
    np.testing.assert_array_equal(dY2, ref[0])
    np.testing.assert_allclose(sub_grads["coef"], ref[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sub_grads["bias"], ref[2], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_dense_products_equal_the_plain_products_on_any_thread_count(dtype):
    rng = np.random.default_rng(5)
    X, W = rng.normal(size=(70, 1125)).astype(dtype), rng.normal(size=(250, 1125)).astype(dtype)
    b, dY = rng.normal(size=250).astype(dtype), rng.normal(size=(70, 250)).astype(dtype)
    assert 70 * 1125 * 250 >= GEMM_SPLIT
    out = []
    for n in (1, 2, 3):
        with num_threads(n):
            out.append((dense_forward(X, W, b),) + dense_backward(X, W, dY))
    tol = 1e-4 if dtype == np.float32 else 1e-12
    plain = (X @ W.T + b, dY @ W, dY.T @ X, dY.sum(axis=0))
    for got, want in zip(out[0], plain, strict=True):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    for other in out[1:]:
        for got, first in zip(other, out[0], strict=True):
            np.testing.assert_array_equal(got, first)


def test_the_tanh_layer_in_chunks_equals_one_pass():
    """Above TANH_SPLIT values the Tanh layer runs in chunks of images on the threads: the same
    values as the single pass (element-wise)."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(40, TANH_SPLIT // 40 + 1))
    layer = Tanh()
    with num_threads(1):
        Y1, _ = layer.forward({}, X[:2])  # under TANH_SPLIT: one pass
    with num_threads(3):
        Y, cache = layer.forward({}, X)
        dX, _ = layer.backward({}, cache, np.ones_like(Y))
    assert X.size >= TANH_SPLIT
    np.testing.assert_array_equal(Y[:2], Y1)
    np.testing.assert_allclose(Y, np.tanh(X), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(dX, 1 - np.tanh(X) ** 2, rtol=1e-12, atol=1e-14)


def launch_spy(monkeypatch):
    """The list that records each driver launch the convnet's passes ask for: ``(driver,
    args)`` where it ran on numba's threads, None where the pool ran the pass instead."""
    from metricfit import parallel

    launched, real_launch = [], parallel.launch

    def spy(driver, *args, **kwargs):
        ran = real_launch(driver, *args, **kwargs)
        launched.append((driver, args) if ran else None)
        return ran

    monkeypatch.setattr("metricfit.cnn.threads.launch", spy)
    return launched


@pytest.mark.parametrize("threads", [2, 3])
def test_numba_drivers_give_the_pools_numbers(threads, monkeypatch):
    """The passes on numba's threads (metricfit.cnn._drivers) and on the package pool: the
    same training step and embeddings, bit for bit (48 images, 3 blocks: on 3 threads the
    conv backward runs by whole image blocks; on 2 by images, then by weight units)."""
    from metricfit import parallel
    from metricfit.cnn import _drivers

    if not parallel.kernel_threads(2, 2):
        pytest.skip("numba's threading layer is not thread-safe here: the pool runs all")
    assert threads < DRIVER_MIN_THREADS  # so that "not set" means the pool
    net = ConvNetwork(network_spec((56, 46)))
    rng = np.random.default_rng(6)
    theta = net.init(rng)
    pairs = rng.normal(size=(24, 2, 56, 46)).astype(np.float32)
    objective = SiameseObjective(net, pairs, np.where(np.arange(24) % 2 == 0, 1, -1))
    launched = launch_spy(monkeypatch)
    out = {}
    for mode in ("", "pool", "numba"):  # "": not set, the pool under DRIVER_MIN_THREADS
        monkeypatch.setenv("METRICFIT_KERNEL_THREADS", mode)
        with num_threads(threads):
            J, G = objective.batch(theta, np.arange(24))
            out[mode] = (J, G, net.transform(theta, pairs[:, 0], batch_size=24))
        if mode != "numba":
            assert launched and not any(launched), mode  # asked each pass, ran no driver
    assert out["pool"][0] == out["numba"][0] == out[""][0]
    for got, want, default in zip(out["numba"][1:], out["pool"][1:], out[""][1:], strict=True):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(default, want)
    ran = {driver for driver, _ in filter(None, launched)}
    assert _drivers.lenet_forward_spans in ran and _drivers.subsample_backward_spans in ran
    assert _drivers.dense_forward_spans in ran  # C5 on 48 images: 48 x 1125 x 250 > GEMM_SPLIT
    stages = {args[1] for driver, args in filter(None, launched)
              if driver is _drivers.conv_backward_spans}
    assert stages == ({_drivers.BLOCKS} if threads == 3 else {_drivers.IMAGES, _drivers.WEIGHTS})


@pytest.mark.parametrize("threads", [2, 3])
def test_single_layers_on_numba_drivers_give_the_pools_numbers(threads, monkeypatch):
    """A convolution and a subsampling layer used alone (their own forward drivers,
    :func:`._drivers.conv_forward_spans` and ``subsample_forward_spans``, not the paper
    network's chained one), float32: forward and backward on numba's drivers
    (``METRICFIT_KERNEL_THREADS=numba``) and on the pool, bit for bit (3 image blocks: the
    backward by whole blocks on 3 threads, by images then weight units on 2)."""
    from metricfit import parallel
    from metricfit.cnn import _drivers

    if not parallel.kernel_threads(2, 2):
        pytest.skip("numba's threading layer is not thread-safe here: the pool runs all")
    rng = np.random.default_rng(11)
    X = rng.normal(size=(2 * CHUNK + 7, 6, 13, 11)).astype(np.float32)
    conv = Conv2D(6, 10, (6, 6), lenet_table(6, 10), squash=True)
    sub = Subsample(10, (3, 2), squash=True)
    p = {k: v.astype(np.float32) for k, v in conv.init(rng).items()}
    q = {"coef": rng.normal(size=10).astype(np.float32),
         "bias": rng.normal(size=10).astype(np.float32)}
    launched = launch_spy(monkeypatch)
    out = {}
    for mode in ("pool", "numba"):
        monkeypatch.setenv("METRICFIT_KERNEL_THREADS", mode)
        with num_threads(threads):
            Y, cache = conv.forward(p, X)
            dX, grads = conv.backward(p, cache, np.ones_like(Y))
            Z, cache = sub.forward(q, Y)
            dY, sub_grads = sub.backward(q, cache, np.ones_like(Z))
        out[mode] = (Y, dX, grads["W"], grads["b"], Z, dY, sub_grads["coef"],
                     sub_grads["bias"])
    for got, want in zip(out["numba"], out["pool"], strict=True):
        np.testing.assert_array_equal(got, want)
    assert {driver for driver, _ in filter(None, launched)} == {
        _drivers.conv_forward_spans, _drivers.conv_backward_spans,
        _drivers.subsample_forward_spans, _drivers.subsample_backward_spans}
