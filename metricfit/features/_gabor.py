r"""Gabor kernels, filter-bank magnitudes by FFT, and their block means (numba).

:class:`metricfit.features.Gabor` computes its magnitudes by separable convolution
(:mod:`._gabor_separable`); :func:`gabor_magnitudes` here, by FFT for any kernels, is the
reference that the tests hold it to.

Kernel (:func:`gabor_kernel`): scikit-image's ``skimage.filters.gabor_kernel(frequency,
theta, sigma_x=sigma, sigma_y=sigma, n_stds)`` (0.26), on the grid
``x in -x0..x0`` (columns), ``y in -y0..y0`` (rows),

.. math:: g(x, y) = \frac{1}{2\pi\sigma^2}
          \exp\Big(-\frac{x'^2 + y'^2}{2\sigma^2}\Big) \exp(2\pi i f x'), \qquad
          x' = x\cos\theta + y\sin\theta,\ y' = -x\sin\theta + y\cos\theta,

with ``x0 = ceil(max(|n sigma cos theta|, |n sigma sin theta|, 1))`` (n = ``n_stds``) and y0
alike. With ``zero_mean=True`` the kernel's DC is removed, ``g - (sum g / sum e) e`` for its
Gaussian envelope e: the discrete form of the DC-compensation term ``- exp(-sigma^2 / 2)`` of
Lades et al. 1993 / Liu & Wechsler 2002, so a constant image gives a zero response.

Bank (:func:`gabor_bank`): Liu & Wechsler, *Gabor feature based classification using the
enhanced Fisher linear discriminant model*, IEEE TIP 2002: 5 scales v = 0..4 and 8 orientations
u = 0..7, wave vector ``k_v = k_max / f^v`` with ``k_max = pi / 2``, ``f = sqrt 2``, so the
frequency is ``1 / 4 / sqrt(2)^v`` cycles per pixel, ``theta_u = u pi / 8``, and Gaussian
width ``sigma / k_v`` with ``sigma = 2 pi``: ``sigma_x = sigma_y = 1 / frequency`` pixels.

Responses (:func:`gabor_magnitudes`): the image is extended by symmetric reflection
(``d c b a | a b c d | d c b a``, scipy.ndimage's 'reflect', the mode of skimage's
``filters.gabor``) by the largest kernel half-width and convolved with every kernel through
one FFT of the image and one inverse FFT per kernel (scipy.fft). The magnitude
``|I * g|`` is averaged over blocks (block windows of :mod:`metricfit.features._blocks`).
"""

import math

import numpy as np
from numba import njit
from scipy import fft as sp_fft

from ._blocks import n_windows, window_means_into

__all__ = ["gabor_kernel", "gabor_bank", "gabor_magnitudes"]

#: Images per batched FFT in :func:`gabor_magnitudes`: 4 x 8 kernels x ~160 x 144 complex
#: responses at the coarsest default scale, about 12 MB per thread.
_BATCH = 4


def half_width(sigma, theta, n_stds):
    """scikit-image's half-width of the kernel's square support, ``x0 = y0`` of the module
    docstring."""
    ct, st = math.cos(theta), math.sin(theta)
    return math.ceil(max(abs(n_stds * sigma * ct), abs(n_stds * sigma * st), 1))


def gabor_kernel(frequency, theta=0.0, sigma=None, n_stds=3, zero_mean=False):
    """Complex Gabor kernel, equal to skimage's with ``sigma_x = sigma_y = sigma``.

    Parameters
    ----------
    frequency : float
        Cycles per pixel of the carrier, > 0.
    theta : float, default=0
        Orientation in radians (0: carrier along the columns, x).
    sigma : float, default=None
        Gaussian standard deviation in pixels; None: ``1 / frequency`` (Liu & Wechsler).
    n_stds : float, default=3
        Half-width of the kernel in standard deviations.
    zero_mean : bool, default=False
        Remove the DC (module docstring).

    Returns
    -------
    kernel : ndarray of shape (2 y0 + 1, 2 x0 + 1), complex128
    """
    sigma = 1.0 / frequency if sigma is None else sigma
    ct, st = math.cos(theta), math.sin(theta)
    x0 = y0 = half_width(sigma, theta, n_stds)
    y, x = np.meshgrid(np.arange(-y0, y0 + 1), np.arange(-x0, x0 + 1), indexing="ij",
                       sparse=True)
    rotx = x * ct + y * st
    roty = -x * st + y * ct
    g = np.exp(-0.5 * (rotx**2 / sigma**2 + roty**2 / sigma**2)
               + 1j * (2 * np.pi * frequency * rotx))
    g *= 1 / (2 * np.pi * sigma * sigma)
    if zero_mean:
        envelope = np.exp(-0.5 * (rotx**2 + roty**2) / sigma**2) / (2 * np.pi * sigma * sigma)
        g -= g.sum() / envelope.sum() * envelope
    return g


def gabor_bank(frequencies, n_orientations, sigma_factor=1.0, n_stds=3, zero_mean=True):
    """Kernels for every (frequency, orientation), frequencies outer:
    ``theta_u = u pi / n_orientations``, ``sigma = sigma_factor / frequency``."""
    return [gabor_kernel(f, u * np.pi / n_orientations, sigma_factor / f, n_stds, zero_mean)
            for f in frequencies for u in range(n_orientations)]


def _bank_spectra(kernels, shape):
    """FFT (of ``shape``) of each kernel with its centre wrapped to index (0, 0)."""
    spectra = np.empty((len(kernels),) + shape, dtype=np.complex128)
    for k, g in enumerate(kernels):
        wrapped = np.zeros(shape, dtype=np.complex128)
        hy, hx = g.shape[0] // 2, g.shape[1] // 2
        rows = np.arange(-hy, hy + 1) % shape[0]
        cols = np.arange(-hx, hx + 1) % shape[1]
        wrapped[np.ix_(rows, cols)] = g
        spectra[k] = sp_fft.fft2(wrapped)
    return spectra


@njit(cache=True, nogil=True, inline="always")
def _reflected(i, length):  # pragma: no cover (compiled)
    """Index in ``0..length-1`` of position ``i`` of the symmetric extension (period 2
    length: ``d c b a | a b c d | d c b a``, np.pad's 'symmetric', however wide)."""
    m = i % (2 * length)
    return m if m < length else 2 * length - 1 - m


@njit(cache=True, nogil=True)
def _reflect_into(images, pad_r, pad_c, out):  # pragma: no cover (compiled)
    """Each image extended by ``pad_r`` rows and ``pad_c`` columns of its symmetric
    reflection into the top-left of ``out[k]`` (n, fft rows, fft cols), zeros elsewhere:
    ``np.pad(images, ((0, 0), (pad_r, pad_r), (pad_c, pad_c)), mode="symmetric")``, value
    for value, in one call without the GIL."""
    n, rows, cols = images.shape
    used_r, used_c = rows + 2 * pad_r, cols + 2 * pad_c
    for k in range(n):
        for i in range(out.shape[1]):
            if i >= used_r:
                out[k, i, :] = 0.0
                continue
            src = _reflected(i - pad_r, rows)
            for j in range(used_c):
                out[k, i, j] = images[k, src, _reflected(j - pad_c, cols)]
            out[k, i, used_c:] = 0.0


@njit(cache=True, nogil=True)
def _pooled_magnitudes_into(responses, pad_r, pad_c, rows, cols, block_h, block_w, step_h,
                            step_w, out, offset):  # pragma: no cover (compiled)
    """Mean of ``|responses[m, k]|`` over the image part (offset by the padding) in each
    block window, kernels outer, windows row-major, into ``out[m, offset:]`` for every image
    m of the batch (one call, without the GIL)."""
    magnitude = np.empty((rows, cols))
    n_blocks = n_windows(rows, block_h, step_h) * n_windows(cols, block_w, step_w)
    for m in range(responses.shape[0]):
        for k in range(responses.shape[1]):
            for r in range(rows):
                for c in range(cols):
                    z = responses[m, k, r + pad_r, c + pad_c]
                    magnitude[r, c] = math.sqrt(z.real * z.real + z.imag * z.imag)
            window_means_into(magnitude, block_h, block_w, step_h, step_w, out[m],
                              offset + k * n_blocks)


class GaborPlan:
    """Kernel spectra for images of one shape, reused between calls.

    Each run of ``group_size`` consecutive kernels (one scale of :func:`gabor_bank` when it
    is the number of orientations) shares an FFT size: the image reflected by that group's
    largest half-width, so the small kernels do not pay for the largest one's."""

    def __init__(self, kernels, rows, cols, group_size=8):
        self.rows, self.cols, self.n_kernels = rows, cols, len(kernels)
        self.groups = []  # (first kernel, pad_r, pad_c, fft shape, spectra)
        for first in range(0, len(kernels), group_size):
            group = kernels[first:first + group_size]
            pad_r = max(g.shape[0] // 2 for g in group)
            pad_c = max(g.shape[1] // 2 for g in group)
            shape = (sp_fft.next_fast_len(rows + 2 * pad_r),
                     sp_fft.next_fast_len(cols + 2 * pad_c))
            self.groups.append((first, pad_r, pad_c, shape, _bank_spectra(group, shape)))

    def responses(self, image):
        """Per group: ``(first, pad_r, pad_c, responses)`` with the complex responses of the
        reflected, zero-filled image on the image's columns, (n_group, fft rows, cols); the
        image part starts at (pad_r, pad_c). The inverse FFT runs along the rows of all
        rows, then along the columns of the image columns only (a pruned 2-D inverse FFT)."""
        for first, pad_r, pad_c, responses in self.batch_responses(image[None]):
            yield first, pad_r, pad_c, responses[0]

    def work_size(self, n):
        """Complex entries of the largest response array of :meth:`batch_responses` for n
        images (the size of its ``work`` buffer)."""
        return max(n * spectra.size for *_, spectra in self.groups)

    def batch_responses(self, images, work=None):
        """:meth:`responses` of a stack of images (n, rows, cols): responses of shape (n,
        n_group, fft rows, cols). The FFTs of the n images are one batched call each (the
        Python overhead, which holds the GIL, is paid once per batch, so that threads scale);
        each image's transform is the same computation as alone, bit for bit. ``work``, a
        complex128 buffer of at least :meth:`work_size` entries, holds the responses (each
        group's overwrite the last's): reused, it spares the page faults of a fresh array of
        megabytes per group, which cost a third of the time and serialise threads."""
        n = images.shape[0]
        images = np.ascontiguousarray(images, dtype=np.float64)
        for first, pad_r, pad_c, shape, spectra in self.groups:
            padded = np.empty((n,) + shape)
            _reflect_into(images, pad_r, pad_c, padded)
            size = n * spectra.size
            out = None if work is None or work.size < size else \
                work[:size].reshape((n,) + spectra.shape)
            spectrum = np.multiply(spectra, sp_fft.fft2(padded)[:, None], out=out)
            on_cols = sp_fft.ifft(spectrum, axis=-1, overwrite_x=True)
            on_cols = on_cols[..., pad_c:pad_c + self.cols]
            yield first, pad_r, 0, sp_fft.ifft(on_cols, axis=-2, overwrite_x=True)


def checked_stack(images, block, step):
    """``(images, step)``: the stack as contiguous float64 (n, rows, cols) and the window step
    (None: the block), or a ValueError naming what is wrong with them."""
    images = np.ascontiguousarray(images, dtype=np.float64)
    if images.ndim != 3:
        raise ValueError(f"images must be 3-D (n_images, rows, cols), got {images.shape}.")
    _, rows, cols = images.shape
    step = block if step is None else step
    if not (1 <= block[0] <= rows and 1 <= block[1] <= cols and min(step) >= 1):
        raise ValueError(f"Need 1 <= block <= image size and step >= 1: block {block}, step "
                         f"{step}, images {rows}x{cols}.")
    return images, step


def gabor_magnitudes(images, kernels, block, step=None, plan=None):
    """Block means of the Gabor magnitudes of a stack of images (module docstring).

    Parameters
    ----------
    images : ndarray of shape (n_images, rows, cols)
        Converted to float64; not checked for NaN/inf (the transformer does it).
    kernels : list of complex ndarray
        Odd-sized kernels, e.g. :func:`gabor_bank`.
    block : (int, int)
        Block window height and width, at most the image size.
    step : (int, int), default=None
        Window shift; None: the block (non-overlapping blocks).
    plan : GaborPlan, default=None
        Reused when it was made for these kernels and this image shape.

    Returns
    -------
    features : ndarray of shape (n_images, len(kernels) * n_blocks), float64
        Kernels outer, blocks row-major.
    """
    images, step = checked_stack(images, block, step)
    n, rows, cols = images.shape
    plan = GaborPlan(kernels, rows, cols) if plan is None else plan
    dim = len(kernels) * n_windows(rows, block[0], step[0]) * n_windows(cols, block[1], step[1])
    out = np.empty((n, dim))
    n_blocks = dim // len(kernels)
    work = np.empty(plan.work_size(min(n, _BATCH)), dtype=np.complex128)
    for start in range(0, n, _BATCH):  # a fixed batch: bounds the responses' memory
        batch = images[start:start + _BATCH]
        for first, pad_r, pad_c, responses in plan.batch_responses(batch, work):
            _pooled_magnitudes_into(responses, pad_r, pad_c, rows, cols, block[0], block[1],
                                    step[0], step[1], out[start:start + len(batch)],
                                    first * n_blocks)
    return out
