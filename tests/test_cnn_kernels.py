"""The numba layer kernels of metricfit.cnn against plain NumPy / SciPy twins and against central
finite differences (float64)."""

import numpy as np
import pytest
from _reference import central_differences
from scipy.signal import convolve2d, correlate2d

from metricfit.cnn import _kernels, _squash, lenet_table
from metricfit.cnn.layers import Conv2D, Dense, Subsample, Tanh

# -- slow twins ---------------------------------------------------------------------------


def conv_twin(X, W, b, table):
    """Valid correlation through the table with scipy.signal.correlate2d."""
    n, c_in = X.shape[:2]
    out = []
    for i in range(n):
        maps = [b[o] + sum(correlate2d(X[i, c], W[o, c], mode="valid")
                           for c in range(c_in) if table[o, c])
                for o in range(W.shape[0])]
        out.append(maps)
    return np.array(out)


def conv_backward_twin(X, W, table, dY):
    """dW = correlate(x, dY) valid; dX = convolve(dY, W) full; db = sum dY."""
    dW = np.zeros_like(W)
    dX = np.zeros_like(X)
    for i in range(X.shape[0]):
        for o in range(W.shape[0]):
            for c in range(W.shape[1]):
                if table[o, c]:
                    dW[o, c] += correlate2d(X[i, c], dY[i, o], mode="valid")
                    dX[i, c] += convolve2d(dY[i, o], W[o, c], mode="full")
    return dX, dW, dY.sum(axis=(0, 2, 3))


def subsample_twin(X, coef, bias, sh, sw):
    n, m, h, w = X.shape
    ho, wo = h // sh, w // sw
    means = X[:, :, :ho * sh, :wo * sw].reshape(n, m, ho, sh, wo, sw).mean(axis=(3, 5))
    return coef[:, None, None] * means + bias[:, None, None], means


def numeric_grad(f, x, rows):
    """Central differences of the scalar ``f()`` at the flat positions ``rows`` of x, which f
    reads (perturbed in place and restored): :func:`_reference.central_differences`."""
    return central_differences(lambda _: f(), x, positions=rows, in_place=True)


def some(rng, size, k=25):
    return rng.choice(size, size=min(k, size), replace=False)


CONV_CASES = {  # (n images, c_in, h, w, c_out, kh, kw)
    "3x2 kernel, 2 images": (2, 5, 9, 8, 7, 3, 2),  # 4 taps + 2 single; single images only
    "4x3 kernel, 6 images": (6, 5, 9, 8, 7, 4, 3),  # 8 taps per pass + 4; 4 + 2 images
    "7x7 kernel, 1 input": (5, 1, 12, 11, 3, 7, 7),  # 6 passes of 8 taps + 1 (as C1)
    # weight gradient (_simd.dot_taps): the cases above end with a part-vector, overlapping
    # block; a span of exactly one float32 vector (two float64 ones); a span of 11, shorter
    # than a float32 vector (the tiled loop) and one float64 vector + 3
    "span of one vector": (3, 2, 3, 9, 3, 2, 3),
    "span under one vector": (3, 4, 4, 4, 5, 2, 2),
    # forward in registers in float32 too (span >= 4 vectors): one input read by 6 outputs
    # (two groups of three, _simd.correlate_group_3), and a partial table whose last rows
    # read every input (a group, then single outputs)
    "1 input, 6 outputs, span 116": (3, 1, 14, 12, 6, 5, 5),
    "6 inputs, 9 outputs, span 142": (2, 6, 14, 12, 9, 3, 3),
    # one input read by 9 outputs: a group of five (_simd.correlate_group_5), then of three,
    # then one output alone
    "1 input, 9 outputs, span 116": (2, 1, 14, 12, 9, 5, 5),
}


@pytest.fixture(params=list(CONV_CASES))
def conv_case(request):
    n, c_in, h, w, c_out, kh, kw = CONV_CASES[request.param]
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, c_in, h, w))
    W = rng.normal(size=(c_out, c_in, kh, kw))
    b = rng.normal(size=c_out)
    table = lenet_table(c_in, c_out).astype(np.uint8)  # as Conv2D passes it
    return X, W, b, table, rng


def out_shape(X, W):
    return (X.shape[0], W.shape[0], X.shape[2] - W.shape[2] + 1, X.shape[3] - W.shape[3] + 1)


# -- convolution --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_conv_forward_matches_correlate2d(conv_case, dtype, rtol):
    X, W, b, table, _ = conv_case
    Y = _kernels.conv2d_forward(X.astype(dtype), W.astype(dtype), b.astype(dtype), table)
    assert Y.dtype == dtype and Y.shape == out_shape(X, W)
    np.testing.assert_allclose(Y, conv_twin(X, W, b, table), rtol=rtol, atol=rtol * 10)
    Y = _kernels.conv2d_forward(X.astype(dtype), W.astype(dtype), b.astype(dtype), table, True)
    np.testing.assert_allclose(Y, np.tanh(conv_twin(X, W, b, table)), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_conv_forward_groups_outputs_with_the_same_inputs(dtype, rtol):
    """Outputs 1-3 and 5-7 read the same inputs (two groups of three through
    _simd.correlate_group_3), 9-13 too (a group of five, _simd.correlate_group_5), the others
    their own: the same maps as the twin, and as each output computed alone
    (correlate_sources sums in the same order)."""
    rng = np.random.default_rng(5)
    table = np.array([[1, 0, 0, 1], [0, 1, 1, 0], [0, 1, 1, 0], [0, 1, 1, 0], [1, 1, 0, 1],
                      [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [0, 0, 1, 1]]
                     + [[1, 0, 1, 1]] * 5, np.uint8)
    X = rng.normal(size=(3, 4, 13, 12))
    W, b = rng.normal(size=(14, 4, 4, 3)), rng.normal(size=14)
    args = X.astype(dtype), W.astype(dtype), b.astype(dtype)
    Y = _kernels.conv2d_forward(*args, table, True)
    np.testing.assert_allclose(Y, np.tanh(conv_twin(X, W, b, table)), rtol=rtol, atol=rtol)
    for o in range(14):  # one output alone: no group
        alone = _kernels.conv2d_forward(args[0], args[1][o:o + 1], args[2][o:o + 1],
                                        table[o:o + 1], True)
        np.testing.assert_array_equal(Y[:, o:o + 1], alone)


def test_conv_forward_ignores_unconnected_weights(conv_case):
    X, W, b, table, _ = conv_case
    poisoned = W.copy()
    poisoned[table == 0] = np.nan
    np.testing.assert_array_equal(_kernels.conv2d_forward(X, poisoned, b, table),
                                  _kernels.conv2d_forward(X, W, b, table))


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-11), (np.float32, 2e-4)])
@pytest.mark.parametrize("squash", [False, True])
def test_conv_backward_matches_twin(conv_case, squash, dtype, rtol):
    X, W, b, table, rng = conv_case
    dY = rng.normal(size=out_shape(X, W))
    Y = np.tanh(conv_twin(X, W, b, table)) if squash else None  # dY: of the squashed output
    got = _kernels.conv2d_backward(X.astype(dtype), W.astype(dtype), table, dY.astype(dtype),
                                   True, None if Y is None else Y.astype(dtype))
    want = conv_backward_twin(X, W, table, dY * (1 - Y * Y) if squash else dY)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())
    assert not got[1][table == 0].any()  # unconnected kernels get no gradient
    assert _kernels.conv2d_backward(X, W, table, dY, False)[0].size == 0


@pytest.mark.parametrize("squash", [False, True])
@pytest.mark.parametrize("wrt", ["X", "W", "b"])
def test_conv_backward_matches_finite_differences(conv_case, wrt, squash):
    X, W, b, table, rng = conv_case
    R = rng.normal(size=out_shape(X, W))  # L = sum(R * Y): dL/dY = R

    def loss():
        return float((R * _kernels.conv2d_forward(X, W, b, table, squash)).sum())

    Y = _kernels.conv2d_forward(X, W, b, table, True) if squash else None
    dX, dW, db = _kernels.conv2d_backward(X, W, table, R, True, Y)
    x, g = {"X": (X, dX), "W": (W, dW), "b": (b, db)}[wrt]
    rows = some(rng, x.size)
    np.testing.assert_allclose(g.reshape(-1)[rows], numeric_grad(loss, x, rows),
                               rtol=1e-6, atol=1e-7)


# -- subsampling --------------------------------------------------------------------------


@pytest.mark.parametrize("squash", [False, True])
@pytest.mark.parametrize("window", [(2, 2), (4, 3), (1, 1)])
def test_subsample_forward_matches_twin(window, squash):
    rng = np.random.default_rng(2)
    X, coef, bias = rng.normal(size=(3, 4, 9, 7)), rng.normal(size=4), rng.normal(size=4)
    Y, means = _kernels.subsample_forward(X, coef, bias, *window, squash)
    Y_twin, means_twin = subsample_twin(X, coef, bias, *window)
    np.testing.assert_allclose(Y, np.tanh(Y_twin) if squash else Y_twin, rtol=1e-12)
    np.testing.assert_allclose(means, means_twin, rtol=1e-12)
    Y32, _ = _kernels.subsample_forward(X.astype(np.float32), coef, bias, *window, squash)
    assert Y32.dtype == np.float32
    np.testing.assert_allclose(Y32, Y, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("squash", [False, True])
@pytest.mark.parametrize("window", [(2, 2), (4, 3)])
def test_subsample_backward_matches_finite_differences(window, squash):
    rng = np.random.default_rng(3)
    X, coef, bias = rng.normal(size=(2, 3, 9, 7)), rng.normal(size=3), rng.normal(size=3)
    R = rng.normal(size=subsample_twin(X, coef, bias, *window)[0].shape)

    def loss():
        return float((R * _kernels.subsample_forward(X, coef, bias, *window, squash)[0]).sum())

    Y, means = _kernels.subsample_forward(X, coef, bias, *window, squash)
    dX, dcoef, dbias = _kernels.subsample_backward(means, coef, R, 9, 7, *window,
                                                   Y if squash else None)
    for x, g in [(X, dX), (coef, dcoef), (bias, dbias)]:
        rows = some(rng, x.size)
        np.testing.assert_allclose(g.reshape(-1)[rows], numeric_grad(loss, x, rows),
                                   rtol=1e-6, atol=1e-8)
    assert not dX[:, :, 8:].any()  # the row beyond the last whole window gets nothing


# -- dense and tanh layers (NumPy) ---------------------------------------------------------


@pytest.mark.parametrize("layer, shape", [
    (Dense(12, 5), (4, 3, 2, 2)),
    (Tanh(), (4, 3, 2, 2)),
    (Conv2D(3, 4, (2, 2), lenet_table(3, 4)), (2, 3, 5, 4)),
    (Conv2D(6, 5, (3, 3), lenet_table(6, 5), squash=True), (5, 6, 7, 6)),
    (Subsample(3, (2, 2)), (2, 3, 5, 4)),
    (Subsample(3, (2, 3), squash=True), (2, 3, 5, 7)),
])
def test_layer_backward_matches_finite_differences(layer, shape):
    rng = np.random.default_rng(4)
    X = rng.normal(size=shape)
    params = {k: rng.normal(size=v) for k, v in layer.init(rng).items()
              for v in [np.shape(v)]}
    Y, cache = layer.forward(params, X)
    R = rng.normal(size=Y.shape)

    def loss():
        return float((R * layer.forward(params, X)[0]).sum())

    dX, grads = layer.backward(params, cache, R)
    for x, g in [(X, dX)] + [(params[k], grads[k]) for k in params]:
        rows = some(rng, x.size)
        np.testing.assert_allclose(g.reshape(-1)[rows], numeric_grad(loss, x, rows),
                                   rtol=1e-6, atol=1e-8)


# -- tanh ------------------------------------------------------------------------------------


def test_tanh32_is_float32_tanh():
    """The rational float32 tanh fused into the kernels: within 4e-7 of the exact tanh (NumPy's
    float32 tanh: 1.4 ulp), odd, never above 1, exact below 4e-4 and saturated far out."""
    x = np.concatenate([np.linspace(-12, 12, 200001), np.logspace(-10, 1, 20001)])
    x = np.concatenate([x, -x]).astype(np.float32)
    y = np.empty_like(x)
    _kernels.squash_into(x, np.float32(0), y, True)
    exact = np.tanh(x.astype(np.float64))
    assert y.dtype == np.float32
    assert np.abs(y - exact).max() < 4e-7
    assert np.all(np.abs(y - exact) <= 6 * np.spacing(np.abs(exact).astype(np.float32)))
    np.testing.assert_array_equal(y[: x.size // 2], -y[x.size // 2:])
    assert np.abs(y).max() <= 1 and y[x == 12].min() > 0.9999995
    tiny = np.abs(x) < 4e-4
    np.testing.assert_array_equal(y[tiny], x[tiny])
    y64 = np.empty(x.size)  # float64: the C library's tanh (NumPy's may round differently)
    _kernels.squash_into(x.astype(np.float64), 0.5, y64, True)
    np.testing.assert_allclose(y64, np.tanh(x.astype(np.float64) + 0.5), rtol=1e-15, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("squash", [True, False])
def test_squash_with_a_bias_per_element_is_squash_map_by_map(dtype, squash):
    """squash_add_into (the subsampling's tanh over all of an image's maps, one bias per map
    spread over its outputs) gives squash_into's numbers map by map, bit for bit; zeros of
    either sign included."""
    rng = np.random.default_rng(9)
    src = rng.normal(scale=3, size=(7, 25)).astype(dtype)
    src[0, :4] = [0.0, -0.0, 1e-5, -1e-5]
    bias = rng.normal(size=7).astype(dtype)
    bias[1] = -0.0
    got = np.empty(src.size, dtype)
    _squash.squash_add_into(src.ravel(), np.repeat(bias, 25), got, squash)
    want = np.empty_like(src)
    for c in range(7):
        _kernels.squash_into(src[c], bias[c], want[c], squash)
    np.testing.assert_array_equal(got, want.ravel())
    assert np.array_equal(np.signbit(got), np.signbit(want.ravel()))


# -- connection table ---------------------------------------------------------------------


def test_lenet_table_has_lenet5_shares_and_sizes_c3():
    t6 = lenet_table(6, 16)  # as LeNet-5's C3: 6 x 3 + 6 x 4 + 3 x 4 + 1 x 6 = 60 links
    assert t6[:6].astype(int).tolist()[0] == [1, 1, 1, 0, 0, 0]  # 3 contiguous from 0
    assert t6.sum() == 60
    assert sorted(t6.sum(axis=1).tolist()) == [3] * 6 + [4] * 9 + [6]
    t = lenet_table(15, 45)  # seed 000's C3
    assert t.shape == (45, 15) and t.sum() == 196
    assert t.sum(axis=1).min() >= 3 and t.any(axis=0).all()
    assert 196 * 36 + 45 == 7101
    assert lenet_table(3, 4).all()  # too few inputs: full table
