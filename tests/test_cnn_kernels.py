"""The numba layer kernels of metricfit.cnn against plain NumPy / SciPy twins and against central
finite differences (float64)."""

import numpy as np
import pytest
from scipy.signal import convolve2d, correlate2d

from metricfit.cnn import _kernels, lenet_table
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


def numeric_grad(f, x, rows, eps=1e-6):
    """Central differences of the scalar f at the flat positions ``rows`` of x (modified in
    place and restored)."""
    flat = x.reshape(-1)
    out = []
    for r in rows:
        keep = flat[r]
        flat[r] = keep + eps
        up = f()
        flat[r] = keep - eps
        down = f()
        flat[r] = keep
        out.append((up - down) / (2 * eps))
    return np.array(out)


def some(rng, size, k=25):
    return rng.choice(size, size=min(k, size), replace=False)


@pytest.fixture
def conv_case():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2, 5, 9, 8))
    W = rng.normal(size=(7, 5, 3, 2))
    b = rng.normal(size=7)
    table = lenet_table(5, 7).astype(np.uint8)  # as Conv2D passes it
    return X, W, b, table, rng


# -- convolution --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_conv_forward_matches_correlate2d(conv_case, dtype, rtol):
    X, W, b, table, _ = conv_case
    Y = _kernels.conv2d_forward(X.astype(dtype), W.astype(dtype), b.astype(dtype), table)
    assert Y.dtype == dtype and Y.shape == (2, 7, 7, 7)
    np.testing.assert_allclose(Y, conv_twin(X, W, b, table), rtol=rtol, atol=rtol * 10)


def test_conv_forward_ignores_unconnected_weights(conv_case):
    X, W, b, table, _ = conv_case
    poisoned = W.copy()
    poisoned[table == 0] = np.nan
    np.testing.assert_array_equal(_kernels.conv2d_forward(X, poisoned, b, table),
                                  _kernels.conv2d_forward(X, W, b, table))


def test_conv_backward_matches_twin(conv_case):
    X, W, b, table, rng = conv_case
    dY = rng.normal(size=(2, 7, 7, 7))
    got = _kernels.conv2d_backward(X, W, table, dY, True)
    for g, want in zip(got, conv_backward_twin(X, W, table, dY)):
        np.testing.assert_allclose(g, want, rtol=1e-11, atol=1e-11)
    assert not got[1][table == 0].any()  # unconnected kernels get no gradient
    assert _kernels.conv2d_backward(X, W, table, dY, False)[0].size == 0


@pytest.mark.parametrize("wrt", ["X", "W", "b"])
def test_conv_backward_matches_finite_differences(conv_case, wrt):
    X, W, b, table, rng = conv_case
    R = rng.normal(size=(2, 7, 7, 7))  # L = sum(R * Y): dL/dY = R

    def loss():
        return float((R * _kernels.conv2d_forward(X, W, b, table)).sum())

    dX, dW, db = _kernels.conv2d_backward(X, W, table, R, True)
    x, g = {"X": (X, dX), "W": (W, dW), "b": (b, db)}[wrt]
    rows = some(rng, x.size)
    np.testing.assert_allclose(g.reshape(-1)[rows], numeric_grad(loss, x, rows),
                               rtol=1e-6, atol=1e-7)


# -- subsampling --------------------------------------------------------------------------


@pytest.mark.parametrize("window", [(2, 2), (4, 3), (1, 1)])
def test_subsample_forward_matches_twin(window):
    rng = np.random.default_rng(2)
    X, coef, bias = rng.normal(size=(3, 4, 9, 7)), rng.normal(size=4), rng.normal(size=4)
    Y, means = _kernels.subsample_forward(X, coef, bias, *window)
    Y_twin, means_twin = subsample_twin(X, coef, bias, *window)
    np.testing.assert_allclose(Y, Y_twin, rtol=1e-12)
    np.testing.assert_allclose(means, means_twin, rtol=1e-12)


@pytest.mark.parametrize("window", [(2, 2), (4, 3)])
def test_subsample_backward_matches_finite_differences(window):
    rng = np.random.default_rng(3)
    X, coef, bias = rng.normal(size=(2, 3, 9, 7)), rng.normal(size=3), rng.normal(size=3)
    R = rng.normal(size=subsample_twin(X, coef, bias, *window)[0].shape)

    def loss():
        return float((R * _kernels.subsample_forward(X, coef, bias, *window)[0]).sum())

    means = _kernels.subsample_forward(X, coef, bias, *window)[1]
    dX, dcoef, dbias = _kernels.subsample_backward(means, coef, R, 9, 7, *window)
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
    (Subsample(3, (2, 2)), (2, 3, 5, 4)),
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
