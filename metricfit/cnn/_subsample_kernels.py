r"""numba kernels of the LeNet-style trainable subsampling layer (seed 000, section 3.2;
LeCun et al. 1998, section II.B): the mean of each window times a coefficient plus a bias,
optionally followed by tanh (:mod:`._squash`), forward and hand-written backward. See
:mod:`._kernels` for the conventions.
"""

import numpy as np
from numba import njit

from ._squash import squash_add_into

LANES = 16  # partial sums per map in the subsampling's coefficient and bias gradients

__all__ = ["subsample_forward", "subsample_forward_into", "subsample_backward",
           "subsample_backward_into", "subsample_backward_units"]


def subsample_forward(X, coef, bias, sh, sw, squash=False):
    r"""LeNet trainable subsampling: ``Y[m] = coef[m] * mean of each sh x sw window + bias[m]``
    (then tanh when ``squash``): one call of :func:`subsample_forward_into` on the whole batch.

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
    subsample_forward_into(X, coef.astype(X.dtype), bias.astype(X.dtype), sh, sw, Y, means,
                           squash)
    return Y, means


@njit(cache=True, nogil=True)
def _window_sums(row_sums, sw, out):  # pragma: no cover (compiled)
    """``out[k] = row_sums[k sw] + row_sums[k sw + 1] + ... + row_sums[k sw + sw - 1]`` (in
    that order) over a whole map; the common widths 2 and 3 written out, so that the strides
    are constants the compiler can vectorise."""
    if sw == 2:
        for k in range(out.size):
            out[k] = row_sums[2 * k] + row_sums[2 * k + 1]
    elif sw == 3:
        for k in range(out.size):
            out[k] = (row_sums[3 * k] + row_sums[3 * k + 1]) + row_sums[3 * k + 2]
    else:
        for k in range(out.size):
            total = row_sums[k * sw]
            for t in range(1, sw):
                total += row_sums[k * sw + t]
            out[k] = total


@njit(cache=True, nogil=True)
def subsample_forward_into(X, coef, bias, sh, sw, Y, means, squash):  # pragma: no cover
    """:func:`subsample_forward` written into ``Y`` and ``means`` (n, m, h // sh, w // sw).
    Per map: the ``sh`` rows of each window row added first (contiguous slices, in order),
    then the ``sw`` columns of those sums (:func:`_window_sums`, over the whole map at once),
    then the coefficient; the bias and tanh then over all of an image's maps at once
    (:func:`._squash.squash_add_into`: one loop long enough to vectorise)."""
    n, m, h, w = X.shape
    ho, wo = h // sh, w // sw
    size = ho * wo
    row = wo * sw  # columns beyond the last whole window are dropped
    inv = 1.0 / (sh * sw)
    X3 = X.reshape(n, m, h * w)
    row_sums = np.empty(ho * row, X.dtype)
    sums = np.empty(size, X.dtype)
    pre = np.empty(m * size, X.dtype)
    biases = np.empty(m * size, X.dtype)  # bias[c] at each of map c's outputs
    for c in range(m):
        for k in range(size):
            biases[c * size + k] = bias[c]
    for i in range(n):
        for c in range(m):
            x = X3[i, c]
            for r in range(ho):
                dst = row_sums[r * row:(r + 1) * row]
                src = x[r * sh * w:r * sh * w + row]
                for j in range(row):
                    dst[j] = src[j]
                for a in range(1, sh):
                    src = x[(r * sh + a) * w:(r * sh + a) * w + row]
                    for j in range(row):
                        dst[j] += src[j]
            _window_sums(row_sums, sw, sums)
            mean = means[i, c].reshape(size)
            scaled = pre[c * size:(c + 1) * size]
            for k in range(size):
                mean[k] = sums[k] * inv
                scaled[k] = coef[c] * mean[k]
        squash_add_into(pre, biases, Y[i].reshape(m * size), squash)


def subsample_backward(means, coef, dY, h, w, sh, sw, Y=None):
    r"""Gradients of :func:`subsample_forward`: one call of :func:`subsample_backward_into`.

    With ``g = dY`` (times ``1 - Y^2`` when Y, the squashed output, is given):
    ``dL/dcoef_m = sum g_m * means_m``, ``dL/dbias_m = sum g_m``, and every input of a
    window gets ``coef_m g / (sh sw)`` (dropped rows and columns get 0).

    Returns
    -------
    dX : ndarray of shape (n, m, h, w)
    dcoef, dbias : ndarrays of shape (m,)
    """
    dX = np.empty((dY.shape[0], dY.shape[1], h, w), dY.dtype)
    Y = np.empty((0, 0, 0, 0), dY.dtype) if Y is None else Y
    dcoef, dbias = subsample_backward_into(means, coef.astype(dY.dtype), dY, Y, sh, sw, dX)
    return dX, dcoef, dbias


@njit(cache=True, nogil=True)
def _lane_sums_add(g, mean, lanes_coef, lanes_bias):  # pragma: no cover (compiled)
    """``lanes_coef[l] += sum of g[p] mean[p]`` and ``lanes_bias[l] += sum of g[p]`` over
    ``p = l (mod LANES)``, p in order: element-wise over the lanes (a loop that vectorises),
    a fixed order whatever the vector width."""
    size = g.size
    for start in range(0, size - LANES + 1, LANES):
        gs, ms = g[start:start + LANES], mean[start:start + LANES]
        for lane in range(LANES):
            lanes_coef[lane] += gs[lane] * ms[lane]
            lanes_bias[lane] += gs[lane]
    tail = size - size % LANES
    for p in range(tail, size):
        lanes_coef[p - tail] += g[p] * mean[p]
        lanes_bias[p - tail] += g[p]


@njit(cache=True, nogil=True)
def _repeat_each(values, sw, out):  # pragma: no cover (compiled)
    """``out[k sw + t] = values[k]`` for t < sw (the widths 2 and 3 written out, as in
    :func:`_window_sums`)."""
    if sw == 2:
        for k in range(values.size):
            out[2 * k] = values[k]
            out[2 * k + 1] = values[k]
    elif sw == 3:
        for k in range(values.size):
            out[3 * k] = values[k]
            out[3 * k + 1] = values[k]
            out[3 * k + 2] = values[k]
    else:
        for k in range(values.size):
            for t in range(sw):
                out[k * sw + t] = values[k]


@njit(cache=True, nogil=True)
def subsample_backward_into(means, coef, dY, Y, sh, sw, dX):  # pragma: no cover (compiled)
    """:func:`subsample_backward` with dL/dX written into ``dX`` (n, m, h, w); an empty Y means
    no tanh. Returns ``(dcoef, dbias)``: per map, ``LANES`` partial sums over the batch's
    images (:func:`_backward_map`), added up in lane order at the end."""
    n, m = dY.shape[0], dY.shape[1]
    dcoef = np.zeros((1, m), dY.dtype)
    dbias = np.zeros((1, m), dY.dtype)
    subsample_backward_units(means, coef, dY, Y, sh, sw, dX, max(n, 1), 0, m, dcoef, dbias)
    return dcoef[0], dbias[0]


@njit(cache=True, nogil=True)
def subsample_backward_units(means, coef, dY, Y, sh, sw, dX, block, u0, u1, dcoef_parts,
                             dbias_parts):  # pragma: no cover (compiled)
    """Units ``u0 <= u < u1`` of the backward pass, unit ``u = b m + c`` being map c over the
    image block b (images ``b block .. (b + 1) block - 1``): dX of those maps, and the block's
    partial gradients ``dcoef_parts[b, c]``, ``dbias_parts[b, c]`` (``LANES`` lane sums over
    the block's images, in image order, added in lane order). A caller adds the blocks' parts
    in block order: the same sums on any number of threads."""
    n, m, ho, wo = dY.shape
    size, row = ho * wo, wo * sw
    g = np.empty(size, dY.dtype)
    share = np.empty(size, dY.dtype)
    repeated = np.empty(ho * row, dY.dtype)
    lanes_coef = np.empty((m, LANES), dY.dtype)
    lanes_bias = np.empty((m, LANES), dY.dtype)
    zero = np.zeros(1, dY.dtype)[0]
    h, w = dX.shape[2], dX.shape[3]
    squash = Y.size > 0
    dY3, means3 = dY.reshape(n, m, size), means.reshape(n, m, size)
    Y3 = Y.reshape(n, m, size) if squash else dY3
    dX3 = dX.reshape(n, m, h * w)
    u = u0
    while u < u1:  # the units of one block at a time, image by image (as the maps lie)
        b, c0 = u // m, u % m
        c1 = min(m, c0 + u1 - u)
        lanes_coef[c0:c1] = 0
        lanes_bias[c0:c1] = 0
        for i in range(b * block, min(n, (b + 1) * block)):
            for c in range(c0, c1):
                _backward_map(means3[i, c], coef[c], dY3[i, c], Y3[i, c] if squash else g,
                              squash, sh, sw, ho, w, dX3[i, c], g, share, repeated,
                              lanes_coef[c], lanes_bias[c])
        for c in range(c0, c1):
            total_coef, total_bias = zero, zero
            for lane in range(LANES):
                total_coef += lanes_coef[c, lane]
                total_bias += lanes_bias[c, lane]
            dcoef_parts[b, c], dbias_parts[b, c] = total_coef, total_bias
        u += c1 - c0


@njit(cache=True, nogil=True, inline="always")
def _backward_map(mean, coef, dy, y, squash, sh, sw, ho, w, dx, g, share, repeated, lanes_coef,
                  lanes_bias):  # pragma: no cover (compiled)
    """One map of one image (flat 1-D maps: ``dy``, ``y``, ``mean`` of the output, ``dx`` of
    the input, ``w`` wide): ``g = dy (1 - y^2)`` (or dy), its lane sums added to
    ``lanes_coef`` (times the means) and ``lanes_bias`` (:func:`_lane_sums_add`), and dx: each
    window's share ``coef g / (sh sw)`` repeated along its row (:func:`_repeat_each`), then
    that row copied to the window's ``sh`` rows."""
    size = dy.size
    row = (size // ho) * sw
    inv = 1.0 / (sh * sw)
    if squash:
        for p in range(size):
            g[p] = dy[p] * (1 - y[p] * y[p])
    else:
        g[:] = dy
    _lane_sums_add(g, mean, lanes_coef, lanes_bias)
    for k in range(size):
        share[k] = coef * g[k] * inv
    _repeat_each(share, sw, repeated)
    if ho * sh * w < dx.size or row < w:  # rows or columns beyond the last whole window
        dx[:] = 0
    for r in range(ho):
        src = repeated[r * row:(r + 1) * row]
        for a in range(sh):
            dst = dx[(r * sh + a) * w:(r * sh + a) * w + row]
            for j in range(row):
                dst[j] = src[j]
