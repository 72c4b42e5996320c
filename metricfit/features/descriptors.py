r"""Dense SIFT, Gabor and HOG face descriptors (issue 15) as transformers on image arrays.

Like :class:`~metricfit.features.LBP` they take images (n_images, H, W) -> (n_images,
n_features) or pairs of images (n_pairs, 2, H, W) -> (n_pairs, 2, n_features), read grey
levels as float64 (any real dtype in) and return float64, so a verification system is one
pipeline::

    make_pipeline(DenseSIFT(), SquareRoot(), WPCA(n_components=300), TSML())

Seed 002 (section III.B) fuses LBP, OCLBP, SIFT (seed 001: 128-d histograms at 9 facial points
and 3 scales, 3,456-d) and Gabor wavelets (4,800-d, 5 scales x 8 orientations on 150x80
crops); our 62x47 crops have no landmarks, so SIFT is computed on a regular grid. All three
outputs are non-negative, so the square-root variant is ``make_pipeline(D(), SquareRoot())``.

Dimensions on 62x47 images with the defaults: DenseSIFT 34 patches x 128 = 4,352 (24 + 8 + 2
patches of 16, 24 and 32 pixels); Gabor 40 x 6 x 5 = 1,200 (4,800 on 150x80); HOG 6 x 4 blocks
x 2 x 2 cells x 9 bins = 864.
"""

import math
from numbers import Integral, Real

import numpy as np

from .._validation import Interval, StrOptions
from ._blocks import n_windows
from ._gabor_separable import separable_bank, separable_gabor_magnitudes
from ._hog import NORMS, hog_features, hog_shape
from ._images import _ImageDescriptor
from ._sift import DIM, dense_sift, grid

#: Gabor's default ratio of consecutive scales (a module constant: defaults are values).
SQRT2 = math.sqrt(2)

__all__ = ["DenseSIFT", "Gabor", "HOG"]

def _int_pair(value, name):
    """``(a, b)`` of ints >= 1 from a 2-sequence, else ValueError naming ``name``."""
    ok = isinstance(value, (tuple, list, np.ndarray)) and np.ndim(value) == 1 and len(value) == 2
    ok = ok and all(isinstance(v, Integral) and not isinstance(v, (bool, np.bool_)) and v >= 1
                    for v in value)
    if not ok:
        raise ValueError(f"{name} must be a pair of integers >= 1, got {value!r}.")
    return int(value[0]), int(value[1])


def _int_sequence(value, name):
    """A non-empty tuple of ints >= 1, else ValueError naming ``name``."""
    ok = isinstance(value, (tuple, list, np.ndarray)) and np.ndim(value) == 1 and len(value) > 0
    ok = ok and all(isinstance(v, Integral) and not isinstance(v, (bool, np.bool_)) and v >= 1
                    for v in value)
    if not ok:
        raise ValueError(f"{name} must be a non-empty sequence of integers >= 1, got {value!r}.")
    return tuple(int(v) for v in value)


class HOG(_ImageDescriptor):
    r"""Histograms of oriented gradients (Dalal & Triggs, CVPR 2005), as scikit-image's ``hog``.

    Equal to ``skimage.feature.hog(image, orientations, pixels_per_cell, cells_per_block,
    block_norm)`` (scikit-image 0.26, grey images, ``transform_sqrt=False``) to float32
    round-off (skimage sums cells in float32): central-difference gradients, unsigned
    orientations in ``orientations`` hard bins over [0, 180) degrees, magnitudes summed per cell
    and divided by its area, blocks of cells moved by one cell and normalised (eps = 1e-5). See
    :mod:`metricfit.features._hog`.

    Parameters
    ----------
    orientations : int, default=9
        Orientation bins (Dalal & Triggs: 9).
    pixels_per_cell : (int, int), default=(8, 8)
        Cell height and width in pixels (Dalal & Triggs: 8x8). Rows and columns beyond the
        last whole cell are ignored.
    cells_per_block : (int, int), default=(2, 2)
        Block size in cells (Dalal & Triggs: 2x2; skimage's default is 3x3).
    block_norm : {'L1', 'L1-sqrt', 'L2', 'L2-Hys'}, default='L2-Hys'
        Block normalisation (Dalal & Triggs' best: L2-Hys, clipping at 0.2).

    Attributes
    ----------
    image_shape_ : tuple of (int, int)
    n_features_out_ : int
        ``(H // c_h - b_h + 1) (W // c_w - b_w + 1) b_h b_w orientations``: 864 for 62x47.
    config_ : dict
        The checked parameters ``transform`` uses (fixed at ``fit``).

    Examples
    --------
    Three 20x16 images in 4x4-pixel cells: 5 x 4 cells, 4 x 3 blocks of 2 x 2 cells, 9 bins;
    every block is L2-normalised (L2-Hys):

    >>> import numpy as np
    >>> from metricfit.features import HOG
    >>> images = np.random.default_rng(0).integers(0, 256, size=(3, 20, 16)).astype(float)
    >>> hog = HOG(pixels_per_cell=(4, 4)).fit(images)
    >>> H = hog.transform(images)
    >>> H.shape, hog.n_features_out_ == 4 * 3 * 2 * 2 * 9
    ((3, 432), True)
    >>> bool(np.allclose(np.linalg.norm(H.reshape(3, 12, 36), axis=2), 1))
    True
    """

    _parameter_constraints = {
        "orientations": [Interval(Integral, 1, None)],
        "pixels_per_cell": ["array-like"],
        "cells_per_block": ["array-like"],
        "block_norm": [StrOptions(set(NORMS))],
    }

    def __init__(self, orientations=9, pixels_per_cell=(8, 8), cells_per_block=(2, 2),
                 block_norm="L2-Hys"):
        self.orientations = orientations
        self.pixels_per_cell = pixels_per_cell
        self.cells_per_block = cells_per_block
        self.block_norm = block_norm

    def _config(self):
        return {"orientations": int(self.orientations),
                "cell": _int_pair(self.pixels_per_cell, "pixels_per_cell"),
                "block": _int_pair(self.cells_per_block, "cells_per_block"),
                "norm": self.block_norm}

    def _check_size(self, height, width, c):
        self._too_small(height, width, c["cell"][0] * c["block"][0],
                        c["cell"][1] * c["block"][1], "a block of cells")

    def _dimension(self, height, width, c):
        return math.prod(hog_shape(height, width, c["orientations"], c["cell"], c["block"]))

    def _describe(self, images):
        return hog_features(images, **self.config_)


class DenseSIFT(_ImageDescriptor):
    r"""Dense SIFT: Lowe's 128-d descriptor on a regular grid of patches at a few scales.

    Seed 001 (section 5, after Everingham et al.) computes 128-d SIFT at 9 facial points and 3
    scales (3,456-d); without landmarks, the same descriptor is taken on a grid. Each patch of
    4b x 4b pixels (b = bin size) gives 4 x 4 cells x 8 orientation bins of Gaussian-weighted
    (sigma = half the patch width) gradient magnitudes, trilinearly interpolated, L2-normalised,
    clipped at 0.2 and renormalised (Lowe, IJCV 2004, section 6.1); upright (the crops are
    aligned), on the unsmoothed image. See :mod:`metricfit.features._sift`.

    Parameters
    ----------
    bin_sizes : sequence of int, default=(4, 6, 8)
        Cell side b of each scale in pixels: patches of 16, 24 and 32 pixels, three scales as
        in seed 001.
    steps : sequence of int, default=None
        Grid step of each scale; None: 2b, half-overlapping patches (like OCLBP's windows).
        The grid of each scale is centred in the image.

    Attributes
    ----------
    image_shape_ : tuple of (int, int)
    n_features_out_ : int
        ``128 sum_s n_rows(s) n_cols(s)`` with ``n = (L - 4b) // step + 1`` per axis: 4,352 for
        62x47 (6x4 + 4x2 + 2x1 patches).
    config_ : dict

    Examples
    --------
    Bin sizes 2 and 3 (patches of 8 and 12 pixels, steps 4 and 6) on 20x16 images: 4 x 3 +
    2 x 1 = 14 patches of 128 values, each descriptor of unit length:

    >>> import numpy as np
    >>> from metricfit.features import DenseSIFT
    >>> images = np.random.default_rng(0).integers(0, 256, size=(3, 20, 16)).astype(float)
    >>> D = DenseSIFT(bin_sizes=(2, 3)).fit_transform(images)
    >>> D.shape
    (3, 1792)
    >>> bool(np.allclose(np.linalg.norm(D.reshape(3, 14, 128), axis=2), 1))
    True

    References
    ----------
    - Guillaumin, Verbeek and Schmid, "Is that you? Metric Learning Approaches for Face
      Identification", ICCV 2009 (seed 001).
    """

    _parameter_constraints = {
        "bin_sizes": ["array-like"],
        "steps": ["array-like", None],
    }

    def __init__(self, bin_sizes=(4, 6, 8), steps=None):
        self.bin_sizes = bin_sizes
        self.steps = steps

    def _config(self):
        bins = _int_sequence(self.bin_sizes, "bin_sizes")
        steps = tuple(2 * b for b in bins) if self.steps is None else \
            _int_sequence(self.steps, "steps")
        if len(steps) != len(bins):
            raise ValueError(f"steps must have one entry per bin size ({len(bins)}), got "
                             f"{self.steps!r}.")
        return {"bin_sizes": bins, "steps": steps}

    def _check_size(self, height, width, c):
        side = 4 * max(c["bin_sizes"])
        self._too_small(height, width, side, side, f"a patch of bin size {max(c['bin_sizes'])}")

    def _dimension(self, height, width, c):
        return DIM * sum(grid(height, b, s)[1] * grid(width, b, s)[1]
                         for b, s in zip(c["bin_sizes"], c["steps"], strict=True))

    def _describe(self, images):
        return dense_sift(images, **self.config_)


class Gabor(_ImageDescriptor):
    r"""Gabor magnitude responses, averaged over blocks (5 scales x 8 orientations).

    The filter bank of Liu & Wechsler (IEEE TIP 2002), the usual one for faces: frequencies
    ``max_frequency / scale_factor**v`` for v < ``n_scales`` (k_max = pi / 2, f = sqrt 2:
    1/4 ... 1/16 cycles per pixel), orientations ``u pi / n_orientations``, Gaussian width
    ``sigma_factor / frequency`` pixels (their sigma = 2 pi), DC removed. Each kernel equals
    ``skimage.filters.gabor_kernel(frequency, theta, sigma_x=sigma, sigma_y=sigma,
    n_stds=n_stds)`` before the DC removal. The image is reflected at its borders
    (``d c b a | a b c d``), convolved with each kernel, and the magnitude averaged over
    blocks: seed 002's 4,800-d Gabor is 40 maps x 15 x 8 blocks of 10x10 on 150x80 crops
    (after Nguyen & Bai 2010). The kernels are separable: each convolution is a pass along
    the columns and one along the rows, orientations theta and pi - theta sharing both
    (:mod:`metricfit.features._gabor_separable`; the FFT of :mod:`metricfit.features._gabor`
    is the reference it matches to about 1e-13). The cost grows with the kernel's width
    (``n_stds sigma_factor / frequency``), linearly, not with its area.

    Parameters
    ----------
    n_scales : int, default=5
    n_orientations : int, default=8
    max_frequency : float in (0, 0.5], default=0.25
        Frequency of the finest scale, cycles per pixel.
    scale_factor : float > 1, default=sqrt(2)
        Ratio between consecutive frequencies.
    sigma_factor : float > 0, default=1.0
        Gaussian sigma times the frequency.
    n_stds : float > 0, default=3
        Kernel half-width in sigmas (skimage's default).
    block_size : (int, int), default=(10, 10)
        Blocks over which the magnitudes are averaged (block windows as :class:`LBP`'s: a
        border remainder over half a block is kept as a partial block).
    zero_mean : bool, default=True
        Remove each kernel's DC (a constant image then gives 0); False gives skimage's kernels.

    Attributes
    ----------
    image_shape_ : tuple of (int, int)
    n_features_out_ : int
        ``n_scales n_orientations n(H, b_h) n(W, b_w)``: 40 x 6 x 5 = 1,200 for 62x47.
    frequencies_ : ndarray of shape (n_scales,)
    config_ : dict

    Examples
    --------
    2 scales x 4 orientations on 20x16 images in 10x8 blocks: 8 maps x 2 x 2 blocks. The
    kernels have no DC, so a constant image gives zeros:

    >>> import numpy as np
    >>> from metricfit.features import Gabor
    >>> images = np.random.default_rng(0).integers(0, 256, size=(3, 20, 16)).astype(float)
    >>> gabor = Gabor(n_scales=2, n_orientations=4, block_size=(10, 8)).fit(images)
    >>> gabor.transform(images).shape, np.round(gabor.frequencies_, 4)
    ((3, 32), array([0.25  , 0.1768]))
    >>> bool(np.allclose(gabor.transform(np.full((1, 20, 16), 7.0)), 0))
    True

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """

    _parameter_constraints = {
        "n_scales": [Interval(Integral, 1, None)],
        "n_orientations": [Interval(Integral, 1, None)],
        "max_frequency": [Interval(Real, 0, 0.5, closed="right")],
        "scale_factor": [Interval(Real, 1, None, closed="neither")],
        "sigma_factor": [Interval(Real, 0, None, closed="neither")],
        "n_stds": [Interval(Real, 0, None, closed="neither")],
        "block_size": ["array-like"],
        "zero_mean": ["boolean"],
    }

    def __init__(self, n_scales=5, n_orientations=8, max_frequency=0.25,
                 scale_factor=SQRT2, sigma_factor=1.0, n_stds=3, block_size=(10, 10),
                 zero_mean=True):
        self.n_scales = n_scales
        self.n_orientations = n_orientations
        self.max_frequency = max_frequency
        self.scale_factor = scale_factor
        self.sigma_factor = sigma_factor
        self.n_stds = n_stds
        self.block_size = block_size
        self.zero_mean = zero_mean

    def _config(self):
        for name in ("max_frequency", "scale_factor", "sigma_factor", "n_stds"):
            if not np.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)!r}.")
        return {"block": _int_pair(self.block_size, "block_size")}

    def _check_size(self, height, width, c):
        self._too_small(height, width, *c["block"], "a block")

    def _dimension(self, height, width, c):
        (bh, bw) = c["block"]
        return (self.n_scales * self.n_orientations * n_windows(height, bh, bh)
                * n_windows(width, bw, bw))

    def fit(self, X, y=None):
        super().fit(X, y)
        self.frequencies_ = self.max_frequency / self.scale_factor ** np.arange(self.n_scales)
        self._plan = self._make_plan()  # built here: transform leaves the estimator unchanged
        return self

    fit.__doc__ = _ImageDescriptor.fit.__doc__

    def _prepare(self):
        if getattr(self, "_plan", None) is None:  # not pickled: rebuilt after unpickling
            self._plan = self._make_plan()

    def _describe(self, images):
        self._prepare()
        return separable_gabor_magnitudes(images, self._plan, self.config_["block"])

    def _make_plan(self):
        return separable_bank(self.frequencies_, self.n_orientations, self.sigma_factor,
                              self.n_stds, self.zero_mean)

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_plan", None)
        return state
