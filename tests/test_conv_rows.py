"""The convolution's correlation in blocks of output rows (metricfit.cnn._conv_rows): the same
bits as the flat blocks of metricfit._simd.correlate_sources, and the forward pass and input
gradient that use it the same bits as those written with the flat blocks alone, at every
block size the target picks (test_simd runs this file compiled for AVX2 and for no FMA)."""

import numpy as np
import pytest
from numba import njit

from metricfit import _simd
from metricfit.cnn import _conv_kernels, _conv_rows
from metricfit.cnn._squash import write_output
from metricfit.cnn.layers import lenet_table

LANES = {np.float32: _simd.lanes_of(4), np.float64: _simd.lanes_of(8)}


@njit(cache=False)
def _flat(src, starts, taps, tap_starts, kh, kw, w, size, out, out_start):  # pragma: no cover
    """The flat blocks: ``size`` positions of row width w from ``out_start``."""
    offs = _conv_kernels._tap_offsets(kh, kw, w)
    _simd.correlate_sources(src, starts, taps, tap_starts, kh * kw, offs, size, out,
                            np.full(1, out_start, np.int64))


@njit(cache=False)
def _flat_forward(X, W, b, table, squash):  # pragma: no cover (compiled)
    """conv2d_forward with the flat blocks alone, output map by output map."""
    n, c_in, h, w = X.shape
    c_out, _, kh, kw = W.shape
    ho, wo = h - kh + 1, w - kw + 1
    span = (ho - 1) * w + wo
    Y = np.empty((n, c_out, ho, wo), X.dtype)
    acc, out = np.empty(span, X.dtype), np.empty(span, X.dtype)
    X_flat, taps = X.reshape(X.size), W.reshape(W.size)
    starts, tap_starts = np.empty(c_in, np.int64), np.empty(c_in, np.int64)
    for i in range(n):
        for o in range(c_out):
            k = 0
            for c in range(c_in):
                if table[o, c]:
                    starts[k], tap_starts[k] = (i * c_in + c) * h * w, (o * c_in + c) * kh * kw
                    k += 1
            _flat(X_flat, starts[:k], taps, tap_starts[:k], kh, kw, w, span, acc, 0)
            write_output(acc, b[o], out, Y[i, o], w, squash)
    return Y


@njit(cache=False)
def _rows(src, starts, taps, tap_starts, k, w, n_rows, cols, out, out_cols):  # pragma: no cover
    """The row blocks, ``cols.size`` (1 to 3) column vectors a call."""
    if cols.size == 1:
        _conv_rows.correlate_rows_1(src, starts, taps, tap_starts, k, k, w, n_rows, cols, out, 0,
                                    w, out_cols)
    elif cols.size == 2:
        _conv_rows.correlate_rows_2(src, starts, taps, tap_starts, k, k, w, n_rows, cols, out, 0,
                                    w, out_cols)
    else:
        _conv_rows.correlate_rows_3(src, starts, taps, tap_starts, k, k, w, n_rows, cols, out, 0,
                                    w, out_cols)


def _sources(dtype, h, w, k, n_src, rng, spare=64):
    src = rng.normal(size=n_src * h * w + spare).astype(dtype)
    taps = rng.normal(size=n_src * k * k).astype(dtype)
    return src, np.arange(n_src) * h * w, taps, np.arange(n_src) * k * k


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("h, w, k, n_src", [
    (25, 20, 6, 4),   # C3's forward: 20 rows, blocks of 6 (the last overlapping)
    (56, 46, 7, 1),   # C1's: 50 rows of 40 columns
    (31, 40, 6, 3),   # 26 rows: blocks of 6 (or 2), one at the end overlapping
    (12, 40, 3, 2),   # a kernel smaller than a block: rows one at a time
    (7, 40, 6, 2),    # two output rows, fewer than a block
])
@pytest.mark.parametrize("n_cols", [1, 2, 3])
def test_row_blocks_are_the_flat_blocks_bit_for_bit(dtype, h, w, k, n_src, n_cols):
    """Column vectors of one row (the last overlapping) or of other maps' rows, one to three at
    a call: every output the flat blocks' bits, nothing written outside the rows' columns."""
    rng = np.random.default_rng(h + w + k + n_src + n_cols)
    lanes, ho, wo = LANES[dtype], h - k + 1, w - k + 1
    src, starts, taps, tap_starts = _sources(dtype, h, w, k, n_src, rng)
    size = (ho - 1) * w + wo
    want = np.zeros(size, dtype)
    _flat(src, starts, taps, tap_starts, k, k, w, size, want, 0)
    want = np.stack([want[r * w:r * w + wo] for r in range(ho)])
    cols = _conv_rows.column_starts(wo, lanes)
    reach = cols[-1] + lanes  # wo, or one vector past a shorter row (into its wrap columns)
    assert reach == max(wo, lanes) <= w
    got = np.full(size + w, np.nan, dtype)
    for first in range(0, cols.size, n_cols):
        chunk = cols[first:first + n_cols]
        chunk = np.concatenate([chunk, np.repeat(chunk[-1:], n_cols - chunk.size)])
        _rows(src, starts, taps, tap_starts, k, w, ho, chunk, got, chunk)
    grid = got[:ho * w].reshape(ho, w)
    np.testing.assert_array_equal(grid[:, :wo], want)
    assert np.isnan(grid[:, reach:]).all() and np.isnan(got[ho * w:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_vectors_of_other_images_share_the_taps(dtype):
    """Three images' rows in one call (the column offsets one image apart), a row one vector
    wide: each image's bits as on its own."""
    rng = np.random.default_rng(3)
    h, k, n_src = 25, 6, 3
    w = LANES[dtype] + k - 1
    ho, wo = h - k + 1, w - k + 1
    images = [_sources(dtype, h, w, k, n_src, rng, spare=0) for _ in range(3)]
    src = np.concatenate([s for s, *_ in images] + [np.zeros(64, dtype)])
    starts, taps, tap_starts = images[0][1], images[0][2], images[0][3]
    step, out_step = n_src * h * w, ho * w + 64
    got = np.zeros(3 * out_step, dtype)
    _rows(src, starts, taps, tap_starts, k, w, ho, np.arange(3) * step, got,
          np.arange(3) * out_step)
    size = (ho - 1) * w + wo
    for j in range(3):
        want = np.zeros(size, dtype)
        _flat(src, starts + j * step, taps, tap_starts, k, k, w, size, want, 0)
        for r in range(ho):
            np.testing.assert_array_equal(got[j * out_step + r * w:][:wo],
                                          want[r * w:r * w + wo])


def test_column_starts_and_spare_lanes():
    np.testing.assert_array_equal(_conv_rows.column_starts(15, 16), [0])
    np.testing.assert_array_equal(_conv_rows.column_starts(40, 16), [0, 16, 24])
    np.testing.assert_array_equal(_conv_rows.column_starts(32, 16), [0, 16])
    np.testing.assert_array_equal(_conv_rows.column_starts(15, 8), [0, 7])
    few, spare = _conv_rows.few_spare_lanes, _conv_rows.SPARE_LANES
    assert few(15, 16, spare) and few(32, 16, spare)
    assert not few(40, 16, spare)  # C1: three vectors for 40 columns
    assert not few(20, 16, spare)  # C3's input gradient: two for 20
    assert few(46, 16, spare) and few(15, 8, spare)
    weight = _conv_rows.WEIGHT_SPARE_LANES  # the weight gradient: C1's 40, not 37 or 20
    assert few(40, 16, weight) and not few(37, 16, weight) and not few(20, 16, weight)


def _layer(dtype, n, c_in, c_out, h, w, k, table, rng):
    X = rng.normal(size=(n, c_in, h, w)).astype(dtype)
    W = (0.3 * rng.normal(size=(c_out, c_in, k, k))).astype(dtype)
    return X, W, rng.normal(size=c_out).astype(dtype), table


LAYERS = {  # (n, c_in, c_out, h, w, k, table)
    "C3": (7, 15, 45, 25, 20, 6, lenet_table(15, 45)),  # 15 columns: rows (the last image flat)
    "C1": (5, 1, 15, 56, 46, 7, np.ones((15, 1), bool)),  # 40 columns: flat, three outputs
    "C3 of 62x47": (4, 15, 45, 28, 20, 6, lenet_table(15, 45)),
    "16 columns": (3, 4, 5, 22, 21, 6, np.ones((5, 4), bool)),  # float32: one exact vector
    "digits": (6, 2, 3, 6, 6, 2, np.ones((3, 2), bool)),  # small spans: the plain loop
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layer", list(LAYERS))
@pytest.mark.parametrize("squash", [True, False])
def test_forward_pass_is_the_flat_blocks_bit_for_bit(dtype, layer, squash):
    """conv2d_forward (rows where they suit, flat blocks elsewhere) against the flat blocks
    alone, and against scipy's correlation; one image at a time gives the same bits."""
    from scipy.signal import correlate2d

    rng = np.random.default_rng(len(layer))
    X, W, b, table = _layer(dtype, *LAYERS[layer], rng)
    got = _conv_kernels.conv2d_forward(X, W, b, table, squash)
    if layer != "digits":  # (the plain loop brackets its taps in eights: other bits)
        np.testing.assert_array_equal(got, _flat_forward(X, W, b, table, squash))
    for i in range(X.shape[0]):
        np.testing.assert_array_equal(
            _conv_kernels.conv2d_forward(X[i:i + 1], W, b, table, squash)[0], got[i])
    i, o = X.shape[0] - 1, W.shape[0] - 1
    pre = b[o] + sum(correlate2d(X[i, c].astype(np.float64), W[o, c].astype(np.float64),
                                 "valid") for c in np.flatnonzero(table[o]))
    np.testing.assert_allclose(got[i, o], np.tanh(pre) if squash else pre,
                               rtol=2e-4 if dtype == np.float32 else 1e-12, atol=2e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layer", ["C1", "C3", "16 columns"])
def test_input_gradient_is_the_flat_blocks_bit_for_bit(dtype, layer):
    """The input gradient (rows where a row holds its vectors with few lanes to spare: C1's 46
    columns; flat blocks for C3's 20) against the flat blocks alone."""
    rng = np.random.default_rng(7)
    X, W, _, table = _layer(dtype, *LAYERS[layer], rng)
    n, c_in, h, w = X.shape
    c_out, _, k, _ = W.shape
    Gp = np.zeros(_conv_kernels.grid_shape(X.shape, W.shape, True), dtype)
    pad = (k - 1) * w + k - 1
    span = Gp.shape[2] - 2 * pad
    for i in range(n):
        for o in range(c_out):
            Gp[i, o, pad:pad + span] = rng.normal(size=span)
            Gp[i, o, pad:pad + span].reshape(-1)[np.arange(span) % w >= w - k + 1] = 0
    got = np.full((n, c_in, h * w), np.nan, dtype)
    _conv_kernels._input_grad_into(W, Gp, table, w, got)
    flipped = W[:, :, ::-1, ::-1].reshape(c_out, c_in, k * k).copy()
    want = np.empty_like(got)
    G_flat = Gp.reshape(-1)
    for i in range(n):
        for c in range(c_in):
            outs = np.flatnonzero(table[:, c])
            _flat(G_flat, (i * c_out + outs) * Gp.shape[2], flipped.reshape(-1),
                  (outs * c_in + c) * k * k, k, k, w, h * w, want.reshape(-1),
                  (i * c_in + c) * h * w)
    np.testing.assert_array_equal(got, want)


def _grid(dtype, n, c_out, ho, wo, w, pad, rng):
    """A padded flat grid of upstream gradients (n, c_out, span + 2 pad): zeros in the pads
    and the wrap-around columns, as the spread writes it."""
    span = (ho - 1) * w + wo
    Gp = np.zeros((n, c_out, span + 2 * pad), dtype)
    rows = np.zeros((n, c_out, ho, w), dtype)
    rows[..., :wo] = rng.normal(size=(n, c_out, ho, wo))
    Gp[:, :, pad:pad + span] = rows.reshape(n, c_out, ho * w)[..., :span]
    return Gp, rows[..., :wo]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, h, w, k", [
    (5, 25, 20, 6),   # C3: rows (15 columns, the last image flat in float32)
    (3, 56, 46, 7),   # C1: a 7-row kernel (one pass on AVX-512), 40 columns: rows
    (4, 22, 21, 6),   # 16 columns: one whole float32 vector, two float64
    (1, 25, 20, 6),   # one image: flat where a row is short
    (3, 31, 40, 4),   # 37 columns: flat (3 vectors of 16 for 37)
    (2, 40, 13, 5),   # float64: one vector for 9 columns (rows), 36 rows, blocks + the rest
])
def test_weight_rows_against_numpy(dtype, n, h, w, k):
    """The weight gradient (rows where they suit, flat elsewhere) against float64 NumPy, and
    each pair's rows against the flat form's sums (to rounding: the order differs)."""
    from scipy.signal import correlate2d

    rng = np.random.default_rng(n * h + w * k)
    c_in, c_out = 2, 3
    X = rng.normal(size=(n, c_in, h, w)).astype(dtype)
    ho, wo, pad = h - k + 1, w - k + 1, 0
    Gp, G = _grid(dtype, n, c_out, ho, wo, w, pad, rng)
    table = np.ones((c_out, c_in), bool)
    got = _conv_kernels._weight_grad(X.reshape(n, c_in, h * w), Gp, pad, table, k, k, w)
    want = np.array([[sum(correlate2d(X[i, c].astype(np.float64), G[i, o].astype(np.float64),
                                      "valid") for i in range(n)) for c in range(c_in)]
                     for o in range(c_out)])
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    flat = np.empty(k * k, dtype)
    _conv_rows.weight_grad_flat(Gp.reshape(-1), X.reshape(-1), (0, 0), n,
                                (c_out * Gp.shape[2], c_in * h * w), Gp.shape[2] - 2 * pad,
                                _conv_kernels._tap_offsets(k, k, w), flat)
    np.testing.assert_allclose(got[0, 0].ravel(), flat, rtol=tol, atol=tol * np.abs(flat).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(4))
def test_input_maps_in_threes_are_the_flat_blocks_bit_for_bit(dtype, seed):
    """Random connection tables (some triples share their output maps, some do not, some
    input maps are read by no output map): the input gradient's bits are those of one input
    map at a time."""
    from metricfit.cnn import _conv_groups

    rng = np.random.default_rng(seed)
    table = rng.random((9, 7)) < [0.9, 0.6, 0.3, 0.1][seed]
    layer = (3, 7, 9, 12, 21, 3, table)  # 21 columns: no rows in either dtype
    X, W, _, _ = _layer(dtype, *layer, rng)
    n, c_in, h, w = X.shape
    c_out, k = 9, 3
    pad = (k - 1) * w + k - 1
    Gp, _ = _grid(dtype, n, c_out, h - k + 1, w - k + 1, w, pad, rng)
    got = np.full((n, c_in, h * w), np.nan, dtype)
    _conv_kernels._input_grad_into(W, Gp, table, w, got)
    flipped = W[:, :, ::-1, ::-1].reshape(c_out, c_in, k * k).copy()
    want = np.zeros_like(got)
    for i in range(n):
        for c in range(c_in):
            outs = np.flatnonzero(table[:, c])
            if outs.size:
                _flat(Gp.reshape(-1), (i * c_out + outs) * Gp.shape[2], flipped.reshape(-1),
                      (outs * c_in + c) * k * k, k, k, w, h * w, want.reshape(-1),
                      (i * c_in + c) * h * w)
    np.testing.assert_array_equal(got, want)
    shared = [_conv_groups.shares_outputs(table, c, 3) for c in range(c_in - 2)]
    assert shared == [3 * table[:, c:c + 3].any(1).sum() <= 2 * table[:, c:c + 3].sum()
                      for c in range(c_in - 2)]


@pytest.mark.parametrize("squash", [False, True])
def test_row_blocks_and_triples_match_finite_differences(squash):
    """C3's shape in float64: the forward pass in row blocks (rows of 15 columns in two
    vectors; 19 output rows: three blocks of six, then one overlapping), the weight gradient
    in row blocks (two blocks of eight rows of Ge, then three rows one at a time), the input
    gradient three input maps at a time; dX, dW and db against central differences of
    L = sum(R * Y)."""
    from _reference import central_differences

    rng = np.random.default_rng(11)
    table = lenet_table(15, 45).astype(np.uint8)
    X = rng.normal(size=(2, 15, 24, 20))
    W = 0.2 * rng.normal(size=(45, 15, 6, 6))
    b = rng.normal(size=45)
    R = rng.normal(size=(2, 45, 19, 15))
    by_rows = _conv_rows.images_by_rows(2, 15, 20, LANES[np.float64], _conv_rows.SPARE_LANES)
    assert by_rows == 2  # rows, not flat

    def loss(_):
        return float((R * _conv_kernels.conv2d_forward(X, W, b, table, squash)).sum())

    Y = _conv_kernels.conv2d_forward(X, W, b, table, True) if squash else None
    dX, dW, db = _conv_kernels.conv2d_backward(X, W, table, R, True, Y)
    linked = np.flatnonzero(np.repeat(table.reshape(-1) != 0, 36))
    for x, g, positions in [(X, dX, rng.choice(X.size, 25, replace=False)),
                            (W, dW, rng.choice(linked, 25, replace=False)),
                            (b, db, np.arange(0, 45, 4))]:
        numeric = central_differences(loss, x, positions=positions, in_place=True)
        np.testing.assert_allclose(g.reshape(-1)[positions], numeric, rtol=1e-6, atol=1e-7)
