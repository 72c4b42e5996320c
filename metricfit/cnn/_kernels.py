r"""numba kernels of the LeNet-style layers: valid 2-D convolution with a connection table and
trainable subsampling, each optionally followed by tanh, forward and hand-written backward
(seed 000, section 3.2; LeCun et al. 1998, section II.B). Pure: arrays and scalars in, new
arrays out (the ``*_into`` cores write into an output array the caller owns, so that
:mod:`._threads` can run them on slices of one batch). Serial, ``cache=True``, ``nogil=True``
(threads run them side by side), compiled on first use, no ``fastmath``.

Layout: a batch of feature maps is ``(n, channels, height, width)``, C-contiguous, float32 or
float64 (the output has the input's dtype).

The kernels live by layer kind: :mod:`._conv_kernels` (the convolution, with the
flat-row trick and the backward pass written out), :mod:`._subsample_kernels` (the
trainable subsampling) and :mod:`._squash` (the tanh fused into both). Every name stays
importable from here.
"""

from ._conv_kernels import (  # noqa: F401
                            TILE,
                            conv2d_backward,
                            conv2d_backward_into,
                            conv2d_forward,
                            conv2d_forward_into,
                            grid_shape,
)
from ._squash import TANH32_CLAMP, squash_into, tanh32
from ._subsample_kernels import (  # noqa: F401
                            LANES,
                            subsample_backward,
                            subsample_backward_into,
                            subsample_backward_units,
                            subsample_forward,
                            subsample_forward_into,
)

__all__ = [
    "conv2d_forward", "conv2d_forward_into", "conv2d_backward", "conv2d_backward_into",
    "grid_shape", "subsample_forward", "subsample_forward_into", "subsample_backward",
    "subsample_backward_into", "subsample_backward_units",
    "tanh32", "squash_into", "TANH32_CLAMP",
]
