"""The dense layer's large products as fixed units (the forward one: metricfit.cnn._dense_kernels
on numba's threads or the pool): the plain products' values, the same bits on every thread
count and launcher, and the NumPy form where the units cannot run."""

import numpy as np
import pytest

from metricfit import parallel
from metricfit.cnn import num_threads
from metricfit.cnn._dense_kernels import BLOCK_OUT, ROWS, forward_unit_count
from metricfit.cnn.layers import GEMM_SPLIT, dense_backward, dense_forward
from metricfit.cnn.threads import DRIVER_MIN_THREADS


def _problem(dtype, n=37, d_in=1125, d_out=250, seed=0):
    """37 images (two blocks of ROWS and 5 left), 250 outputs (7 blocks of BLOCK_OUT and 26)."""
    rng = np.random.default_rng(seed)
    X = np.tanh(rng.normal(size=(n, d_in))).astype(dtype)
    W = (rng.normal(size=(d_out, d_in)) / np.sqrt(d_in)).astype(dtype)
    b = rng.normal(size=d_out).astype(dtype)
    dY = rng.normal(size=(n, d_out)).astype(dtype)
    assert n * d_in * d_out >= GEMM_SPLIT  # the units run
    return X, W, b, dY


def _all(X, W, b, dY):
    dX, dW, db = dense_backward(X, W, dY)
    none, dW_only, _ = dense_backward(X, W, dY, input_grad=False)
    assert none is None
    return dense_forward(X, W, b), dX, dW, db, dW_only


def test_the_units_cover_the_blocks():
    assert (ROWS, BLOCK_OUT) == (16, 32)
    assert forward_unit_count(128, 250) == 8 * 8
    assert forward_unit_count(37, 250) == 3 * 8


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_units_give_the_plain_products(dtype):
    X, W, b, dY = _problem(dtype)
    Y, dX, dW, db, dW_only = _all(X, W, b, dY)
    tol = 2e-6 if dtype == np.float32 else 1e-14
    for got, want in ((Y, X @ W.T + b), (dX, dY @ W), (dW, dY.T @ X), (dW_only, dY.T @ X)):
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=tol * np.abs(want).max())
    np.testing.assert_array_equal(db, dY.sum(axis=0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_thread_count_and_launcher_gives_the_same_bits(dtype, monkeypatch):
    """1, 2 and 3 threads; the default (the pool under DRIVER_MIN_THREADS), the pool and
    numba's driver forced: the same bits, and the driver ran where it should."""
    from metricfit.cnn import _drivers

    X, W, b, dY = _problem(dtype, seed=1)
    with num_threads(1):
        first = _all(X, W, b, dY)
    ran, real_launch = [], parallel.launch

    def spy(driver, *args, **kwargs):
        ran.append(driver if real_launch(driver, *args, **kwargs) else None)
        return ran[-1] is not None

    monkeypatch.setattr("metricfit.cnn.threads.launch", spy)
    assert DRIVER_MIN_THREADS > 3
    for mode in ("", "pool", "numba"):
        monkeypatch.setenv("METRICFIT_KERNEL_THREADS", mode)
        numba_can = mode == "numba" and parallel.kernel_threads(2, 2) > 0  # thread-safe layer
        for n in (2, 3):
            ran.clear()
            with num_threads(n):
                for got, want in zip(_all(X, W, b, dY), first, strict=True):
                    np.testing.assert_array_equal(got, want)
            forward = _drivers.dense_forward_spans if numba_can else None
            assert ran == [forward]  # (the backward products: the pool, no driver asked)


def test_the_dw_given_is_written_and_returned():
    X, W, b, dY = _problem(np.float32, seed=2)
    dW = np.full(W.shape, np.nan, np.float32)
    _, got, _ = dense_backward(X, W, dY, dW=dW)
    assert got is dW
    np.testing.assert_array_equal(dW, dense_backward(X, W, dY)[1])


def test_mixed_dtypes_and_strided_inputs():
    """float64 weights on float32 inputs: the units in float64 (NumPy's result type), the
    same bits on 1 and 3 threads; a Fortran-ordered X: the same bits as a C-ordered one. The
    backward pass with a strided dW to write into: NumPy's blocks write it."""
    X, W, b, dY = _problem(np.float32, seed=3)
    W64 = W.astype(np.float64)
    with num_threads(1):
        Y = dense_forward(X, W64, b)
    with num_threads(3):
        np.testing.assert_array_equal(dense_forward(X, W64, b), Y)
    assert Y.dtype == np.float64
    np.testing.assert_array_equal(Y, dense_forward(X.astype(np.float64), W64,
                                                   b.astype(np.float64)))
    np.testing.assert_allclose(Y, X @ W64.T + b, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(dense_forward(np.asfortranarray(X), W, b),
                                  dense_forward(X, W, b))
    strided = np.zeros((W.shape[0], 2 * W.shape[1]), np.float32)[:, ::2]
    _, dW, _ = dense_backward(X, W, dY, dW=strided)
    assert dW is strided
    np.testing.assert_allclose(dW, dY.T @ X, rtol=0, atol=1e-5 * np.abs(dY.T @ X).max())


def test_integer_inputs_take_numpy_s_product():
    X = np.arange(37 * 1125).reshape(37, 1125) % 7
    W = np.ones((250, 1125), dtype=np.int64)
    np.testing.assert_array_equal(dense_forward(X, W, np.zeros(250, np.int64)), X @ W.T)
