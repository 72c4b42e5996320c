r"""Gabor magnitudes by separable direct convolution (numba): what :class:`Gabor` computes.

The kernels of :func:`metricfit.features._gabor.gabor_bank` are separable. With an isotropic
Gaussian the rotation drops out of the envelope, ``x'^2 + y'^2 = x^2 + y^2``, and the carrier's
phase is linear in x and y, so on the kernel's square support ``|x|, |y| <= h``

.. math:: g(y, x) = \underbrace{\frac{e^{-x^2 / 2\sigma^2}}{2\pi\sigma^2}
          e^{2\pi i f x \cos\theta}}_{u(x)}\,
          \underbrace{e^{-y^2 / 2\sigma^2} e^{2\pi i f y \sin\theta}}_{v(y)}
          - c\, e(x)\, e'(y), \qquad c = \frac{\sum_x u \sum_y v}{\sum_x e \sum_y e'},

where the DC term ``c e e'`` (its Gaussian envelope, ``e = |u|``, ``e' = |v|``) is there with
``zero_mean=True`` only (the module docstring of :mod:`._gabor`). The response on the image
extended by symmetric reflection ``I`` is then two 1-D convolutions a kernel, one along the
columns and one along the rows, less c times a real Gaussian blur:

.. math:: (I * g)(i, j) = \sum_{|d| \le h} v(d)\, t(i - d, j) - c\, b(i, j), \qquad
          t(r, j) = \sum_{|d| \le h} u(d)\, I(r, j - d),

about ``2 (2h + 1)`` complex multiply-adds a pixel instead of ``(2h + 1)^2``. The blur b is
shared by the kernels of a scale with the same support.

**Orientations in pairs.** ``theta' = pi - theta`` has ``u' = conj(u)`` and ``v' = v`` (cos
changes sign, sin does not). The image is real, so ``t' = conj(t)``: with ``t = t_r + i t_i``
and the four real sums

.. math:: X_1 = v_r * t_r,\quad X_2 = v_i * t_i,\quad X_3 = v_i * t_r,\quad X_4 = v_r * t_i
          \quad (\text{along the rows}),

the two responses are ``(X_1 - X_2) + i (X_3 + X_4)`` and ``(X_1 + X_2) + i (X_3 - X_4)``:
one column pass and the four row sums serve both orientations, so the default bank of 8
orientations costs 5 kernels' work a scale (0 and pi/2 alone, three pairs).

**Speed and order.** The column pass correlates each reflected row with the real and the
imaginary taps at once, the row pass each of ``t_r``, ``t_i`` with ``v_r`` and ``v_i`` over the
whole image in one flat sweep (a row offset is a multiple of the width): both are
:func:`metricfit._simd.correlate_group_2` (vector registers, one fused multiply-add a product
where the target has FMA); the blur is :func:`metricfit._simd.correlate_sources`. Sums run tap
after tap in a fixed order, so the result does not depend on the thread count; a size below
the intrinsics' minimum takes :func:`_correlate_plain`, the same sums by scalar
:func:`metricfit._simd.multiply_add` (the same bits). One call computes a block of images
without the GIL and within a megabyte of buffers (the FFT of :mod:`._gabor` goes through
Python between its batched transforms: at 16 threads, batches of one image took 2.7x as long
as batches of four, the GIL's hand-offs).

Measured (``docs/results/timing.md``, "Gabor by separable convolution"): 512 images of 62x47,
the default bank, 1.85-1.9x faster than the FFT on the 2-core AMD machine at 1 and 2 threads;
on a lent 16-core Xeon 1.7-1.9x at 1 thread and 2.1-2.3x at 16 (0.137-0.138 against
0.287-0.314 s). A numba ``parallel=True`` driver over the same blocks ran as fast as the
package's pool at 16 threads (0.136-0.143 against 0.137-0.138 s) and cost 4.5 s more of
first compilation, so the blocks stay on the pool.

Against the FFT (:func:`metricfit.features._gabor.gabor_magnitudes`, kept as the reference):
the same magnitudes to about 1e-13 relative (other roundings, the same sums).
"""

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .._simd import (
    BLOCK_VECTORS,
    PAIR_VECTORS,
    correlate_group_2,
    correlate_sources,
    lanes_of,
    multiply_add,
)
from ._blocks import n_windows, window_means_into
from ._gabor import _reflected, checked_stack, half_width

__all__ = ["SeparableBank", "separable_bank", "separable_gabor_magnitudes"]

_LANES = lanes_of(8)  # float64 lanes of the intrinsics' vectors
_PAIR_MIN = PAIR_VECTORS * _LANES  # the smallest size each intrinsic takes
_ONE_MIN = BLOCK_VECTORS * _LANES


@dataclass(frozen=True)
class SeparableBank:
    """The 1-D taps of a Gabor bank, by *unit*: one column pass and its four row sums, serving
    one kernel (``second == -1``) or an orientation pair (module docstring).

    Unit ``q`` has half-width ``half[q]`` and taps ``col[:, s:s + 2h + 1]`` (u: real, imaginary)
    and ``row[:, s:s + 2h + 1]`` (v) with ``s = start[q]``, index ``d`` for offset ``d - h``;
    it writes kernels ``first[q]`` and ``second[q]``. Kernel k subtracts ``dc[:, k]`` (real,
    imaginary) times blur ``blur_id[k]`` (-1: none), blur b having half-width ``blur_half[b]``
    and taps ``blur_col`` / ``blur_row`` from ``blur_start[b]``.

    Examples
    --------
    One scale of 8 orientations: 0 and pi/2 alone, the other six in pairs, 5 units:

    >>> from metricfit.features._gabor_separable import separable_bank
    >>> bank = separable_bank([0.25], 8)
    >>> bank.n_kernels, bank.first.tolist(), bank.second.tolist()
    (8, [0, 1, 2, 3, 4], [-1, 7, 6, 5, -1])
    """

    half: np.ndarray
    start: np.ndarray
    col: np.ndarray
    row: np.ndarray
    first: np.ndarray
    second: np.ndarray
    dc: np.ndarray
    blur_id: np.ndarray
    blur_half: np.ndarray
    blur_start: np.ndarray
    blur_col: np.ndarray
    blur_row: np.ndarray

    @property
    def n_kernels(self):
        return self.dc.shape[1]

    def arrays(self):
        """The fields in order, for the compiled kernel."""
        return tuple(getattr(self, name) for name in self.__dataclass_fields__)


def _factors(frequency, theta, sigma, h):
    """``(u, v, envelope_x, envelope_y)`` of the module docstring on ``-h..h``."""
    d = np.arange(-h, h + 1)
    gauss = np.exp(-0.5 * d**2 / sigma**2)
    norm = 1 / (2 * np.pi * sigma * sigma)
    u = gauss * np.exp(1j * (2 * np.pi * frequency * math.cos(theta) * d)) * norm
    v = gauss * np.exp(1j * (2 * np.pi * frequency * math.sin(theta) * d))
    return u, v, gauss * norm, gauss


def separable_bank(frequencies, n_orientations, sigma_factor=1.0, n_stds=3, zero_mean=True):
    """The taps of ``gabor_bank(frequencies, n_orientations, sigma_factor, n_stds,
    zero_mean)`` (kernels in its order: frequencies outer), orientations ``u`` and
    ``n_orientations - u`` paired where their supports agree."""
    units, kernels, blurs = [], {}, {}
    for s, f in enumerate(frequencies):
        sigma = sigma_factor / f
        halves = [half_width(sigma, u * np.pi / n_orientations, n_stds)
                  for u in range(n_orientations)]
        for o in range(n_orientations):
            partner = (n_orientations - o) % n_orientations
            if partner < o and halves[partner] == halves[o]:
                continue  # the partner's unit writes this kernel
            k = s * n_orientations + o
            h = halves[o]
            u, v, ex, ey = _factors(f, o * np.pi / n_orientations, sigma, h)
            paired = partner > o and halves[partner] == h
            units.append((h, u, v, k, s * n_orientations + partner if paired else -1))
            kernels[k] = (u, v, ex, ey, (sigma, h))
            if paired:
                kernels[s * n_orientations + partner] = (u.conj(), v, ex, ey, (sigma, h))
    dc = np.zeros((2, len(kernels)))
    blur_id = np.full(len(kernels), -1, dtype=np.int64)
    for k, (u, v, ex, ey, key) in kernels.items():
        if zero_mean:
            c = u.sum() * v.sum() / (ex.sum() * ey.sum())
            dc[:, k] = c.real, c.imag
            blur_id[k] = blurs.setdefault(key, (len(blurs), ex, ey))[0]
    blur_list = sorted(blurs.values(), key=lambda b: b[0])
    starts = np.cumsum([0] + [2 * h + 1 for h, *_ in units])
    blur_starts = np.cumsum([0] + [len(ex) for _, ex, _ in blur_list])
    empty = np.zeros(0)
    return SeparableBank(
        half=np.array([h for h, *_ in units], dtype=np.int64),
        start=starts[:-1].astype(np.int64),
        col=np.stack([np.concatenate([x.real for _, x, *_ in units]),
                      np.concatenate([x.imag for _, x, *_ in units])]),
        row=np.stack([np.concatenate([x.real for _, _, x, *_ in units]),
                      np.concatenate([x.imag for _, _, x, *_ in units])]),
        first=np.array([k for *_, k, _ in units], dtype=np.int64),
        second=np.array([k2 for *_, k2 in units], dtype=np.int64),
        dc=dc, blur_id=blur_id,
        blur_half=np.array([len(ex) // 2 for _, ex, _ in blur_list], dtype=np.int64),
        blur_start=blur_starts[:-1].astype(np.int64),
        blur_col=np.concatenate([empty] + [ex for _, ex, _ in blur_list])[None],
        blur_row=np.concatenate([empty] + [ey for *_, ey in blur_list])[None])


@njit(cache=True, nogil=True)
def _correlate_plain(src, starts, taps, tap_starts, n_taps, offs, size, out,
                     out_starts):  # pragma: no cover (compiled)
    """The correlation of :func:`metricfit._simd.correlate_group_2` (``out_starts.size``
    outputs), sums in its order and with its multiply-add: the same bits, any size."""
    n_src = starts.shape[0]
    for j in range(out_starts.shape[0]):
        for p in range(size):
            acc = 0.0
            for k in range(n_src):
                t0 = tap_starts[j * n_src + k]
                s0 = starts[k] + p
                for t in range(n_taps):
                    acc = multiply_add(taps[t0 + t], src[s0 + offs[t]], acc)
            out[out_starts[j] + p] = acc


@njit(cache=True, nogil=True)
def _correlate(src, starts, taps, tap_starts, n_taps, offs, size, out,
               out_starts):  # pragma: no cover (compiled)
    """One or two outputs: the vector intrinsic where ``size`` holds its block, else the
    plain loop (the same sums)."""
    if out_starts.shape[0] == 2 and size >= _PAIR_MIN:
        correlate_group_2(src, starts, taps, tap_starts, n_taps, offs, size, out, out_starts)
    elif out_starts.shape[0] == 1 and size >= _ONE_MIN:
        correlate_sources(src, starts, taps, tap_starts, n_taps, offs, size, out, out_starts)
    else:
        _correlate_plain(src, starts, taps, tap_starts, n_taps, offs, size, out, out_starts)


@njit(cache=True, nogil=True)
def _reflect_image(image, pad, out):  # pragma: no cover (compiled)
    """``image`` extended by ``pad`` of its symmetric reflection on every side, flat into out
    (rows + 2 pad rows of cols + 2 pad)."""
    rows, cols = image.shape
    width = cols + 2 * pad
    for i in range(rows + 2 * pad):
        src = _reflected(i - pad, rows)
        for j in range(width):
            out[i * width + j] = image[src, _reflected(j - pad, cols)]


@njit(cache=True, nogil=True)
def _column_pass(padded, pad, width, h, taps, tap_starts, rows, cols, out,
                 out_starts):  # pragma: no cover (compiled)
    """``out[s_o + r cols + j] = sum_d taps[t_o + d] I(r - h, j - d + h)`` for every output o
    (``s_o = out_starts[o]``, ``t_o = tap_starts[o]``) and r < rows + 2h: the column pass of
    the module docstring on the rows the row pass reads."""
    offs = 2 * h - np.arange(2 * h + 1)  # tap d (offset d - h) reads column j + 2h - d
    starts = np.empty(1, dtype=np.int64)
    row_out = np.empty_like(out_starts)
    for r in range(rows + 2 * h):
        starts[0] = (pad - h + r) * width + pad - h
        for o in range(out_starts.shape[0]):
            row_out[o] = out_starts[o] + r * cols
        _correlate(padded, starts, taps, tap_starts, 2 * h + 1, offs, cols, out, row_out)


@njit(cache=True, nogil=True)
def _row_pass(src, src_start, h, taps, tap_starts, rows, cols, out,
              out_starts):  # pragma: no cover (compiled)
    """``out[s_o + i cols + j] = sum_d taps[t_o + d] src[src_start + (i + 2h - d) cols + j]``
    for every output o: the row pass over the whole image in one flat sweep."""
    offs = (2 * h - np.arange(2 * h + 1)) * cols
    starts = np.full(1, src_start, dtype=np.int64)
    _correlate(src, starts, taps, tap_starts, 2 * h + 1, offs, rows * cols, out, out_starts)


@njit(cache=True, nogil=True)
def _magnitude_into(sums, sign, dc_r, dc_i, blur, out):  # pragma: no cover (compiled)
    """``out = |(X1 - s X2) + i (X3 + s X4) - c b|`` (s = ``sign``, c = ``dc_r + i dc_i``,
    b = ``blur``, flat: zeros where the kernel has no DC term; out of the image's shape);
    ``sums`` holds X1, X2, X3, X4 one after the other, flat."""
    rows, cols = out.shape
    size = rows * cols
    for r in range(rows):
        for c in range(cols):
            p = r * cols + c
            zr = sums[p] - sign * sums[size + p] - dc_r * blur[p]
            zi = sums[2 * size + p] + sign * sums[3 * size + p] - dc_i * blur[p]
            out[r, c] = math.sqrt(zr * zr + zi * zi)


@njit(cache=True, nogil=True)
def _magnitudes_into(images, half, start, col, row, first, second, dc, blur_id, blur_half,
                     blur_start, blur_col, blur_row, block_h, block_w, step_h, step_w,
                     out):  # pragma: no cover (compiled)
    """:func:`separable_gabor_magnitudes` of a stack of images into ``out`` (one call without
    the GIL; buffers for one image, reused)."""
    n, rows, cols = images.shape
    pad = 0
    for q in range(half.shape[0]):
        pad = max(pad, half[q])
    for b in range(blur_half.shape[0]):
        pad = max(pad, blur_half[b])
    width, size = cols + 2 * pad, rows * cols
    n_blocks = n_windows(rows, block_h, step_h) * n_windows(cols, block_w, step_w)
    padded = np.empty((rows + 2 * pad) * width)
    column = (rows + 2 * pad) * cols  # t_r, then t_i
    passes = np.empty(2 * column)
    sums = np.empty(4 * size)  # X1, X2, X3, X4
    blurs = np.zeros((max(blur_half.shape[0], 1), size))  # row 0 stays 0 without a DC term
    magnitude = np.empty((rows, cols))
    pair = np.array([0, column], dtype=np.int64)
    one = np.zeros(1, dtype=np.int64)
    from_real = np.array([0, 2 * size], dtype=np.int64)  # X1 = v_r * t_r, X3 = v_i * t_r
    from_imag = np.array([3 * size, size], dtype=np.int64)  # X4 = v_r * t_i, X2 = v_i * t_i
    # the taps flat: the real parts, then the imaginary ones (bank.col and bank.row's rows)
    col_taps, row_taps = col.reshape(col.size), row.reshape(row.size)
    blur_col_taps, blur_row_taps = blur_col.reshape(blur_col.size), blur_row.reshape(blur_row.size)
    unit_taps = np.empty(2, dtype=np.int64)  # where a unit's real and imaginary taps start
    blur_taps = np.empty(1, dtype=np.int64)
    for m in range(n):
        _reflect_image(images[m], pad, padded)
        for b in range(blur_half.shape[0]):
            h = blur_half[b]
            blur_taps[0] = blur_start[b]
            _column_pass(padded, pad, width, h, blur_col_taps, blur_taps, rows, cols, passes,
                         one)
            _row_pass(passes, 0, h, blur_row_taps, blur_taps, rows, cols, blurs[b], one)
        for q in range(half.shape[0]):
            h = half[q]
            unit_taps[0], unit_taps[1] = start[q], col.shape[1] + start[q]
            _column_pass(padded, pad, width, h, col_taps, unit_taps, rows, cols, passes, pair)
            _row_pass(passes, 0, h, row_taps, unit_taps, rows, cols, sums, from_real)
            _row_pass(passes, column, h, row_taps, unit_taps, rows, cols, sums, from_imag)
            for k, sign in ((first[q], 1.0), (second[q], -1.0)):
                if k < 0:
                    continue
                _magnitude_into(sums, sign, dc[0, k], dc[1, k], blurs[max(blur_id[k], 0)],
                                magnitude)
                window_means_into(magnitude, block_h, block_w, step_h, step_w, out[m],
                                  k * n_blocks)


def separable_gabor_magnitudes(images, bank, block, step=None):
    """Block means of the magnitudes of ``images`` (n, rows, cols) filtered by ``bank``
    (:func:`separable_bank`): kernels outer, block windows row-major, as
    :func:`metricfit.features._gabor.gabor_magnitudes` with that bank's kernels.

    Returns
    -------
    features : ndarray of shape (n_images, bank.n_kernels * n_blocks), float64
    """
    images, step = checked_stack(images, block, step)
    n, rows, cols = images.shape
    n_blocks = n_windows(rows, block[0], step[0]) * n_windows(cols, block[1], step[1])
    out = np.empty((n, bank.n_kernels * n_blocks))
    _magnitudes_into(images, *bank.arrays(), block[0], block[1], step[0], step[1], out)
    return out
