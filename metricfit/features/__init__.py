"""Face descriptors on image arrays: uniform LBP, over-complete LBP (OCLBP), dense SIFT, Gabor
magnitudes, HOG, square root.

Seed 002's descriptors (appendix): ``LBP^{u2}_{8,1}`` histograms (59 bins) on non-overlapping
10x10 blocks, OCLBP on half-overlapping 10x10 / 14x14 / 18x18 windows with radii 1 / 2 / 3,
and their square roots (the Hellinger map, seed 001 section 4). The transformers take images
(n_images, H, W) or pairs of images (n_pairs, 2, H, W), so a full verification system is one
pipeline::

    make_pipeline(LBP(), SquareRoot(), WPCA(n_components=300), TSML())

Codes equal scikit-image's ``local_binary_pattern(image, P, R, "nri_uniform")`` (not a
dependency). :class:`DenseSIFT`, :class:`Gabor` and :class:`HOG` (issue 15) follow Lowe 2004,
Liu & Wechsler 2002 (kernels equal to scikit-image's ``gabor_kernel``) and scikit-image's
``hog``; see :mod:`metricfit.features.descriptors`. Kernels are serial numba functions,
compiled on first use and cached on disk (Gabor's convolutions are FFTs in scipy.fft).

:class:`DlibFaceEmbedding` (issue 28) is the pretrained alternative: dlib's 128-d ResNet face
descriptor behind its detector, landmarks and face chip, with the ``faces`` extra (dlib is
imported on first use, never at import).
"""

from ._blocks import block_histograms, lbp_histograms, n_windows  # noqa: F401
from ._gabor import gabor_kernel
from ._lbp import lbp_codes
from .descriptors import HOG, DenseSIFT, Gabor
from .dlib_faces import DlibFaceEmbedding
from .lbp import LBP, OCLBP
from .sqrt import SquareRoot

__all__ = [
    "LBP", "OCLBP", "DenseSIFT", "Gabor", "HOG", "SquareRoot", "DlibFaceEmbedding",
    "gabor_kernel", "lbp_codes",
    "block_histograms", "lbp_histograms",
]
