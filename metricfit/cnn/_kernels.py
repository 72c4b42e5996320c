r"""numba kernels of the LeNet-style layers: valid 2-D convolution with a connection table and
trainable subsampling, forward and hand-written backward (seed 000, section 3.2; LeCun et al.
1998, section II.B). Pure: arrays and scalars in, new arrays out (the ``*_into`` cores write
into an output array the caller owns, so that :mod:`._threads` can run them on slices of one
batch). Serial, ``cache=True``, ``nogil=True`` (threads run them side by side), compiled on first
use, no ``fastmath``.

Layout: a batch of feature maps is ``(n, channels, height, width)``, C-contiguous, float32 or
float64 (the output has the input's dtype).

The convolution is a *correlation*, as in convnets and ``scipy.signal.correlate2d(x, k,
'valid')``: for output map o and input map c (connected when ``table[o, c]``)

.. math::

    Y_{o}[r, q] = b_o + \sum_{c:\,T_{oc}} \sum_{u<k_h,\, v<k_w} W_{ocuv}\, X_c[r + u, q + v].

**The flat-row trick.** With the maps stored row-major, ``X_c[r + u, q + v]`` is
``x_c[(r w + q) + (u w + v)]`` for the flat map x_c of width w. So one kernel tap (u, v) adds
``W_ocuv * x_c[off : off + span]`` to a flat accumulator ``acc[p]``, ``p = r w + q``, with
``off = u w + v`` and ``span = (h_o - 1) w + w_o``: one long contiguous AXPY per tap (395 to 2295
elements here) instead of ``h_o`` short rows of ``w_o`` (15 wide in C3, too short for the
vector units; PERF-NOTES). The entries of ``acc`` with ``q >= w_o`` wrap into the next row and
are discarded. Loops index *slices* (``xs = x[off:off + span]; xs[p]``): an index ``off + p``
makes numba emit a negative-index wrap-around test that blocks vectorisation (measured 1.9 vs
14 GFMA/s in float32).

**Backward.** With upstream ``G = dL/dY`` spread on the same flat grid (``Ge``, zeros in the
wrap-around columns, so they contribute nothing):

.. math::

    \frac{\partial L}{\partial b_o} = \sum_{n,r,q} G_{no}[r,q], \qquad
    \frac{\partial L}{\partial W_{ocuv}} = \sum_n \sum_p Ge_{no}[p]\; x_{nc}[p + u w + v],

    \frac{\partial L}{\partial x_{nc}}[p + u w + v] \mathrel{+}= W_{ocuv}\, Ge_{no}[p]
    \quad (\text{the transposed AXPY}).

The weight gradient is a dot product per tap; a float dot product does not vectorise without
re-association (``fastmath``, banned in reductions here), so it is accumulated element-wise,
``buf[tap, p] += Ge_no[p] x_nc[p + off]`` over the images n (a vectorised AXPY), and each
``buf`` row is summed once at the end (float32, 128 images, one core: 7.5 GFMA/s, against
3.0 for a dot product unrolled into 8 scalar chains, which LLVM does not vectorise either).
The positions p are taken in tiles of ``TILE`` = 128 that all accumulate into one
``(taps, TILE)`` buffer (25 KB for C1's 49 taps: L1, where a ``(taps, span)`` buffer is 384 KB):
per 16 images on one core, C1's weight gradient went from 5.6 to 2.9 ms and C3's from 8.8 to
5.8 ms.
"""

import numpy as np
from numba import njit

TILE = 128  # flat positions per tile of the weight gradient: 49 taps x 128 x 4 B = 25 KB

__all__ = [
    "conv2d_forward", "conv2d_forward_into", "conv2d_backward", "conv2d_backward_into",
    "subsample_forward", "subsample_forward_into", "subsample_backward", "subsample_backward_into",
]


@njit(cache=True, nogil=True)
def conv2d_forward(X, W, b, table):  # pragma: no cover (compiled)
    """Valid, stride-1 correlation of many maps through a connection table.

    Parameters
    ----------
    X : ndarray of shape (n, c_in, h, w)
    W : ndarray of shape (c_out, c_in, kh, kw)
        Entries of unconnected (o, c) are never read.
    b : ndarray of shape (c_out,)
    table : ndarray of shape (c_out, c_in), bool or uint8
        ``table[o, c]`` true when output map o reads input map c.

    Returns
    -------
    Y : ndarray of shape (n, c_out, h - kh + 1, w - kw + 1), the dtype of X
    """
    n, c_in, h, w = X.shape
    c_out, _, kh, kw = W.shape
    Y = np.empty((n, c_out, h - kh + 1, w - kw + 1), X.dtype)
    conv2d_forward_into(X, W, b, table, Y)
    return Y


@njit(cache=True, nogil=True)
def conv2d_forward_into(X, W, b, table, Y):  # pragma: no cover (compiled)
    """:func:`conv2d_forward` written into ``Y`` of shape (n, c_out, ho, wo)."""
    n, c_in, h, w = X.shape
    c_out, _, kh, kw = W.shape
    ho, wo = h - kh + 1, w - kw + 1
    span = (ho - 1) * w + wo
    X3 = X.reshape(n, c_in, h * w)
    acc = np.empty(span, X.dtype)
    for i in range(n):
        for o in range(c_out):
            acc[:] = 0
            for c in range(c_in):
                if not table[o, c]:
                    continue
                x = X3[i, c]
                for u in range(kh):
                    for v in range(kw):
                        weight = W[o, c, u, v]
                        xs = x[u * w + v:u * w + v + span]
                        for p in range(span):
                            acc[p] += weight * xs[p]
            for r in range(ho):
                for q in range(wo):
                    Y[i, o, r, q] = acc[r * w + q] + b[o]


@njit(cache=True, nogil=True)
def _spread(dY, w):  # pragma: no cover (compiled)
    """``dY`` (n, c, ho, wo) on the flat grid of row width w (zeros in the wrap-around
    columns), shape (n, c, span); and its per-map sums (the bias gradient)."""
    n, c_out, ho, wo = dY.shape
    span = (ho - 1) * w + wo
    Ge = np.empty((n, c_out, span), dY.dtype)
    db = np.zeros(c_out, dY.dtype)
    for i in range(n):
        for o in range(c_out):
            ge = Ge[i, o]
            for r in range(ho):
                dy = dY[i, o, r]
                row = ge[r * w:r * w + wo]
                for q in range(wo):
                    row[q] = dy[q]
                if r < ho - 1:
                    ge[r * w + wo:(r + 1) * w] = 0
            db[o] += dY[i, o].sum()
    return Ge, db


@njit(cache=True, nogil=True)
def _weight_grad(X3, Ge, table, kh, kw, w):  # pragma: no cover (compiled)
    """``dW[o, c, u, v] = sum_n sum_p Ge[n, o, p] X3[n, c, p + u w + v]``, element-wise
    accumulation in ``buf`` then one row sum per tap (see the module docstring). The flat
    positions p are taken in tiles of ``TILE``, all accumulated into the same ``TILE``-wide
    ``buf`` (the sum runs over p anyway), so ``buf`` stays in L1 whatever the map size."""
    n, c_in, _ = X3.shape
    c_out, span = Ge.shape[1], Ge.shape[2]
    dW = np.zeros((c_out, c_in, kh, kw), X3.dtype)
    buf = np.empty((kh * kw, TILE), X3.dtype)
    for o in range(c_out):
        for c in range(c_in):
            if not table[o, c]:
                continue
            buf[:] = 0
            for i in range(n):
                x = X3[i, c]
                for start in range(0, span, TILE):
                    size = min(TILE, span - start)
                    g = Ge[i, o, start:start + size]
                    for u in range(kh):
                        for v in range(kw):
                            xs = x[start + u * w + v:start + u * w + v + size]
                            row = buf[u * kw + v]
                            for p in range(size):
                                row[p] += g[p] * xs[p]
            for u in range(kh):
                for v in range(kw):
                    row = buf[u * kw + v]
                    total = row[0] * 0
                    for p in range(TILE):
                        total += row[p]
                    dW[o, c, u, v] = total
    return dW


@njit(cache=True, nogil=True)
def _input_grad_into(W, Ge, table, w, dX):  # pragma: no cover (compiled)
    """``dX[n, c, p + u w + v] = sum W[o, c, u, v] Ge[n, o, p]`` over connected (o, c), into
    the flat maps ``dX`` (n, c_in, h w) of width w."""
    n, c_out, span = Ge.shape
    c_in, kh, kw = W.shape[1], W.shape[2], W.shape[3]
    dX[:] = 0
    for i in range(n):
        for c in range(c_in):
            dx = dX[i, c]
            for o in range(c_out):
                if not table[o, c]:
                    continue
                g = Ge[i, o]
                for u in range(kh):
                    for v in range(kw):
                        weight = W[o, c, u, v]
                        dxs = dx[u * w + v:u * w + v + span]
                        for p in range(span):
                            dxs[p] += weight * g[p]


@njit(cache=True, nogil=True)
def conv2d_backward(X, W, table, dY, input_grad):  # pragma: no cover (compiled)
    """Gradients of :func:`conv2d_forward` for the upstream gradient ``dY = dL/dY``.

    Parameters
    ----------
    X, W, table
        As given to :func:`conv2d_forward`.
    dY : ndarray of shape (n, c_out, ho, wo)
    input_grad : bool
        Compute dL/dX (False for the first layer, whose input is the data).

    Returns
    -------
    dX : ndarray of shape (n, c_in, h, w), or shape (0, 0, 0, 0) when not ``input_grad``
    dW : ndarray of shape (c_out, c_in, kh, kw), zero where the table is false
    db : ndarray of shape (c_out,)
    """
    n, c_in, h, w = X.shape
    dX = np.empty((n, c_in, h, w) if input_grad else (0, 0, 0, 0), X.dtype)
    dW, db = conv2d_backward_into(X, W, table, dY, dX)
    return dX, dW, db


@njit(cache=True, nogil=True)
def conv2d_backward_into(X, W, table, dY, dX):  # pragma: no cover (compiled)
    """:func:`conv2d_backward` with dL/dX written into ``dX`` (n, c_in, h, w); an empty dX
    (size 0) skips it. Returns ``(dW, db)``."""
    n, c_in, h, w = X.shape
    kh, kw = W.shape[2], W.shape[3]
    Ge, db = _spread(dY, w)
    dW = _weight_grad(X.reshape(n, c_in, h * w), Ge, table, kh, kw, w)
    if dX.size > 0:
        _input_grad_into(W, Ge, table, w, dX.reshape(n, c_in, h * w))
    return dW, db


@njit(cache=True, nogil=True)
def subsample_forward(X, coef, bias, sh, sw):  # pragma: no cover (compiled)
    r"""LeNet trainable subsampling: ``Y[m] = coef[m] * mean of each sh x sw window + bias[m]``.

    Non-overlapping windows from the top-left corner; rows (columns) beyond the last whole
    window are dropped (``ho = h // sh``, ``wo = w // sw``).

    Returns
    -------
    Y : ndarray of shape (n, m, h // sh, w // sw)
    means : ndarray of the same shape, the window means (kept for the backward pass)
    """
    n, m, h, w = X.shape
    means = np.empty((n, m, h // sh, w // sw), X.dtype)
    Y = np.empty((n, m, h // sh, w // sw), X.dtype)
    subsample_forward_into(X, coef, bias, sh, sw, Y, means)
    return Y, means


@njit(cache=True, nogil=True)
def subsample_forward_into(X, coef, bias, sh, sw, Y, means):  # pragma: no cover (compiled)
    """:func:`subsample_forward` written into ``Y`` and ``means`` (n, m, h // sh, w // sw)."""
    n, m, h, w = X.shape
    ho, wo = h // sh, w // sw
    inv = 1.0 / (sh * sw)
    for i in range(n):
        for c in range(m):
            for r in range(ho):
                for q in range(wo):
                    total = X[i, c, r * sh, q * sw] * 0
                    for a in range(sh):
                        for t in range(sw):
                            total += X[i, c, r * sh + a, q * sw + t]
                    means[i, c, r, q] = total * inv
                    Y[i, c, r, q] = coef[c] * means[i, c, r, q] + bias[c]


@njit(cache=True, nogil=True)
def subsample_backward(means, coef, dY, h, w, sh, sw):  # pragma: no cover (compiled)
    r"""Gradients of :func:`subsample_forward`.

    ``dL/dcoef_m = sum dY_m * means_m``, ``dL/dbias_m = sum dY_m``, and every input of a
    window gets ``coef_m dY / (sh sw)`` (dropped rows and columns get 0).

    Returns
    -------
    dX : ndarray of shape (n, m, h, w)
    dcoef, dbias : ndarrays of shape (m,)
    """
    dX = np.empty((dY.shape[0], dY.shape[1], h, w), dY.dtype)
    dcoef, dbias = subsample_backward_into(means, coef, dY, sh, sw, dX)
    return dX, dcoef, dbias


@njit(cache=True, nogil=True)
def subsample_backward_into(means, coef, dY, sh, sw, dX):  # pragma: no cover (compiled)
    """:func:`subsample_backward` with dL/dX written into ``dX`` (n, m, h, w); returns
    ``(dcoef, dbias)``."""
    n, m, ho, wo = dY.shape
    inv = 1.0 / (sh * sw)
    dX[:] = 0
    dcoef = np.zeros(m, dY.dtype)
    dbias = np.zeros(m, dY.dtype)
    for i in range(n):
        for c in range(m):
            for r in range(ho):
                for q in range(wo):
                    g = dY[i, c, r, q]
                    dcoef[c] += g * means[i, c, r, q]
                    dbias[c] += g
                    share = coef[c] * g * inv
                    for a in range(sh):
                        for t in range(sw):
                            dX[i, c, r * sh + a, q * sw + t] = share
    return dcoef, dbias
