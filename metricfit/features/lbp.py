r"""LBP and OCLBP face descriptors (seed 002, appendix) as transformers on image arrays.

Both take images (n_images, H, W) -> (n_images, n_features) or pairs of images
(n_pairs, 2, H, W) -> (n_pairs, 2, n_features), so they chain before a pair learner in a
``Pipeline``. Images are read as float64 grey levels; the output is float64.

Dimension
---------
With B = P(P-1) + 3 bins (59 for P = 8) and, along an axis of length L, a window of size b
moved by a step s,

.. math:: n(L, b, s) = \left\lceil \frac{2L - b}{2s} \right\rceil

windows (a window is kept while more than half of it lies in the image; see
:mod:`metricfit.features._blocks`):

- LBP: :math:`d = n(H, b_h, b_h)\, n(W, b_w, b_w)\, B`. 150x80 with 10x10 blocks: 15 x 8 x 59 =
  7,080 (the appendix); 62x47 with 10x10 blocks: 6 x 5 x 59 = 1,770.
- OCLBP: :math:`d = B \sum_c n(H, b_h^c, s_h^c)\, n(W, b_w^c, s_w^c)` with the step
  :math:`s = \max(1, \lfloor b (1 - \text{overlap}) + 1/2 \rfloor)`. 150x80 with the default
  configurations: (29 x 15 + 21 x 11 + 16 x 8) x 59 = (435 + 231 + 128) x 59 = 46,846 (the
  appendix); 62x47: (12 x 9 + 8 x 6 + 6 x 5) x 59 = 10,974.
"""

import math
from numbers import Integral, Real

import numpy as np

from .._validation import Interval
from ._blocks import lbp_histograms, n_windows
from ._images import _ImageDescriptor
from ._lbp import n_bins

__all__ = ["LBP", "OCLBP", "CROP_CELL_SIDE"]

CROP_CELL_SIDE = 5
"""The LBP cell side of ``metricfit verify`` (``--lbp-block``'s default): seed 002's 10x10
cells on its 150x80 crops scaled to the 62x47 crops of the shared LFW images (10 x 62 / 150
= 4.1 rows, 10 x 47 / 80 = 5.9 columns; 5x5 cells: 12 x 9 x 59 = 6,372 features). On LFW
View 2 restricted, TSML-Sim on sqrt-LBP reaches 80.38 +- 0.60 % with it against 77.45 with
10x10 cells (``docs/results/lfw_002.md``). :class:`LBP`'s own
default stays the seed's 10x10 (the cell of the seed's crops); images smaller than two cells
get cells of half the image (digits: 4x4 either way)."""


def _check_config(config, what):
    """``(block_h, block_w, radius)`` with positive ints and a positive real, else ValueError."""
    ok = isinstance(config, (tuple, list)) and len(config) == 3
    if ok:
        bh, bw, r = config
        ok = all(isinstance(v, Integral) and not isinstance(v, bool) and v >= 1 for v in (bh, bw))
        ok = ok and isinstance(r, Real) and not isinstance(r, bool) and 0 < r < np.inf
    if not ok:
        raise ValueError(
            f"{what} must be (block_h, block_w, radius) with integer block sides >= 1 and a "
            f"radius > 0, got {config!r}."
        )
    return int(bh), int(bw), float(r)


class _BlockLBP(_ImageDescriptor):
    """What :class:`LBP` and :class:`OCLBP` share: their windows are the fitted configuration
    (``windows_``), one kernel call per window configuration on all images."""

    _config_attribute = "windows_"

    def _windows(self):
        """List of (block_h, block_w, step_h, step_w, radius, n_points), parameters checked."""
        raise NotImplementedError

    def _config(self):
        return self._windows()

    def _check_size(self, height, width, windows):
        for bh, bw, _, _, radius, _ in windows:
            if height < bh or width < bw:
                raise ValueError(
                    f"Images of {height}x{width} pixels are smaller than the {bh}x{bw} block "
                    f"of {type(self).__name__}."
                )
            side = 2 * math.ceil(radius) + 1
            if min(height, width) < side:
                raise ValueError(
                    f"Images of {height}x{width} pixels are too small for an LBP radius of "
                    f"{radius}: each side needs at least 2 * ceil(radius) + 1 = {side} pixels."
                )

    def _dimension(self, height, width, windows):
        return sum(_dimensions(height, width, windows))

    def _describe(self, images):
        """Block histograms of the LBP codes of each image, configurations concatenated."""
        out = np.empty((images.shape[0], self.n_features_out_))
        start = 0
        for (bh, bw, sh, sw, radius, points), dim in zip(
                self.windows_, _dimensions(*self.image_shape_, self.windows_), strict=True):
            lbp_histograms(images, points, radius, bh, bw, sh, sw, out=out, offset=start)
            start += dim
        return out


def _dimensions(height, width, windows):
    """Number of features of each window configuration."""
    return [n_windows(height, bh, sh) * n_windows(width, bw, sw) * n_bins(points)
            for bh, bw, sh, sw, _, points in windows]


class LBP(_BlockLBP):
    r"""Uniform LBP histograms on non-overlapping blocks (:math:`LBP^{u2}_{P,R}`, seed 002).

    Each image is coded by nri_uniform LBP (P points on a circle of radius R, bilinear
    interpolation; equal to scikit-image's ``local_binary_pattern(..., 'nri_uniform')``), cut
    into ``block_size`` blocks, and the L1-normalised code histogram of each block (B =
    P(P-1)+3 bins, 59 for P = 8) is concatenated, blocks row-major.

    Parameters
    ----------
    block_size : tuple of (int, int), default=(10, 10)
        Block height and width, at most the image size.
    radius : float or sequence of float, default=1
        Radius R of the sampling circle, in pixels. A sequence of distinct radii gives
        multi-scale LBP: each block's histogram at each radius, concatenated (radii in the
        given order, each radius's blocks row-major), e.g. ``(1, 2)``: LBP(8,1) and LBP(8,2)
        histograms of the same cells, 2 x 59 bins per cell (the two radii of OCLBP's first
        configurations, seed 002 appendix, on non-overlapping cells).
    n_points : int, default=8
        Number P of sampling points, 1..16.

    Attributes
    ----------
    image_shape_ : tuple of (int, int)
        (H, W) of the images seen in ``fit``; ``transform`` requires the same.
    n_features_out_ : int
        :math:`n(H, b_h, b_h)\, n(W, b_w, b_w)\, B` (module docstring) times the number of
        radii. For 62x47 images and 10x10 blocks: 6 x 5 x 59 = 1,770; 5x5 blocks: 12 x 9 x 59
        = 6,372; 5x5 blocks, radii (1, 2): 12,744.
    windows_ : list of tuple
        ``[(block_h, block_w, step_h, step_w, radius, n_points)]``, one per radius, steps =
        block sides; ``transform`` uses these (fixed at ``fit``).

    Notes
    -----
    Border blocks: a remainder of more than half a block is kept as a partial (smaller) block,
    a smaller one is dropped (62 rows of 10-row blocks: 6 blocks, the last 2 rows dropped; 47
    columns: 5 blocks, the last 7 columns wide). Every histogram sums to 1, partial ones too.
    Codes of the outer ``ceil(R)`` rows and columns use zeros outside the image.

    Examples
    --------
    20x16 images in 10x8 blocks: 2 x 2 histograms of 59 bins, each summing to 1; pairs of
    images give pairs of descriptors:

    >>> import numpy as np
    >>> from metricfit.features import LBP
    >>> images = np.random.default_rng(0).integers(0, 256, size=(3, 20, 16)).astype(float)
    >>> lbp = LBP(block_size=(10, 8)).fit(images)
    >>> Z = lbp.transform(images)
    >>> Z.shape, Z.reshape(3, 4, 59).sum(axis=2).round(12).tolist()
    ((3, 236), [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    >>> lbp.transform(images[None, :2]).shape  # one pair of images
    (1, 2, 236)
    >>> LBP(block_size=(5, 5), radius=(1, 2)).fit(images).n_features_out_  # 4 x 3 x 59 x 2
    1416

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """

    _parameter_constraints = {
        "block_size": ["array-like"],
        "radius": [Interval(Real, 0, None, closed="neither"), "array-like"],
        "n_points": [Interval(Integral, 1, 16)],
    }

    def __init__(self, block_size=(10, 10), radius=1, n_points=8):
        self.block_size = block_size
        self.radius = radius
        self.n_points = n_points

    def _windows(self):
        size = self.block_size
        if not (isinstance(size, (tuple, list, np.ndarray)) and np.ndim(size) == 1
                and len(size) == 2):
            raise ValueError(f"block_size must be (block_h, block_w), got {size!r}.")
        radii = self.radius
        several = isinstance(radii, (tuple, list, np.ndarray))
        message = (f"radius must be a positive number or a non-empty sequence of distinct "
                   f"positive numbers, got {self.radius!r}.")
        if several and (np.ndim(radii) != 1 or len(radii) == 0):
            raise ValueError(message)
        windows = []
        for radius in (list(radii) if several else [radii]):
            try:
                bh, bw, radius = _check_config((*size, radius), "block_size + (radius,)")
            except ValueError:
                if several:
                    raise ValueError(message) from None
                raise
            windows.append((bh, bw, bh, bw, radius, self.n_points))
        if len({w[4] for w in windows}) != len(windows):
            raise ValueError(message)
        return windows


class OCLBP(_BlockLBP):
    r"""Over-complete LBP: uniform LBP histograms on overlapping blocks (seed 002, appendix).

    For each configuration ``(block_h, block_w, radius)`` a block window is shifted by a step
    of :math:`\max(1, \lfloor b(1 - \text{overlap}) + 1/2 \rfloor)` pixels down and to the
    right ("we shift the block window to produce overlaps"); the L1-normalised nri_uniform
    code histograms of all windows of all configurations are concatenated (configurations in
    order, windows row-major). Seed notation S:(a, b, v, h, p, r) is the configuration
    (a, b, r) with ``overlap`` v = h and ``n_points`` p.

    Parameters
    ----------
    configs : sequence of (int, int, float), default=((10, 10, 1), (14, 14, 2), (18, 18, 3))
        (block_h, block_w, radius) of each configuration: the paper's three.
    overlap : float in [0, 1), default=0.5
        Share of a block that consecutive windows have in common; 0 gives :class:`LBP` blocks.
    n_points : int, default=8
        Number P of sampling points, 1..16, for every configuration.

    Attributes
    ----------
    image_shape_ : tuple of (int, int)
    n_features_out_ : int
        :math:`B \sum_c n(H, b_h, s_h)\, n(W, b_w, s_w)` (module docstring): 46,846 for
        150x80 images (the appendix), 10,974 for 62x47.
    windows_ : list of tuple
        ``(block_h, block_w, step_h, step_w, radius, n_points)`` of each configuration, as
        ``transform`` uses them (fixed at ``fit``).

    Examples
    --------
    Two configurations on 20x16 images: 10x8 windows moved by 5 and 4 pixels (3 x 3
    windows) and 12x12 windows moved by 6 (3 x 2), 59 bins each:

    >>> import numpy as np
    >>> from metricfit.features import LBP, OCLBP
    >>> images = np.random.default_rng(0).integers(0, 256, size=(3, 20, 16)).astype(float)
    >>> oclbp = OCLBP(configs=((10, 8, 1), (12, 12, 2))).fit(images)
    >>> oclbp.windows_
    [(10, 8, 5, 4, 1.0, 8), (12, 12, 6, 6, 2.0, 8)]
    >>> oclbp.transform(images).shape  # (3 x 3 + 3 x 2) x 59
    (3, 885)

    Without overlap, one configuration is :class:`LBP`:

    >>> flat = OCLBP(configs=((10, 8, 1),), overlap=0).fit_transform(images)
    >>> bool(np.allclose(flat, LBP(block_size=(10, 8)).fit_transform(images)))
    True

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """

    _parameter_constraints = {
        "configs": ["array-like"],
        "overlap": [Interval(Real, 0, 1, closed="left")],
        "n_points": [Interval(Integral, 1, 16)],
    }

    def __init__(self, configs=((10, 10, 1), (14, 14, 2), (18, 18, 3)), overlap=0.5,
                 n_points=8):
        self.configs = configs
        self.overlap = overlap
        self.n_points = n_points

    def _windows(self):
        configs = list(self.configs) if isinstance(self.configs, (tuple, list)) else None
        if not configs:
            raise ValueError(f"configs must be a non-empty sequence, got {self.configs!r}.")
        windows = []
        for i, config in enumerate(configs):
            bh, bw, radius = _check_config(config, f"configs[{i}]")
            sh, sw = (max(1, math.floor(b * (1 - self.overlap) + 0.5)) for b in (bh, bw))
            windows.append((bh, bw, sh, sw, radius, self.n_points))
        return windows
