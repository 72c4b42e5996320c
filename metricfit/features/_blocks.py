r"""Numba kernels of block-window histograms of LBP codes, over a whole image stack.

Block windows (:func:`n_windows`): along an axis of length L, windows of size b start at 0, s,
2s, ... and a window is kept while more than half of it lies in the image (its start t has
``t + b/2 < L``); the last one is clipped at the border. Hence

.. math:: n(L, b, s) = \left\lceil \frac{2L - b}{2s} \right\rceil \quad (L \ge b),

which gives ``ceil(L/b - 1/2)`` non-overlapping blocks (a remainder of at most half a block
is dropped, a larger one kept as a partial block) and, for half-overlapping windows
(s = b/2), ``ceil(L/s) - 1``: the counts of seed 002's appendix (435, 231 and 128 windows
of 10x10, 14x14 and 18x18 on a 150x80 image).
"""

from numbers import Integral

import numpy as np
from numba import njit

from . import _lbp
from ._lbp import _codes_into, _pad, sample_offsets, uniform_table

__all__ = ["n_windows", "window", "window_means_into", "block_histograms", "lbp_histograms"]


@njit(cache=True, nogil=True)
def n_windows(length, block, step):  # pragma: no cover (compiled)
    """Windows along one axis: ``ceil((2 * length - block) / (2 * step))`` (length >= block)."""
    return (2 * length - block + 2 * step - 1) // (2 * step)


@njit(cache=True, nogil=True, inline="always")
def window(i, block, step, length):  # pragma: no cover (compiled)
    """``(start, stop)`` of window i along an axis: ``i * step`` to ``i * step + block``,
    clipped at ``length`` (the last window may be partial)."""
    start = i * step
    return start, min(start + block, length)


@njit(cache=True, nogil=True)
def window_means_into(values, block_h, block_w, step_h, step_w, out,
                      offset):  # pragma: no cover (compiled)
    """Mean of ``values`` (rows, cols) over each block window, windows row-major, into
    ``out[offset:]``; each window summed row by row, left to right."""
    rows, cols = values.shape
    t = offset
    for i in range(n_windows(rows, block_h, step_h)):
        r0, r1 = window(i, block_h, step_h, rows)
        for j in range(n_windows(cols, block_w, step_w)):
            c0, c1 = window(j, block_w, step_w, cols)
            total = 0.0
            for r in range(r0, r1):
                for c in range(c0, c1):
                    total += values[r, c]
            out[t] = total / ((r1 - r0) * (c1 - c0))
            t += 1


@njit(cache=True, nogil=True)
def _histograms_into(codes, block_h, block_w, step_h, step_w, n_bins, out,
                     offset):  # pragma: no cover (compiled)
    """L1-normalised code histogram of each window into ``out[offset:offset + n * n_bins]``."""
    rows, cols = codes.shape
    nr = n_windows(rows, block_h, step_h)
    nc = n_windows(cols, block_w, step_w)
    out[offset:offset + nr * nc * n_bins] = 0.0
    base = offset
    for i in range(nr):
        r0, r1 = window(i, block_h, step_h, rows)
        for j in range(nc):
            c0, c1 = window(j, block_w, step_w, cols)
            for r in range(r0, r1):
                for c in range(c0, c1):
                    out[base + codes[r, c]] += 1.0
            size = (r1 - r0) * (c1 - c0)
            for b in range(n_bins):
                out[base + b] /= size
            base += n_bins


@njit(cache=True, nogil=True)
def _lbp_histograms_into(images, pad, rp, cp, table, block_h, block_w, step_h, step_w, n_bins,
                         out, offset):  # pragma: no cover (compiled)
    """Codes then window histograms of every image (n, H, W) into the rows of ``out``, from
    column ``offset`` on; ``pad`` zeros surround each image (see ``_lbp._codes_into``)."""
    n, rows, cols = images.shape
    padded = np.zeros((rows + 2 * pad, cols + 2 * pad))
    codes = np.empty((rows, cols), dtype=np.uint8)
    for m in range(n):
        for r in range(rows):  # explicit loops: a 2-D slice assignment costs ~9 s to compile
            for c in range(cols):
                padded[r + pad, c + pad] = images[m, r, c]
        _codes_into(padded, pad, rp, cp, table, codes)
        _histograms_into(codes, block_h, block_w, step_h, step_w, n_bins, out[m], offset)


def block_histograms(codes, block_h, block_w, step_h, step_w, n_bins=59):
    """Concatenated L1-normalised histograms of the codes in each block window.

    Windows are taken row-major (top to bottom, then left to right); see :func:`n_windows` for
    how many fit. Each histogram sums to 1, partial (clipped) windows included.

    Parameters
    ----------
    codes : array-like of shape (rows, cols), integers in ``0..n_bins-1``
    block_h, block_w : int
        Window size; at most the image size.
    step_h, step_w : int
        Shift between consecutive windows (the block size for non-overlapping blocks).
    n_bins : int, default=59
        Number of codes, at most 256 (59 for P = 8).

    Returns
    -------
    features : ndarray of shape (n_windows(rows) * n_windows(cols) * n_bins,), float64
        Entry ``k * n_bins + code`` is the share of ``code`` in window k.
    """
    codes = np.asarray(codes)
    sizes = (block_h, block_w, step_h, step_w, n_bins)
    if not all(isinstance(v, Integral) for v in sizes) or not 1 <= n_bins <= 256:
        raise ValueError(f"Block sizes, steps and n_bins (<= 256) must be integers, got {sizes}.")
    if codes.ndim != 2 or codes.dtype.kind not in "iu":
        raise ValueError(f"codes must be a 2-D integer array, got {codes.dtype} {codes.shape}.")
    if codes.size and (codes.min() < 0 or codes.max() >= n_bins):
        raise ValueError(f"codes must lie in [0, {n_bins - 1}] for n_bins={n_bins}.")
    rows, cols = codes.shape
    if not (1 <= block_h <= rows and 1 <= block_w <= cols and step_h >= 1 and step_w >= 1):
        raise ValueError(
            f"Need 1 <= block <= image size and step >= 1: block ({block_h}, {block_w}), "
            f"step ({step_h}, {step_w}), image ({rows}, {cols})."
        )
    n_blocks = n_windows(rows, block_h, step_h) * n_windows(cols, block_w, step_w)
    out = np.empty(n_blocks * n_bins)
    _histograms_into(np.ascontiguousarray(codes, dtype=np.uint8), block_h, block_w, step_h,
                     step_w, n_bins, out, 0)
    return out


def lbp_histograms(images, P, R, block_h, block_w, step_h, step_w, out=None, offset=0):
    """:func:`block_histograms` of :func:`lbp_codes` for a stack of images, in one kernel call.

    Parameters
    ----------
    images : ndarray of shape (n_images, rows, cols)
        Converted to float64; not checked for NaN/inf here (the transformers do it). Rows
        and cols must be at least the block size.
    P : int
    R : float
    block_h, block_w, step_h, step_w : int
    out : ndarray of shape (n_images, n_columns), float64, C-contiguous, default=None
        If given, columns ``offset:offset + n_features`` are filled in place (so that several
        configurations share one output array).
    offset : int, default=0

    Returns
    -------
    out : ndarray of shape (n_images, n_features) or the given ``out``, float64
        ``n_features = n_windows(rows) * n_windows(cols) * n_bins(P)``.
    """
    images = np.ascontiguousarray(images, dtype=np.float64)
    if images.ndim != 3:
        raise ValueError(f"images must be 3-D (n_images, rows, cols), got {images.shape}.")
    n, rows, cols = images.shape
    if not (1 <= block_h <= rows and 1 <= block_w <= cols and step_h >= 1 and step_w >= 1):
        raise ValueError(f"Need 1 <= block <= image size and step >= 1, got block ({block_h}, "
                         f"{block_w}), step ({step_h}, {step_w}), images {images.shape}.")
    bins = _lbp.n_bins(P)
    dim = n_windows(rows, block_h, step_h) * n_windows(cols, block_w, step_w) * bins
    if out is None:
        out = np.empty((n, dim))
    ok = (out.dtype == np.float64 and out.flags.c_contiguous and out.ndim == 2
          and out.shape[0] == n and 0 <= offset and offset + dim <= out.shape[1])
    if not ok:
        raise ValueError(f"out must be a C-contiguous float64 array of {n} rows with columns "
                         f"{offset}:{offset + dim}, got {out.dtype} {out.shape}.")
    rp, cp = sample_offsets(P, R)
    _lbp_histograms_into(images, _pad(rp, cp), rp, cp, uniform_table(P), block_h, block_w,
                         step_h, step_w, bins, out, offset)
    return out
