r"""Numba kernels of non-rotation-invariant uniform local binary pattern (LBP) codes.

Codes (:func:`lbp_codes`) follow ``skimage.feature.local_binary_pattern(image, P, R,
method="nri_uniform")`` bit for bit on float64 images:

- Neighbour i (0..P-1) sits at row offset :math:`-R\sin(2\pi i/P)` and column offset
  :math:`R\cos(2\pi i/P)`, both rounded to 5 decimals (i = 0 is to the right, then
  counter-clockwise).
- Its value is the bilinear interpolation of the four surrounding pixels, in skimage's order of
  operations; pixels outside the image read 0 (skimage's constant mode). So every pixel gets
  a code, and the outer ``ceil(R)`` rows and columns carry this zero-padding.
- Bit i is set when ``value_i - centre >= 0``.
- A pattern is uniform when its bit string ``b_0..b_{P-1}`` changes at most twice (read
  linearly, which for P bits is equivalent to at most two circular changes). With n ones:
  n = 0 -> 0, n = P -> P(P-1)+1, otherwise ``1 + (n-1)P + k`` where k in 0..P-1 is the
  rotation of the run of ones; any non-uniform pattern -> P(P-1)+2. For P = 8: codes 0..57 for
  the 58 uniform patterns and 58 for the rest, 59 bins (``LBP^{u2}_{8,R}``).
"""

from functools import lru_cache

import numpy as np
from numba import njit

__all__ = ["n_bins", "uniform_table", "sample_offsets", "lbp_codes"]


def n_bins(P):
    """Number of nri_uniform codes for P sampling points: ``P(P-1) + 3`` (59 for P = 8)."""
    return P * (P - 1) + 3


@lru_cache(maxsize=None)
def uniform_table(P):
    """Lookup table pattern -> nri_uniform code, for the ``2**P`` patterns ``sum_i b_i 2^i``.

    Returns
    -------
    table : ndarray of shape (2**P,), uint8 (read-only)
    """
    if not 1 <= P <= 16:
        raise ValueError(f"P must be in [1, 16] (codes must fit in uint8), got {P}.")
    bits = (np.arange(2**P)[:, None] >> np.arange(P)) & 1
    changes = np.sum(bits[:, :-1] != bits[:, 1:], axis=1)
    n_ones = bits.sum(axis=1)
    first_one = np.argmax(bits, axis=1)
    first_zero = np.argmax(1 - bits, axis=1)
    rot = np.where(first_one == 0, n_ones - first_zero, P - first_one)
    code = 1 + (n_ones - 1) * P + rot
    code[n_ones == 0] = 0
    code[n_ones == P] = P * (P - 1) + 1
    code[changes > 2] = P * (P - 1) + 2
    table = code.astype(np.uint8)
    table.flags.writeable = False
    return table


def sample_offsets(P, R):
    """Row and column offsets ``(rp, cp)`` of the P neighbours, as skimage computes them."""
    R = float(R)
    rr = -R * np.sin(2 * np.pi * np.arange(P, dtype=np.float64) / P)
    cc = R * np.cos(2 * np.pi * np.arange(P, dtype=np.float64) / P)
    return np.round(rr, 5), np.round(cc, 5)


def _pad(rp, cp):
    """Zeros to add on each side so that every sample falls inside the padded image."""
    return int(np.ceil(max(np.abs(rp).max(), np.abs(cp).max()))) + 1


@njit(cache=True, nogil=True)
def _axis_table(length, offsets, pad):  # pragma: no cover (compiled)
    """Per position x and neighbour i: floor and ceil of ``x + offsets[i]`` (+ pad) and the
    fraction ``x + offsets[i] - floor``, as skimage's bilinear interpolation computes them."""
    P = offsets.shape[0]
    lo = np.empty((length, P), dtype=np.int64)
    hi = np.empty((length, P), dtype=np.int64)
    frac = np.empty((length, P))
    for x in range(length):
        for i in range(P):
            y = x + offsets[i]
            lo[x, i] = np.int64(np.floor(y)) + pad
            hi[x, i] = np.int64(np.ceil(y)) + pad
            frac[x, i] = y - np.floor(y)
    return lo, hi, frac


@njit(cache=True, nogil=True)
def _codes_into(padded, pad, rp, cp, table, out):  # pragma: no cover (compiled)
    """Write the nri_uniform code of every pixel into ``out`` (rows, cols), uint8.

    ``padded`` is the image with ``pad >= ceil(R) + 1`` zeros on every side, so out-of-image
    samples read 0 without a bounds test. A sample whose weights are 0 (an integer offset)
    reads its pixel directly: ``(1 - 0) a + 0 b = a`` up to the sign of a zero, which
    ``value - centre >= 0`` cannot see (images are finite).
    """
    rows, cols = out.shape
    P = rp.shape[0]
    rlo, rhi, rfrac = _axis_table(rows, rp, pad)
    clo, chi, cfrac = _axis_table(cols, cp, pad)
    for r in range(rows):
        for c in range(cols):
            centre = padded[r + pad, c + pad]
            pattern = 0
            for i in range(P):
                r0 = rlo[r, i]
                c0 = clo[c, i]
                if rp[i] == np.floor(rp[i]) and cp[i] == np.floor(cp[i]):
                    value = padded[r0, c0]
                else:
                    r1 = rhi[r, i]
                    c1 = chi[c, i]
                    dr = rfrac[r, i]
                    dc = cfrac[c, i]
                    top = (1 - dc) * padded[r0, c0] + dc * padded[r0, c1]
                    bottom = (1 - dc) * padded[r1, c0] + dc * padded[r1, c1]
                    value = (1 - dr) * top + dr * bottom
                if value - centre >= 0:
                    pattern |= 1 << i
            out[r, c] = table[pattern]


def _as_image(image, what="image"):
    image = np.ascontiguousarray(image, dtype=np.float64)
    if image.ndim != 2:
        raise ValueError(f"{what} must be 2-D (rows, cols), got shape {image.shape}.")
    if not np.isfinite(image).all():
        raise ValueError(f"{what} contains NaN or infinity.")
    return image


def lbp_codes(image, P=8, R=1):
    """nri_uniform LBP codes of one image, equal to skimage's ``local_binary_pattern``.

    Parameters
    ----------
    image : array-like of shape (rows, cols)
        Grey levels, converted to float64.
    P : int, default=8
        Sampling points on the circle, 1..16.
    R : float, default=1
        Radius of the circle, in pixels.

    Returns
    -------
    codes : ndarray of shape (rows, cols), uint8 in ``0..P(P-1)+2``
    """
    image = _as_image(image)
    rp, cp = sample_offsets(P, R)
    pad = _pad(rp, cp)
    codes = np.empty(image.shape, dtype=np.uint8)
    _codes_into(np.pad(image, pad), pad, rp, cp, uniform_table(P), codes)
    return codes
