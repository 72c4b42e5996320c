r"""Numba kernels of dense SIFT: Lowe's 128-d descriptor on a regular grid of square patches.

The descriptor of one patch follows Lowe, *Distinctive image features from scale-invariant
keypoints*, IJCV 2004, section 6.1 (the SIFT of seed 001 section 5, there at 9 facial points
and 3 scales), upright (no dominant-orientation rotation: the crops are aligned), on the
unsmoothed image:

- gradients by central differences (:func:`metricfit.features._hog._gradients_into`),
  magnitude ``hypot(g_col, g_row)`` and signed orientation ``atan2(g_row, g_col)`` in
  [0, 2 pi), rows pointing down (0 = intensity growing to the right, pi/2 = growing downwards);
- a patch of ``4 b x 4 b`` pixels (b = ``bin_size``) holds 4 x 4 cells of b x b pixels and
  8 orientation bins of 45 degrees, bin o centred on ``o * pi / 4``;
- each pixel's magnitude is weighted by a Gaussian of sigma one half the descriptor window's
  width (``2 b``) centred on the patch centre, and shared among the 2 x 2 x 2 nearest
  (cell row, cell column, orientation) bins by trilinear interpolation (weights ``1 - d`` with
  d the distance to a bin centre in bin units; cell centres at ``(i + 1/2) b - 1/2``); shares
  falling outside the 4 x 4 cells are dropped;
- the 128 values, ordered (cell row, cell column, orientation), are L2-normalised, clipped at
  0.2 and L2-normalised again. A patch without gradient stays all zeros.

Grid (:func:`grid`): along an axis of length L, ``n = (L - 4b) // s + 1`` patches with step s,
the grid centred (``(L - (n - 1) s - 4b) // 2`` pixels before the first).
"""

import math

import numpy as np
from numba import njit

from ._hog import _gradients_into

__all__ = ["grid", "dense_sift"]

N_CELLS = 4
N_ORIENT = 8
DIM = N_CELLS * N_CELLS * N_ORIENT
CLIP = 0.2


def grid(length, bin_size, step):
    """``(first, n)``: the first patch start and the number of patches along one axis
    (n = 0 when the patch of ``4 * bin_size`` pixels does not fit)."""
    patch = N_CELLS * bin_size
    if length < patch:
        return 0, 0
    n = (length - patch) // step + 1
    return (length - (n - 1) * step - patch) // 2, n


@njit(cache=True, nogil=True)
def _polar_into(g_row, g_col, magnitude, orientation):  # pragma: no cover (compiled)
    """Magnitude and orientation in [0, 2 pi) of every pixel's gradient."""
    rows, cols = g_row.shape
    two_pi = 2.0 * math.pi
    for r in range(rows):
        for c in range(cols):
            magnitude[r, c] = math.hypot(g_col[r, c], g_row[r, c])
            theta = math.atan2(g_row[r, c], g_col[r, c])
            if theta < 0.0:
                theta += two_pi
            orientation[r, c] = theta if theta < two_pi else 0.0


@njit(cache=True, nogil=True)
def _patch_into(magnitude, orientation, r0, c0, bin_size, out, offset):  # pragma: no cover
    """The 128-d descriptor of the patch with top-left pixel (r0, c0) into ``out[offset:]``."""
    patch = N_CELLS * bin_size
    centre = (patch - 1) / 2.0
    sigma = patch / 2.0
    bins_per_radian = N_ORIENT / (2.0 * math.pi)
    for t in range(offset, offset + DIM):
        out[t] = 0.0
    for i in range(patch):
        u = (i + 0.5) / bin_size - 0.5
        y0 = int(math.floor(u))
        fy = u - y0
        wi = math.exp(-((i - centre) ** 2) / (2.0 * sigma * sigma))
        for j in range(patch):
            m = magnitude[r0 + i, c0 + j]
            if m == 0.0:
                continue
            v = (j + 0.5) / bin_size - 0.5
            x0 = int(math.floor(v))
            fx = v - x0
            w = m * wi * math.exp(-((j - centre) ** 2) / (2.0 * sigma * sigma))
            t = orientation[r0 + i, c0 + j] * bins_per_radian
            o0 = int(math.floor(t))
            fo = t - o0
            for dy in range(2):
                y = y0 + dy
                if y < 0 or y >= N_CELLS:
                    continue
                wy = w * (fy if dy else 1.0 - fy)
                for dx in range(2):
                    x = x0 + dx
                    if x < 0 or x >= N_CELLS:
                        continue
                    wyx = wy * (fx if dx else 1.0 - fx)
                    base = offset + (y * N_CELLS + x) * N_ORIENT
                    out[base + o0 % N_ORIENT] += wyx * (1.0 - fo)
                    out[base + (o0 + 1) % N_ORIENT] += wyx * fo
    _normalise_clip(out, offset)


@njit(cache=True, nogil=True)
def _normalise_clip(out, offset):  # pragma: no cover (compiled)
    """Lowe's normalisation of ``out[offset:offset + 128]``: L2, clip at 0.2, L2 again."""
    for rnd in range(2):
        total = 0.0
        for t in range(offset, offset + DIM):
            total += out[t] * out[t]
        if total == 0.0:
            return
        scale = 1.0 / math.sqrt(total)
        for t in range(offset, offset + DIM):
            out[t] *= scale
            if rnd == 0 and out[t] > CLIP:
                out[t] = CLIP


@njit(cache=True, nogil=True)
def _dense_sift_into(images, bin_sizes, steps, out):  # pragma: no cover (compiled)
    """Descriptors of all patches of all scales of every image (n, rows, cols) into ``out``:
    scales in order, patches row-major within a scale."""
    n, rows, cols = images.shape
    g_row = np.empty((rows, cols))
    g_col = np.empty((rows, cols))
    magnitude = np.empty((rows, cols))
    orientation = np.empty((rows, cols))
    for m in range(n):
        _gradients_into(images[m], g_row, g_col)
        _polar_into(g_row, g_col, magnitude, orientation)
        offset = 0
        for s in range(bin_sizes.shape[0]):
            b = bin_sizes[s]
            patch = N_CELLS * b
            step = steps[s]
            n_r = (rows - patch) // step + 1
            n_c = (cols - patch) // step + 1
            first_r = (rows - (n_r - 1) * step - patch) // 2
            first_c = (cols - (n_c - 1) * step - patch) // 2
            for i in range(n_r):
                for j in range(n_c):
                    _patch_into(magnitude, orientation, first_r + i * step,
                                first_c + j * step, b, out[m], offset)
                    offset += DIM


def dense_sift(images, bin_sizes=(4, 6, 8), steps=None):
    """Dense SIFT descriptors of a stack of images (module docstring).

    Parameters
    ----------
    images : ndarray of shape (n_images, rows, cols)
        Converted to float64; not checked for NaN/inf (the transformer does it).
    bin_sizes : sequence of int
        Cell side b of each scale (patches of 4b x 4b pixels); each must fit in the image.
    steps : sequence of int, default=None
        Grid step of each scale; None: 2b (half-overlapping patches).

    Returns
    -------
    features : ndarray of shape (n_images, 128 * n_patches), float64
    """
    images = np.ascontiguousarray(images, dtype=np.float64)
    if images.ndim != 3:
        raise ValueError(f"images must be 3-D (n_images, rows, cols), got {images.shape}.")
    bin_sizes = np.asarray(bin_sizes, dtype=np.int64)
    steps = 2 * bin_sizes if steps is None else np.asarray(steps, dtype=np.int64)
    if bin_sizes.ndim != 1 or steps.shape != bin_sizes.shape or bin_sizes.size == 0 or \
            bin_sizes.min() < 1 or steps.min() < 1:
        raise ValueError(f"Need as many steps as bin sizes, all >= 1: got bin_sizes "
                         f"{bin_sizes.tolist()}, steps {steps.tolist()}.")
    rows, cols = images.shape[1:]
    n_patches = 0
    for b, s in zip(bin_sizes, steps, strict=True):
        (_, n_r), (_, n_c) = grid(rows, b, s), grid(cols, b, s)
        if n_r * n_c == 0:
            raise ValueError(f"A patch of {N_CELLS * b} pixels (bin size {b}) does not fit in "
                             f"images of {rows}x{cols} pixels.")
        n_patches += n_r * n_c
    out = np.empty((images.shape[0], DIM * n_patches))
    _dense_sift_into(images, bin_sizes, steps, out)
    return out
