r"""Numba kernels of image gradients and HOG (Dalal & Triggs 2005, as scikit-image computes it).

Gradients (:func:`_gradients_into`, shared with dense SIFT): central differences without
halving, ``g_row[r, c] = I[r+1, c] - I[r-1, c]`` and ``g_col[r, c] = I[r, c+1] - I[r, c-1]``,
0 on the first and last row (for g_row) and column (for g_col): scikit-image's
``_hog_channel_gradient``.

HOG (:func:`hog_features`) follows ``skimage.feature.hog(image, orientations, pixels_per_cell,
cells_per_block, block_norm, feature_vector=True)`` of scikit-image 0.26 for grey images:

- magnitude ``hypot(g_col, g_row)`` and unsigned orientation
  ``rad2deg(arctan2(g_row, g_col)) % 180``, in degrees;
- hard binning: bin i takes ``e_i <= theta < e_{i+1}``, edges ``e_i = i * (180 / n)`` computed
  in float32 as skimage's Cython does (an angle that rounds to 180 falls in no bin, as there);
- cells of ``cell_h x cell_w`` pixels from the top-left corner, ``H // cell_h`` by
  ``W // cell_w`` of them (remaining rows and columns are ignored); each cell's histogram is
  the sum of the magnitudes in each bin divided by the cell's area;
- blocks of ``block_h x block_w`` cells moved by one cell, each normalised with eps = 1e-5:
  L1 ``v / (|v|_1 + eps)``, L1-sqrt its square root, L2 ``v / sqrt(|v|_2^2 + eps^2)``, L2-Hys
  L2 then ``min(., 0.2)`` then L2 again;
- output order (block row, block column, cell row in block, cell column in block, bin).

skimage accumulates the cell sums in float32; these kernels use float64, so the two agree to
float32 round-off (relative ~1e-6), not bit for bit.
"""

import math

import numpy as np
from numba import njit

__all__ = ["NORMS", "hog_shape", "hog_features"]

NORMS = ("L1", "L1-sqrt", "L2", "L2-Hys")
_EPS = 1e-5


@njit(cache=True, nogil=True)
def _gradients_into(image, g_row, g_col):  # pragma: no cover (compiled)
    """Central differences (not halved) of ``image`` (rows, cols); 0 on the outer rows of
    ``g_row`` and the outer columns of ``g_col``."""
    rows, cols = image.shape
    for r in range(rows):
        for c in range(cols):
            if 0 < r < rows - 1:
                g_row[r, c] = image[r + 1, c] - image[r - 1, c]
            else:
                g_row[r, c] = 0.0
            if 0 < c < cols - 1:
                g_col[r, c] = image[r, c + 1] - image[r, c - 1]
            else:
                g_col[r, c] = 0.0


@njit(cache=True, nogil=True)
def _cell_histograms_into(g_row, g_col, cell_h, cell_w, edges, hist):  # pragma: no cover
    """Orientation histograms (n_cells_r, n_cells_c, n_bins) of magnitudes, per cell area."""
    n_cr, n_cc, n_bins = hist.shape
    width = 180.0 / n_bins
    hist[:] = 0.0
    for r in range(n_cr * cell_h):
        for c in range(n_cc * cell_w):
            gr = g_row[r, c]
            gc = g_col[r, c]
            theta = (math.atan2(gr, gc) * (180.0 / math.pi)) % 180.0
            if theta >= edges[n_bins]:
                continue
            b = min(int(theta / width), n_bins - 1)
            while b > 0 and theta < edges[b]:
                b -= 1
            while b < n_bins - 1 and theta >= edges[b + 1]:
                b += 1
            hist[r // cell_h, c // cell_w, b] += math.hypot(gc, gr)
    area = cell_h * cell_w
    for i in range(n_cr):
        for j in range(n_cc):
            for b in range(n_bins):
                hist[i, j, b] /= area


@njit(cache=True, nogil=True)
def _normalised_blocks_into(hist, block_h, block_w, norm, out, offset):  # pragma: no cover
    """Every block of ``block_h x block_w`` cells (stride one cell), normalised by ``norm``
    (index into :data:`NORMS`), into ``out[offset:]`` in skimage's order."""
    n_cr, n_cc, n_bins = hist.shape
    k = offset
    size = block_h * block_w * n_bins
    for i in range(n_cr - block_h + 1):
        for j in range(n_cc - block_w + 1):
            start = k
            total = 0.0
            for a in range(block_h):
                for b in range(block_w):
                    for o in range(n_bins):
                        v = hist[i + a, j + b, o]
                        out[k] = v
                        k += 1
                        total += abs(v) if norm <= 1 else v * v
            if norm <= 1:  # L1, L1-sqrt
                scale = 1.0 / (total + _EPS)
                for t in range(start, start + size):
                    out[t] = out[t] * scale
                    if norm == 1:
                        out[t] = math.sqrt(out[t])
            else:  # L2, L2-Hys
                scale = 1.0 / math.sqrt(total + _EPS * _EPS)
                for t in range(start, start + size):
                    out[t] = out[t] * scale
                if norm == 3:
                    total = 0.0
                    for t in range(start, start + size):
                        out[t] = min(out[t], 0.2)
                        total += out[t] * out[t]
                    scale = 1.0 / math.sqrt(total + _EPS * _EPS)
                    for t in range(start, start + size):
                        out[t] = out[t] * scale


@njit(cache=True, nogil=True)
def _hog_into(images, cell_h, cell_w, block_h, block_w, edges, norm, out):  # pragma: no cover
    """HOG of every image of ``images`` (n, rows, cols) into the rows of ``out``."""
    n, rows, cols = images.shape
    g_row = np.empty((rows, cols))
    g_col = np.empty((rows, cols))
    hist = np.empty((rows // cell_h, cols // cell_w, edges.shape[0] - 1))
    for m in range(n):
        _gradients_into(images[m], g_row, g_col)
        _cell_histograms_into(g_row, g_col, cell_h, cell_w, edges, hist)
        _normalised_blocks_into(hist, block_h, block_w, norm, out[m], 0)


def bin_edges(orientations):
    """skimage's float32 bin edges ``i * float32(180 / n)``, i = 0..n, as float64."""
    step = np.float32(180.0 / orientations)
    return (np.arange(orientations + 1, dtype=np.float32) * step).astype(np.float64)


def hog_shape(rows, cols, orientations, cell, block):
    """``(n_blocks_row, n_blocks_col, block_h, block_w, orientations)``; blocks may be <= 0
    when the image is too small (the caller checks)."""
    n_cr, n_cc = rows // cell[0], cols // cell[1]
    return (n_cr - block[0] + 1, n_cc - block[1] + 1, block[0], block[1], orientations)


def hog_features(images, orientations=9, cell=(8, 8), block=(2, 2), norm="L2-Hys"):
    """HOG of a stack of images (module docstring); parameters as ``skimage.feature.hog``.

    Parameters
    ----------
    images : ndarray of shape (n_images, rows, cols)
        Converted to float64; not checked for NaN/inf (the transformer does it).
    orientations : int
    cell : (int, int)
        ``pixels_per_cell``.
    block : (int, int)
        ``cells_per_block``; at least one block must fit.
    norm : {'L1', 'L1-sqrt', 'L2', 'L2-Hys'}

    Returns
    -------
    features : ndarray of shape (n_images, prod(hog_shape(...))), float64
    """
    images = np.ascontiguousarray(images, dtype=np.float64)
    if images.ndim != 3:
        raise ValueError(f"images must be 3-D (n_images, rows, cols), got {images.shape}.")
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}.")
    shape = hog_shape(*images.shape[1:], orientations, cell, block)
    if min(shape) < 1:
        raise ValueError(f"Images of {images.shape[1:]} pixels hold no block of {block} cells "
                         f"of {cell} pixels.")
    out = np.empty((images.shape[0], math.prod(shape)))
    _hog_into(images, int(cell[0]), int(cell[1]), int(block[0]), int(block[1]),
              bin_edges(orientations), NORMS.index(norm), out)
    return out
