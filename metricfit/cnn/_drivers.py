r"""numba ``parallel=True`` drivers of the convnet's fixed work units: the spans of
:func:`.threads.map_spans` handed to numba's threads from compiled code.

Each driver is a ``prange`` over the spans ``starts[k] .. stops[k] - 1`` of one pass, calling on
each span the same serial kernel that the package's pool of Python threads calls (one unit per
image; one per (image block, output map); one per image block; a block of C5's forward
product, :mod:`._dense_kernels`). The units, the spans and each
kernel's arithmetic are those of the pool, so a driver's result is the pool's, bit for bit, on
any number of threads (``tests/test_cnn_threads.py``). Why: on the pool every span is a turn at
the GIL and every pass a wake-up of each thread (358 microseconds for 16 threads on a 16-core
Xeon, ``benchmarks/handoff.py``), about seven passes a training step; a driver's launch costs
47 there (:mod:`metricfit.parallel`). That pays at 16 threads (a training step 1.25x faster on
the Xeon), not at 1, 4 or 8 there nor at 2 on the 2-core machine (level), while compiling the
drivers is most of a cold first training step; so :func:`.threads.map_spans` hands its spans
to them from :data:`.threads.DRIVER_MIN_THREADS` threads only (or with
``METRICFIT_KERNEL_THREADS=numba``).

:data:`FORWARD` names the drivers by the kind of per-image forward unit (:class:`ConvUnits`,
:class:`SubsampleUnits`); :func:`lenet_forward_spans` chains the four per-image layers of the
paper's network (C1, S2, C3, S4) on each span, as the pool's chained run does (each image's
maps still in cache for the next layer). Drivers are top-level functions so that numba caches
them (``cache=True``; see :mod:`metricfit.losses._rows`). The convolution's three backward passes
share one driver, :func:`conv_backward_spans`, which takes the pass as its first argument: a
driver's compilation compiles again the code it calls, so one driver per pass compiled the same
units three times.
"""

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ._conv_kernels import conv2d_forward_into
from ._conv_units import conv2d_backward_images, conv2d_weight_units
from ._dense_kernels import dense_forward_units
from ._subsample_kernels import subsample_backward_units, subsample_forward_into

__all__ = ["ConvUnits", "SubsampleUnits", "conv_forward_spans", "subsample_forward_spans",
           "lenet_forward_spans", "conv_backward_spans", "subsample_backward_spans", "BLOCKS",
           "IMAGES", "WEIGHTS", "dense_forward_spans"]


class ConvUnits(NamedTuple):
    """A convolution's forward units: ``Y[i0:i1]`` from ``X[i0:i1]`` (a callable, as the pool
    runs it; its fields are the driver's arguments).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.cnn._drivers import ConvUnits
    >>> X, Y = np.ones((2, 1, 3, 3)), np.empty((2, 1, 2, 2))
    >>> units = ConvUnits(X, np.ones((1, 1, 2, 2)), np.zeros(1), np.ones((1, 1), np.uint8), Y,
    ...                   False)
    >>> units(0, 2)  # both images: every output is the sum of four ones
    >>> Y[:, 0, 0]
    array([[4., 4.],
           [4., 4.]])
    """

    X: np.ndarray
    W: np.ndarray
    b: np.ndarray
    table: np.ndarray
    Y: np.ndarray
    squash: bool

    def __call__(self, i0, i1):
        conv2d_forward_into(self.X[i0:i1], self.W, self.b, self.table, self.Y[i0:i1],
                            self.squash)


class SubsampleUnits(NamedTuple):
    """A subsampling's forward units (as :class:`ConvUnits`).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.cnn._drivers import SubsampleUnits
    >>> X = np.arange(16.0).reshape(1, 1, 4, 4)
    >>> Y, means = np.empty((1, 1, 2, 2)), np.empty((1, 1, 2, 2))
    >>> SubsampleUnits(X, np.array([2.0]), np.array([1.0]), 2, 2, Y, means, False)(0, 1)
    >>> Y[0, 0]  # 2 * (mean of each 2x2 window) + 1
    array([[ 6., 10.],
           [22., 26.]])
    """

    X: np.ndarray
    coef: np.ndarray
    bias: np.ndarray
    sh: int
    sw: int
    Y: np.ndarray
    means: np.ndarray
    squash: bool

    def __call__(self, i0, i1):
        subsample_forward_into(self.X[i0:i1], self.coef, self.bias, self.sh, self.sw,
                               self.Y[i0:i1], self.means[i0:i1], self.squash)


@njit(cache=True, nogil=True, parallel=True)
def conv_forward_spans(X, W, b, table, Y, squash, starts, stops):  # pragma: no cover
    """:class:`ConvUnits` on each span."""
    for k in prange(starts.shape[0]):
        i0, i1 = starts[k], stops[k]
        conv2d_forward_into(X[i0:i1], W, b, table, Y[i0:i1], squash)


@njit(cache=True, nogil=True, parallel=True)
def subsample_forward_spans(X, coef, bias, sh, sw, Y, means, squash, starts,
                            stops):  # pragma: no cover
    """:class:`SubsampleUnits` on each span."""
    for k in prange(starts.shape[0]):
        i0, i1 = starts[k], stops[k]
        subsample_forward_into(X[i0:i1], coef, bias, sh, sw, Y[i0:i1], means[i0:i1], squash)


@njit(cache=True, nogil=True, parallel=True)
def lenet_forward_spans(c1, s2, c3, s4, starts, stops):  # pragma: no cover (compiled)
    """C1, S2, C3 and S4 (each a tuple of its :class:`ConvUnits` / :class:`SubsampleUnits`
    fields) one after the other on each span."""
    for k in prange(starts.shape[0]):
        i0, i1 = starts[k], stops[k]
        conv2d_forward_into(c1[0][i0:i1], c1[1], c1[2], c1[3], c1[4][i0:i1], c1[5])
        subsample_forward_into(s2[0][i0:i1], s2[1], s2[2], s2[3], s2[4], s2[5][i0:i1],
                               s2[6][i0:i1], s2[7])
        conv2d_forward_into(c3[0][i0:i1], c3[1], c3[2], c3[3], c3[4][i0:i1], c3[5])
        subsample_forward_into(s4[0][i0:i1], s4[1], s4[2], s4[3], s4[4], s4[5][i0:i1],
                               s4[6][i0:i1], s4[7])


FORWARD = {ConvUnits: conv_forward_spans, SubsampleUnits: subsample_forward_spans}
LENET = (ConvUnits, SubsampleUnits, ConvUnits, SubsampleUnits)


BLOCKS, IMAGES, WEIGHTS = 0, 1, 2  # the stages of conv_backward_spans


@njit(cache=True, nogil=True, parallel=True)
def conv_backward_spans(stage, dY, Y, W, table, w, pad, Gp, dX, X, kh, kw, block, dW, db,
                        starts, stops):  # pragma: no cover (compiled)
    """One of the convolution's backward passes on each span, by ``stage``:

    - :data:`BLOCKS`: spans of image blocks; each block's images
      (:func:`._conv_units.conv2d_backward_images`), then its weight units
      (:func:`._conv_units.conv2d_weight_units`), back to back;
    - :data:`IMAGES`: spans of images, their images' pass only;
    - :data:`WEIGHTS`: spans of (block, map) weight units, once every image's pass is done.

    One driver for the three, not one each: every driver's compilation optimises and emits
    again all the code it calls (numba links the callees' code into each caller's module), so
    three drivers over the same two units compiled them three times (float32 under numba 0.59:
    82.7 s for the three, 39.7 s for this one; numba 0.68: 14.9 and 7.3 s)."""
    n, c_out = X.shape[0], Gp.shape[1]
    for k in prange(starts.shape[0]):
        if stage == BLOCKS:
            for b in range(starts[k], stops[k]):
                conv2d_backward_images(dY, Y, W, table, w, pad, Gp, dX, b * block,
                                       min(n, (b + 1) * block))
                conv2d_weight_units(X, Gp, pad, table, kh, kw, block, b * c_out,
                                    (b + 1) * c_out, dW, db)
        elif stage == IMAGES:
            conv2d_backward_images(dY, Y, W, table, w, pad, Gp, dX, starts[k], stops[k])
        else:
            conv2d_weight_units(X, Gp, pad, table, kh, kw, block, starts[k], stops[k], dW, db)


@njit(cache=True, nogil=True, parallel=True)
def subsample_backward_spans(means, coef, dY, Y, sh, sw, dX, block, dcoef, dbias, starts,
                             stops):  # pragma: no cover
    """:func:`._subsample_kernels.subsample_backward_units` on each span of (block, map)
    units."""
    for k in prange(starts.shape[0]):
        subsample_backward_units(means, coef, dY, Y, sh, sw, dX, block, starts[k], stops[k],
                                 dcoef, dbias)


@njit(cache=True, nogil=True, parallel=True)
def dense_forward_spans(X, W, b, Y, starts, stops):  # pragma: no cover (compiled)
    """:func:`._dense_kernels.dense_forward_units` on each span."""
    for k in prange(starts.shape[0]):
        dense_forward_units(X, W, b, Y, starts[k], stops[k])
