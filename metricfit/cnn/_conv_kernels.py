r"""numba kernels of the LeNet-style convolution layer: valid 2-D convolution with a
connection table, optionally followed by tanh (:mod:`._squash`), forward and hand-written
backward (seed 000, section 3.2). See :mod:`._kernels` for the conventions.

The convolution is a *correlation*, as in convnets and ``scipy.signal.correlate2d(x, k,
'valid')``: for output map o and input map c (connected when ``table[o, c]``)

.. math::

    Y_{o}[r, q] = b_o + \sum_{c:\,T_{oc}} \sum_{u<k_h,\, v<k_w} W_{ocuv}\, X_c[r + u, q + v].

**The flat-row trick.** With the maps stored row-major, ``X_c[r + u, q + v]`` is
``x_c[(r w + q) + (u w + v)]`` for the flat map x_c of width w. So one kernel tap t = (u, v)
adds ``W_oct * x_c[off_t : off_t + span]`` to a flat accumulator ``acc[p]``, ``p = r w + q``,
with ``off_t = u w + v`` and ``span = (h_o - 1) w + w_o``: one long contiguous pass per tap
(395 to 2295 elements here) instead of ``h_o`` short rows of ``w_o`` (15 wide in C3, too short
for the vector units; PERF-NOTES). The entries of ``acc`` with ``q >= w_o`` wrap into the next
row and are discarded. Loops index *slices* (``xs = x[off:off + span]; xs[p]``): an index
``off + p`` makes numba emit a negative-index wrap-around test that blocks vectorisation.
:func:`metricfit._simd.correlate_sources` (used once the span holds four vectors) keeps a block of
four vectors of ``acc`` in registers while every connected input map and every tap adds to it
(source by source, tap by tap, in order), and writes each output once. Where a row holds
whole vectors with few lanes to spare (C3's 15 columns in one float32 vector; not C1's 40 in
three), :func:`._conv_rows.forward_by_rows` keeps blocks of six output *rows* in registers
instead: a loaded source vector then serves up to six rows, with the same sums in the same
order (the same bits); C3's forward pass is 1.5x faster. Shorter spans (small inputs) take
:func:`_correlate_add`: **eight taps per pass** over ``acc`` (``acc[p] += (w0
x0[p] + w1 x1[p]) + ... + (w6 x6[p] + w7 x7[p])``, a fixed bracketing, no re-association).

**Backward.** With upstream ``G = dL/dY`` spread on the same flat grid (``Ge``, zeros in the
wrap-around columns, so they contribute nothing):

.. math::

    \frac{\partial L}{\partial b_o} = \sum_{n,r,q} G_{no}[r,q], \qquad
    \frac{\partial L}{\partial W_{oct}} = \sum_n \sum_p Ge_{no}[p]\; x_{nc}[p + off_t],

    \frac{\partial L}{\partial x_{nc}}[m] = \sum_{o:\,T_{oc}} \sum_t W_{oct}\, Ge_{no}[m - off_t].

The input gradient is a *full* correlation with the flipped kernel: with ``Ge`` padded by
``pad = (k_h - 1) w + k_w - 1`` zeros on both sides (``Gp``), ``dx_nc[m] = sum_o sum_t'
W_oc,T-1-t' Gp_no[m + off_t']`` for every m < h w (flipping u and v reverses the tap order,
and the offsets stay ``u' w + v'``). A column ``m - off_t`` that falls left of its row lands in
a wrap-around column of the row above, which is zero, so the flat formula is exact. It runs on
the same correlation as the forward pass and writes each ``dx_nc`` once (no scattered
``+=`` into dX, no zero fill of dX).

The weight gradient is a dot product per tap, and a float dot product only vectorises if its
additions may be re-associated (``fastmath``, banned in reductions here). It runs on
:func:`metricfit._simd.dot_taps_8`: eight taps' sums in vector registers, each lane summing the
products at positions ``p = l (mod lanes)`` over the images and positions in order, the lanes
added in order at the end (the order written in the code, not chosen by the compiler; 2.1x
faster than the loop below for C3, per chunk of 16 images). The bias gradient is the same dot
product against ones. Spans shorter than one vector take :func:`_weight_grad_tiled`:
``buf[tap, p] += Ge_no[p] x_nc[p + off]`` over the images n (a vectorised AXPY) in tiles of
``TILE`` = 128 positions, four images per pass, each ``buf`` row summed once at the end.
Where a row holds whole vectors with at most a quarter of lanes to spare and the kernel has
at most seven rows (six on AVX2; C3 and C1), the weight gradient runs in blocks of rows of Ge
instead (:func:`._conv_rows.weight_grad_pair`: each tap's lanes are then a row's columns,
another order of the sums); the input gradient takes
three input maps at a time where they share their output maps (:mod:`._conv_groups`, the
same bits).

**Memory.** The backward pass writes the padded grid ``Gp`` only at its valid positions:
the caller provides it zeroed, and a buffer reused from one training step to the next
(:class:`._workspace.Workspace`) stays zero elsewhere.

"""

import numpy as np
from numba import njit

from .._simd import (
    BLOCK_VECTORS,
    GROUP_OUTPUTS,
    GROUP_OUTPUTS_WIDE,
    VECTOR_BYTES,
    correlate_group_3,
    correlate_group_5,
    correlate_sources,
    dot_taps_1,
)
from ._conv_groups import input_grad_grouped
from ._conv_rows import (
    SPARE_LANES,
    forward_by_rows,
    images_by_rows,
    input_grad_by_rows,
    weight_grad_pair,
)
from ._squash import write_output

TILE = 128  # flat positions per tile of the weight gradient: 49 taps x 128 x 4 B = 25 KB

__all__ = ["conv2d_forward", "conv2d_forward_into", "conv2d_backward",
           "conv2d_backward_into", "grid_shape"]


@njit(cache=True, nogil=True)
def _tap_offsets(kh, kw, w):  # pragma: no cover (compiled)
    """``off[u kw + v] = u w + v``: flat offset of each kernel tap in maps of width w."""
    offs = np.empty(kh * kw, np.int64)
    for u in range(kh):
        for v in range(kw):
            offs[u * kw + v] = u * w + v
    return offs


@njit(cache=True, nogil=True)
def _correlate_add(x, taps, offs, acc):  # pragma: no cover (compiled)
    """``acc[p] += sum_t taps[t] x[offs[t] + p]`` for p < acc.size, eight taps per pass over
    ``acc`` (then four, then one at a time: 36 taps = 4 x 8 + 4), in a fixed order."""
    size, n_taps, t = acc.size, taps.size, 0
    while t + 8 <= n_taps:
        w0, w1, w2, w3 = taps[t], taps[t + 1], taps[t + 2], taps[t + 3]
        w4, w5, w6, w7 = taps[t + 4], taps[t + 5], taps[t + 6], taps[t + 7]
        x0 = x[offs[t]:offs[t] + size]
        x1 = x[offs[t + 1]:offs[t + 1] + size]
        x2 = x[offs[t + 2]:offs[t + 2] + size]
        x3 = x[offs[t + 3]:offs[t + 3] + size]
        x4 = x[offs[t + 4]:offs[t + 4] + size]
        x5 = x[offs[t + 5]:offs[t + 5] + size]
        x6 = x[offs[t + 6]:offs[t + 6] + size]
        x7 = x[offs[t + 7]:offs[t + 7] + size]
        for p in range(size):
            acc[p] += (((w0 * x0[p] + w1 * x1[p]) + (w2 * x2[p] + w3 * x3[p]))
                       + ((w4 * x4[p] + w5 * x5[p]) + (w6 * x6[p] + w7 * x7[p])))
        t += 8
    if t + 4 <= n_taps:
        w0, w1, w2, w3 = taps[t], taps[t + 1], taps[t + 2], taps[t + 3]
        x0 = x[offs[t]:offs[t] + size]
        x1 = x[offs[t + 1]:offs[t + 1] + size]
        x2 = x[offs[t + 2]:offs[t + 2] + size]
        x3 = x[offs[t + 3]:offs[t + 3] + size]
        for p in range(size):
            acc[p] += (w0 * x0[p] + w1 * x1[p]) + (w2 * x2[p] + w3 * x3[p])
        t += 4
    while t < n_taps:
        w0 = taps[t]
        x0 = x[offs[t]:offs[t] + size]
        for p in range(size):
            acc[p] += w0 * x0[p]
        t += 1


def conv2d_forward(X, W, b, table, squash=False):
    """Valid, stride-1 correlation of many maps through a connection table (then tanh when
    ``squash``): one call of :func:`conv2d_forward_into` on the whole batch.

    Parameters
    ----------
    X : ndarray of shape (n, c_in, h, w)
    W : ndarray of shape (c_out, c_in, kh, kw)
        Entries of unconnected (o, c) are never read.
    b : ndarray of shape (c_out,)
    table : ndarray of shape (c_out, c_in), bool or uint8
        ``table[o, c]`` true when output map o reads input map c.
    squash : bool, default=False
        Return ``tanh`` of the correlation.

    Returns
    -------
    Y : ndarray of shape (n, c_out, h - kh + 1, w - kw + 1), the dtype of X
    """
    n, c_in, h, w = X.shape
    c_out, _, kh, kw = W.shape
    Y = np.empty((n, c_out, h - kh + 1, w - kw + 1), X.dtype)
    conv2d_forward_into(X, W.astype(X.dtype), b.astype(X.dtype), table, Y, squash)
    return Y


@njit(cache=True, nogil=True)
def _same_inputs(table, o, count):  # pragma: no cover (compiled)
    """Whether output maps o, ..., o + count - 1 read the same input maps."""
    for j in range(1, count):
        for c in range(table.shape[1]):
            if table[o + j, c] != table[o, c]:
                return False
    return True


@njit(cache=True, nogil=True)
def _group_size(table, o):  # pragma: no cover (compiled)
    """How many output maps from o on go through one correlation: ``GROUP_OUTPUTS_WIDE`` (5)
    or ``GROUP_OUTPUTS`` (3) when that many read the same inputs as o, else 1."""
    c_out = table.shape[0]
    if o + GROUP_OUTPUTS_WIDE <= c_out and _same_inputs(table, o, GROUP_OUTPUTS_WIDE):
        return GROUP_OUTPUTS_WIDE
    if o + GROUP_OUTPUTS <= c_out and _same_inputs(table, o, GROUP_OUTPUTS):
        return GROUP_OUTPUTS
    return 1


@njit(cache=True, nogil=True)
def conv2d_forward_into(X, W, b, table, Y, squash):  # pragma: no cover (compiled)
    """:func:`conv2d_forward` written into ``Y`` of shape (n, c_out, ho, wo). Output maps that
    read the same inputs go five or three at a time through
    :func:`metricfit._simd.correlate_group_5` or ``correlate_group_3`` (each loaded input
    vector serves all of them: C1's 15 maps, C3's last maps, which read every input;
    :func:`_group_size`), the others one at a time through
    :func:`metricfit._simd.correlate_sources`; small spans through :func:`_correlate_add`.
    Before them, :func:`._conv_rows.forward_by_rows` takes the images whose rows it suits
    (module docstring; the same bits)."""
    n, c_in, h, w = X.shape
    c_out, _, kh, kw = W.shape
    ho, wo = h - kh + 1, w - kw + 1
    span = (ho - 1) * w + wo
    X3 = X.reshape(n, c_in, h * w)
    taps = np.ascontiguousarray(W).reshape(c_out, c_in, kh * kw)
    offs = _tap_offsets(kh, kw, w)
    acc = np.empty((GROUP_OUTPUTS_WIDE, span), X.dtype)
    out = np.empty(span, X.dtype)
    blocked = span >= BLOCK_VECTORS * VECTOR_BYTES // X.itemsize
    X_flat, W_flat, acc_flat = X3.reshape(X3.size), taps.reshape(taps.size), acc.reshape(acc.size)
    inputs, starts = np.empty(c_in, np.int64), np.empty(c_in, np.int64)
    tap_starts = np.empty(GROUP_OUTPUTS_WIDE * c_in, np.int64)
    acc_starts = np.arange(GROUP_OUTPUTS_WIDE) * span
    lanes = VECTOR_BYTES // X.itemsize
    by_rows = images_by_rows(n, wo, w, lanes, SPARE_LANES) if blocked else 0
    if by_rows:
        forward_by_rows(X_flat, taps.reshape(taps.size), b, table, Y, squash, (c_in, h, w),
                        kh, kw, by_rows, out)
    for i in range(by_rows, n):
        o = 0
        while o < c_out:
            if not blocked:
                acc[0] = 0
                for c in range(c_in):
                    if table[o, c]:
                        _correlate_add(X3[i, c], taps[o, c], offs, acc[0])
                write_output(acc[0], b[o], out, Y[i, o], w, squash)
                o += 1
                continue
            group = _group_size(table, o)
            k = 0
            for c in range(c_in):
                if table[o, c]:
                    inputs[k] = c
                    k += 1
            for s in range(k):
                starts[s] = (i * c_in + inputs[s]) * h * w
                for j in range(group):  # tap_starts: a (group, k) matrix
                    tap_starts[j * k + s] = ((o + j) * c_in + inputs[s]) * kh * kw
            if group == GROUP_OUTPUTS_WIDE:
                correlate_group_5(X_flat, starts[:k], W_flat, tap_starts[:group * k], kh * kw,
                                  offs, span, acc_flat, acc_starts)
            elif group == GROUP_OUTPUTS:
                correlate_group_3(X_flat, starts[:k], W_flat, tap_starts[:group * k], kh * kw,
                                  offs, span, acc_flat, acc_starts)
            else:
                correlate_sources(X_flat, starts[:k], W_flat, tap_starts[:k], kh * kw, offs,
                                  span, acc_flat, acc_starts[:1])
            for j in range(group):
                write_output(acc[j], b[o + j], out, Y[i, o + j], w, squash)
            o += group


@njit(cache=True, nogil=True)
def _spread_into(dY, Y, w, pad, Gp):  # pragma: no cover (compiled)
    """``dL/d(pre-activation)`` on the flat grid of row width w, zero-padded by ``pad`` on each
    side, written into ``Gp`` of shape (n, c, span + 2 pad) at the valid positions only (its
    wrap-around columns and pads are left as they are: zeros that the caller provides, once);
    returns its per-map sums (the bias gradient, :func:`_bias_grad`). ``Y`` is the squashed
    output (its tanh' = 1 - Y^2 multiplies dY), or empty when the layer has no tanh."""
    _spread(dY, Y, w, pad, Gp)
    db = np.zeros(dY.shape[1], dY.dtype)
    _bias_grad(Gp, pad, 0, dY.shape[1], db)
    return db


@njit(cache=True, nogil=True)
def _spread(dY, Y, w, pad, Gp):  # pragma: no cover (compiled)
    """The spread of :func:`_spread_into` alone (no sums): every image and map of dY."""
    n, c_out, ho, wo = dY.shape
    span = (ho - 1) * w + wo
    squash = Y.size > 0
    for i in range(n):
        for o in range(c_out):
            ge = Gp[i, o, pad:pad + span]
            for r in range(ho):
                dy = dY[i, o, r]
                row = ge[r * w:r * w + wo]
                if squash:
                    y = Y[i, o, r]
                    for q in range(wo):
                        row[q] = dy[q] * (1 - y[q] * y[q])
                else:
                    for q in range(wo):
                        row[q] = dy[q]


@njit(cache=True, nogil=True)
def _bias_grad(Gp, pad, o0, o1, db):  # pragma: no cover (compiled)
    """``db[o] = sum over the images and valid positions of Gp[:, o]`` for o0 <= o < o1 (a
    vector dot product with ones, :func:`metricfit._simd.dot_taps_1`, when the span holds a vector;
    else per-image sums added in image order)."""
    n, c_out, width = Gp.shape
    span = width - 2 * pad
    if span >= VECTOR_BYTES // Gp.itemsize:
        ones, zero_offset = np.ones(span, Gp.dtype), np.zeros(1, np.int64)
        for o in range(o0, o1):  # db[o] = sum of Ge[n, o] . ones over the images (x_step 0)
            dot_taps_1(Gp.reshape(Gp.size), ones, o * width + pad, 0, span, zero_offset, 0, n,
                       c_out * width, 0, db[o:o + 1], 0)
    else:
        for o in range(o0, o1):
            db[o] = 0
        for i in range(n):
            for o in range(o0, o1):
                total = db[o] * 0
                for p in range(span):
                    total += Gp[i, o, pad + p]
                db[o] += total


@njit(cache=True, nogil=True)
def _weight_grad(X3, Gp, pad, table, kh, kw, w):  # pragma: no cover (compiled)
    """``dW[o, c, u, v] = sum_n sum_p Ge[n, o, p] X3[n, c, p + u w + v]`` (Ge = the unpadded
    part of Gp), every output map: :func:`_weight_grad_maps` into a new zero array."""
    c_out, c_in = Gp.shape[1], X3.shape[1]
    dW = np.zeros((c_out, c_in, kh * kw), X3.dtype)
    _weight_grad_maps(X3, Gp, pad, table, kh, kw, w, 0, c_out, dW)
    return dW.reshape(c_out, c_in, kh, kw)


@njit(cache=True, nogil=True)
def _weight_grad_maps(X3, Gp, pad, table, kh, kw, w, o0, o1, dW):  # pragma: no cover
    """The weight gradient of the output maps o0 <= o < o1 written into ``dW`` (c_out, c_in,
    kh kw) at the connected (o, c) (the others are not touched): each pair by
    :func:`._conv_rows.weight_grad_pair` (blocks of rows where they suit, else eight taps at a
    time, :func:`metricfit._simd.dot_taps_8`), or :func:`_weight_grad_tiled` when the span is
    shorter than one vector."""
    n, c_in, hw = X3.shape
    c_out, width = Gp.shape[1], Gp.shape[2]
    span = width - 2 * pad
    if span < VECTOR_BYTES // X3.itemsize:
        _weight_grad_tiled(X3, Gp, pad, table, kh, kw, w, o0, o1, dW)
        return
    offs = _tap_offsets(kh, kw, w)
    G_flat, X_flat = Gp.reshape(Gp.size), X3.reshape(X3.size)
    for o in range(o0, o1):
        for c in range(c_in):
            if table[o, c]:
                weight_grad_pair(G_flat, X_flat, (o * width + pad, c * hw), n,
                                 (c_out * width, c_in * hw), w, span, kh, kw, offs, dW[o, c])


@njit(cache=True, nogil=True)
def _weight_grad_tiled(X3, Gp, pad, table, kh, kw, w, o0, o1, dW):  # pragma: no cover
    """:func:`_weight_grad_maps` for spans under one vector: element-wise accumulation in
    ``buf``, then one row sum per tap (module docstring). The flat positions p are taken in
    tiles of ``TILE``, all accumulated into the same ``TILE``-wide ``buf`` (the sum runs over p
    anyway), so ``buf`` stays in L1; four images per pass over ``buf``."""
    n, c_in, _ = X3.shape
    span = Gp.shape[2] - 2 * pad
    n_taps = kh * kw
    offs = _tap_offsets(kh, kw, w)
    buf = np.empty((n_taps, TILE), X3.dtype)
    for o in range(o0, o1):
        for c in range(c_in):
            if not table[o, c]:
                continue
            buf[:] = 0
            i = 0
            while i + 4 <= n:  # (separate 1-D arguments: 2-D slices would not be contiguous)
                _weight_grad_4(X3[i, c], X3[i + 1, c], X3[i + 2, c], X3[i + 3, c],
                               Gp[i, o, pad:pad + span], Gp[i + 1, o, pad:pad + span],
                               Gp[i + 2, o, pad:pad + span], Gp[i + 3, o, pad:pad + span],
                               offs, buf)
                i += 4
            while i < n:
                _weight_grad_1(X3[i, c], Gp[i, o, pad:pad + span], offs, buf)
                i += 1
            for t in range(n_taps):
                row = buf[t]
                total = row[0] * 0
                for p in range(TILE):
                    total += row[p]
                dW[o, c, t] = total


@njit(cache=True, nogil=True)
def _weight_grad_4(xa, xb, xc, xd, g0, g1, g2, g3, offs, buf):  # pragma: no cover (compiled)
    """``buf[t, p % TILE] += sum over the 4 images of g[p] x[p + offs[t]]`` (fixed order)."""
    span = g0.size
    for start in range(0, span, TILE):
        size = min(TILE, span - start)
        ga, gb = g0[start:start + size], g1[start:start + size]
        gc, gd = g2[start:start + size], g3[start:start + size]
        for t in range(offs.size):
            lo = start + offs[t]
            a, b = xa[lo:lo + size], xb[lo:lo + size]
            c, d = xc[lo:lo + size], xd[lo:lo + size]
            row = buf[t]
            for p in range(size):
                row[p] += (ga[p] * a[p] + gb[p] * b[p]) + (gc[p] * c[p] + gd[p] * d[p])


@njit(cache=True, nogil=True)
def _weight_grad_1(x, g, offs, buf):  # pragma: no cover (compiled)
    """:func:`_weight_grad_4` for one image (the rest of a batch not divisible by 4)."""
    span = g.size
    for start in range(0, span, TILE):
        size = min(TILE, span - start)
        gs = g[start:start + size]
        for t in range(offs.size):
            xs = x[start + offs[t]:start + offs[t] + size]
            row = buf[t]
            for p in range(size):
                row[p] += gs[p] * xs[p]


@njit(cache=True, nogil=True)
def _input_grad_into(W, Gp, table, w, dX):  # pragma: no cover (compiled)
    """``dX[n, c] = sum_o full correlation of Gp[n, o] with the flipped W[o, c]`` (module
    docstring), into the flat maps ``dX`` (n, c_in, h w) of width w; every entry written."""
    n, c_out, _ = Gp.shape
    c_in, kh, kw = W.shape[1], W.shape[2], W.shape[3]
    n_taps = kh * kw
    flipped = np.zeros((c_out, c_in, n_taps), W.dtype)  # tap t' of the flipped kernel
    for o in range(c_out):  # (zero where the table is false: ._conv_groups reads them)
        for c in range(c_in):
            for t in range(n_taps * (table[o, c] != 0)):
                flipped[o, c, t] = W[o, c, (n_taps - 1 - t) // kw, (n_taps - 1 - t) % kw]
    offs = _tap_offsets(kh, kw, w)
    hw, width = dX.shape[2], Gp.shape[2]
    lanes = VECTOR_BYTES // Gp.itemsize
    if hw >= BLOCK_VECTORS * lanes and images_by_rows(n, w, w, lanes, SPARE_LANES) == n:
        input_grad_by_rows(flipped, Gp, table, kh, kw, w, dX)
        return
    if hw >= BLOCK_VECTORS * lanes:
        G_flat, taps, dX_flat = Gp.reshape(Gp.size), flipped.reshape(flipped.size), dX.reshape(
            dX.size)
        input_grad_grouped(G_flat, taps, table, offs, hw, dX_flat, n, width)
        return
    for i in range(n):
        for c in range(c_in):
            acc = dX[i, c]
            acc[:] = 0
            for o in range(c_out):
                if table[o, c]:
                    _correlate_add(Gp[i, o], flipped[o, c], offs, acc)


def conv2d_backward(X, W, table, dY, input_grad, Y=None):
    """Gradients of :func:`conv2d_forward` for the upstream gradient ``dY = dL/dY``: one call of
    :func:`conv2d_backward_into` on the whole batch.

    Parameters
    ----------
    X, W, table
        As given to :func:`conv2d_forward`.
    dY : ndarray of shape (n, c_out, ho, wo)
    input_grad : bool
        Compute dL/dX (False for the first layer, whose input is the data).
    Y : ndarray of shape (n, c_out, ho, wo), optional
        The output of ``conv2d_forward(..., squash=True)``: dY is then the gradient of the
        squashed output. None: no tanh.

    Returns
    -------
    dX : ndarray of shape (n, c_in, h, w), or shape (0, 0, 0, 0) when not ``input_grad``
    dW : ndarray of shape (c_out, c_in, kh, kw), zero where the table is false
    db : ndarray of shape (c_out,)
    """
    n, c_in, h, w = X.shape
    dX = np.empty((n, c_in, h, w) if input_grad else (0, 0, 0, 0), X.dtype)
    Y = np.empty((0, 0, 0, 0), X.dtype) if Y is None else Y
    Gp = np.zeros(grid_shape(X.shape, W.shape, input_grad), X.dtype)
    dW, db = conv2d_backward_into(X, W.astype(X.dtype), table, dY, Y, dX, Gp)
    return dX, dW, db


def grid_shape(x_shape, w_shape, input_grad):
    """Shape ``(n, c_out, span + 2 pad)`` of the padded flat grid of upstream gradients that
    :func:`conv2d_backward_into` takes (zeros; ``pad = 0`` without ``input_grad``: the pads
    serve the input gradient only)."""
    n, _, h, w = x_shape
    c_out, _, kh, kw = w_shape
    span = (h - kh) * w + w - kw + 1
    pad = (kh - 1) * w + kw - 1 if input_grad else 0
    return (n, c_out, span + 2 * pad)


@njit(cache=True, nogil=True)
def conv2d_backward_into(X, W, table, dY, Y, dX, Gp):  # pragma: no cover (compiled)
    """:func:`conv2d_backward` with dL/dX written into ``dX`` (n, c_in, h, w); an empty dX
    (size 0) skips it, an empty Y means no tanh. ``Gp``: a zero array of
    :func:`grid_shape` (only its valid positions are written, so a buffer reused from one
    call to the next stays zero elsewhere). Returns ``(dW, db)``."""
    n, c_in, h, w = X.shape
    kh, kw = W.shape[2], W.shape[3]
    pad = (Gp.shape[2] - (h - kh) * w - (w - kw + 1)) // 2
    db = _spread_into(dY, Y, w, pad, Gp)
    dW = _weight_grad(X.reshape(n, c_in, h * w), Gp, pad, table, kh, kw, w)
    if dX.size > 0:
        _input_grad_into(W, Gp, table, w, dX.reshape(n, c_in, h * w))
    return dW, db
