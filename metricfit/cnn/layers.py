r"""The layers of the LeNet-style network: objects that hold sizes only and call pure functions.

Every layer maps a batch ``X`` to ``Y`` and back: ``forward(params, X) -> (Y, cache)`` and
``backward(params, cache, dY, input_grad) -> (dX, grads)``, with ``params`` and ``grads`` dicts
of arrays named as in ``shapes``. Both take an optional ``workspace``
(:class:`._workspace.Workspace`): the large arrays they make then come from it, reused from
the previous step. Convolution and subsampling run the numba kernels of
:mod:`._kernels`, with the tanh that follows them fused in (``squash=True``: the forward pass
writes tanh of its output, the backward pass folds ``1 - Y^2`` into its first loop); the fully
connected layer is two GEMMs and its tanh is NumPy's ``np.tanh`` (both stay in NumPy).

Back-propagation through each layer (LeCun et al. 1998, appendix; seed 000 section 3.2)::

    dense      Y = X W^T + b          dW = dY^T X,   db = 1^T dY,   dX = dY W
    tanh       Y = tanh(X)            dX = dY (1 - Y^2)
    conv       see _kernels.conv2d_backward
    subsample  see _kernels.subsample_backward
"""

import numpy as np

from . import _drivers, _kernels
from ._conv_units import conv2d_backward_images, conv2d_weight_units, weight_unit_costs
from ._dense_kernels import BLOCK_OUT, dense_forward_units, forward_unit_count
from ._workspace import empty, zeros
from .activations import tanh_backward, tanh_forward
from .threads import CHUNK, blas_single_threaded, get_num_threads, map_chunks, map_spans

__all__ = ["Conv2D", "Subsample", "Dense", "Tanh", "lenet_table", "dense_forward",
           "dense_backward", "tanh_backward"]


GEMM_SPLIT = 2 ** 22  # multiply-adds from which a dense layer's GEMMs run in fixed units
#: Multiply-adds of the backward products per pool thread: C5's (72 million on a batch of 128)
#: get 4 threads. On a 16-core Xeon its blocks on the pool took 1.02 ms a step on 4 threads
#: and 1.68 on 16, whose wake-ups and GIL turns cost more than their blocks (0.14 ms each on
#: one thread); docs/results/timing.md, the evening of 2026-11-27.
GEMM_PER_THREAD = 2 ** 24
BLOCK_IN = 144  # input features (columns) per unit of the input gradient


def _units(size, block):
    """The fixed blocks ``[slice, ...]`` of ``block`` items covering ``range(size)``."""
    return [slice(a, min(a + block, size)) for a in range(0, size, block)]


def dense_forward(X, W, b):
    """``Y = X W^T + b`` for X (n, d_in), W (d_out, d_in), b (d_out,).

    From ``GEMM_SPLIT`` multiply-adds (C5 on a batch) the product runs as the fixed units of
    :func:`._dense_kernels.dense_forward_units` (blocks of ``ROWS`` images by ``BLOCK_OUT``
    outputs, one BLAS product each on one thread) on the layer threads (numba's, through
    :func:`._drivers.dense_forward_spans`, from ``DRIVER_MIN_THREADS``): each entry is the dot
    product of one BLAS call whatever the thread count. (BLAS's own threads would do, but
    OpenBLAS rounds float32 GEMMs differently on 1 and 2 threads.)
    """
    n, d_in = X.shape
    d_out = W.shape[0]
    dtype = np.result_type(X, W, b)
    if n * d_in * d_out < GEMM_SPLIT or dtype not in (np.float32, np.float64):
        return X @ W.T + b  # (n, d_out)
    X, W, b = (np.ascontiguousarray(a, dtype=dtype) for a in (X, W, b))
    Y = np.empty((n, d_out), dtype)
    with blas_single_threaded():  # (a no-op inside ConvNetwork's passes, which hold it)
        map_spans(lambda u0, u1: dense_forward_units(X, W, b, Y, u0, u1),
                  np.ones(forward_unit_count(n, d_out)), _drivers.dense_forward_spans,
                  (X, W, b, Y))
    return Y


def dense_backward(X, W, dY, input_grad=True, dW=None):
    """``(dX, dW, db)`` of :func:`dense_forward`; dX is None unless ``input_grad``; dW written
    into the (d_out, d_in) array ``dW`` when given. Large products (as in
    :func:`dense_forward`) run as fixed units: rows ``J`` of ``dW = dY[:, J]^T X`` by
    ``BLOCK_OUT``, columns ``K`` of ``dX = dY W[:, K]`` by ``BLOCK_IN``, on at most one
    thread per ``GEMM_PER_THREAD`` multiply-adds."""
    n, d_in = X.shape
    d_out = W.shape[0]
    db = dY.sum(axis=0)  # (d_out,)
    if n * d_in * d_out < GEMM_SPLIT:
        dW = np.matmul(dY.T, X, out=dW)  # (d_out, d_in)
        return (dY @ W if input_grad else None), dW, db
    if dW is None:
        dW = np.empty((d_out, d_in), np.result_type(dY, X))
    dX = np.empty((n, d_in), np.result_type(dY, W)) if input_grad else None
    units = [("W", J) for J in _units(d_out, BLOCK_OUT)]
    if input_grad:
        units += [("X", cols) for cols in _units(d_in, BLOCK_IN)]

    def run(u0, u1):
        for kind, rows in units[u0:u1]:
            if kind == "W":
                np.matmul(dY[:, rows].T, X, out=dW[rows])
            else:
                dX[:, rows] = dY @ W[:, rows]

    costs = [(r.stop - r.start) * (d_in if k == "W" else d_out) for k, r in units]
    with blas_single_threaded():
        map_spans(run, costs, max_threads=n * sum(costs) // GEMM_PER_THREAD)
    return dX, dW, db


def lenet_table(n_in, n_out):
    """A partial connection table in the pattern of LeNet-5's C3 (LeCun et al. 1998, Table I).

    LeNet-5 links its 16 C3 maps to the 6 S2 maps as: 6 maps read 3 contiguous inputs, 6 read
    4 contiguous, 3 read 4 discontinuous ({i, i+1, i+3, i+4}), 1 reads all (indices cyclic).
    Here the same shares (6/16, 6/16, 3/16, 1/16) of ``n_out`` maps, starting at inputs spread
    evenly over ``n_in`` (for 6 -> 16 the shares and the contiguous rows are LeNet-5's; its
    3 discontinuous rows differ). For seed 000's C3 (15 -> 45) that is 17, 17, 8 and 3 maps: 196 of
    675 links, 196 * 36 + 45 = 7101 parameters (the paper prints 7128, not a whole number of
    6x6 kernels plus biases). With fewer than 5 inputs the table is full.

    Returns
    -------
    table : ndarray of shape (n_out, n_in), bool

    References
    ----------
    - Chopra, Hadsell and LeCun, "Learning a Similarity Metric Discriminatively, with Application to
      Face Verification", CVPR 2005 (seed 000).
    """
    table = np.zeros((n_out, n_in), dtype=bool)
    if n_in < 5:
        table[:] = True
        return table
    sizes = np.floor(np.array([6, 6, 3]) / 16 * n_out + 0.5).astype(int)
    sizes = np.minimum(sizes, n_out)
    offsets = ([0, 1, 2], [0, 1, 2, 3], [0, 1, 3, 4])
    o = 0
    for size, pattern in zip(sizes, offsets, strict=True):
        for k in range(min(size, n_out - o)):
            start = (k * n_in) // max(size, 1)
            table[o, [(start + d) % n_in for d in pattern]] = True
            o += 1
    table[o:] = True  # the rest read every input
    return table


def _sum_in_order(arrays):
    """``arrays[0] + arrays[1] + ...`` left to right (a fixed rounding for any thread count)."""
    total = arrays[0].copy()
    for a in arrays[1:]:
        total += a
    return total


_NONE = {np.dtype(t).char: np.empty((0, 0, 0, 0), t) for t in (np.float32, np.float64)}
"""Empty stand-ins for "no squashed output" (the kernels take an empty Y as no tanh)."""


def _as(param, X):
    """A parameter array C-contiguous in the dtype of the data (the kernels' types must
    agree)."""
    return np.ascontiguousarray(param, dtype=X.dtype)


def _uniform(rng, fan_in, shape):
    """Uniform weights of standard deviation ``1 / sqrt(fan_in)`` for tanh units (LeCun,
    Bottou, Orr, Mueller, *Efficient BackProp*, 1998, section 4.6): ``U[-a, a]``,
    ``a = sqrt(3 / fan_in)``. (LeNet-5's ``2.4 / fan_in`` gives the 1125-input C5 units
    pre-activations of std ~0.02 on tanh inputs: a near-linear, slow start.)"""
    bound = np.sqrt(3.0 / fan_in)
    return rng.uniform(-bound, bound, size=shape)


class Conv2D:
    """Valid stride-1 convolution layer with a connection table (seed 000 C1, C3), with the
    tanh that follows it fused in when ``squash`` (``Y = tanh(conv + b)``; the backward pass
    then takes dL/dY of the squashed output).

    Examples
    --------
    One 3x3 image, one 2x2 kernel: each output is the sum of the kernel times a window, plus
    the bias; the gradient of ``sum(Y)`` in W is the sum of the windows, in b the number of
    outputs.

    >>> import numpy as np
    >>> from metricfit.cnn.layers import Conv2D, lenet_table
    >>> layer = Conv2D(n_in=1, n_out=1, kernel=(2, 2))
    >>> params = {"W": np.array([[[[1.0, 2.0], [3.0, 4.0]]]]), "b": np.array([0.5])}
    >>> X = np.arange(9.0).reshape(1, 1, 3, 3)  # (n_images, n_maps, H, W)
    >>> Y, cache = layer.forward(params, X)
    >>> Y
    array([[[[27.5, 37.5],
             [57.5, 67.5]]]])
    >>> dX, grads = layer.backward(params, cache, np.ones_like(Y))
    >>> grads["W"][0, 0], grads["b"]
    (array([[ 8., 12.],
           [20., 24.]]), array([4.]))

    LeNet-5's C3 (6 -> 16 maps, 5x5 kernels, its connection table) has 1,516 parameters:

    >>> Conv2D(6, 16, (5, 5), table=lenet_table(6, 16)).n_trainable
    1516
    """

    def __init__(self, n_in, n_out, kernel, table=None, squash=False):
        self.n_in, self.n_out, self.kernel = int(n_in), int(n_out), tuple(kernel)
        self.table = np.ones((n_out, n_in), bool) if table is None else np.asarray(table, bool)
        self._table_u8 = self.table.astype(np.uint8)
        self.squash = bool(squash)

    @property
    def shapes(self):
        return {"W": (self.n_out, self.n_in) + self.kernel, "b": (self.n_out,)}

    @property
    def n_trainable(self):
        """Free parameters: connected kernels and biases (unconnected entries stay 0)."""
        return int(self.table.sum()) * int(np.prod(self.kernel)) + self.n_out

    def output_shape(self, shape):
        return (self.n_out, shape[1] - self.kernel[0] + 1, shape[2] - self.kernel[1] + 1)

    def init(self, rng):
        fan_in = self.table.sum(axis=1) * np.prod(self.kernel)  # (n_out,): connected inputs
        W = _uniform(rng, fan_in[:, None, None, None], self.shapes["W"])  # (out, in, kh, kw)
        return {"W": W * self.table[:, :, None, None], "b": np.zeros(self.n_out)}

    def forward(self, params, X, workspace=None):
        Y, cache, run = self.forward_units(params, X, workspace)
        map_spans(run, np.ones(X.shape[0]), _drivers.FORWARD[type(run)], tuple(run))
        return Y, cache  # (one unit per image)

    def forward_units(self, params, X, workspace=None):
        """``(Y, cache, run)``: the output array (not yet written), the cache for
        :meth:`backward` and ``run(i0, i1)``, which writes ``Y[i0:i1]`` from ``X[i0:i1]`` alone
        (one unit per image; a caller may chain the next per-image layer on the same span),
        a :class:`._drivers.ConvUnits`."""
        W, b, table = _as(params["W"], X), _as(params["b"], X), self._table_u8
        Y = empty(workspace, id(self), "Y",
                  (X.shape[0],) + self.output_shape(X.shape[1:]), X.dtype)

        run = _drivers.ConvUnits(X, W, b, table, Y, self.squash)
        return Y, (X, Y if self.squash else _NONE[X.dtype.char]), run

    def backward(self, params, cache, dY, input_grad=True, workspace=None):
        """Two passes of fixed units (:mod:`._conv_units`): per image, the spread of dY into
        the padded grid and the input gradient; then per (block of ``CHUNK`` images, output
        map), the partial weight and bias gradients, added over the blocks in block order."""
        X, Y = cache
        W, table = _as(params["W"], X), self._table_u8
        n, _, _, w = X.shape
        kh, kw = self.kernel
        dX = empty(workspace, id(self), "dX", X.shape if input_grad else (0, 0, 0, 0), X.dtype)
        Gp = zeros(workspace, id(self), "Gp", _kernels.grid_shape(X.shape, W.shape, input_grad),
                   X.dtype)  # zeros outside the positions the kernel writes
        pad = (kh - 1) * w + kw - 1 if input_grad else 0
        n_blocks, c_out = -(-n // CHUNK), self.n_out
        # partial sums per block: every connected entry is stored by its unit, the others stay
        # the zeros they were made with (so a workspace's arrays need no zero fill)
        dW = zeros(workspace, id(self), "dW", (n_blocks, c_out, self.n_in, kh * kw), X.dtype)
        db = empty(workspace, id(self), "db", (n_blocks, c_out), X.dtype)

        image_args = (dY, Y, W, table, w, pad, Gp, dX)
        weight_args = (X, Gp, pad, table, kh, kw, CHUNK)
        driver_args = (*image_args, X, kh, kw, CHUNK, dW, db)  # after the driver's stage

        def images(i0, i1):  # (the driver of ._drivers: a stage, driver_args, then spans)
            conv2d_backward_images(*image_args, i0, i1)

        def weights(u0, u1):
            conv2d_weight_units(*weight_args, u0, u1, dW, db)

        threads = get_num_threads()
        if threads == 1 or n_blocks % threads == 0 or n_blocks >= 4 * threads:
            # few threads: whole blocks per thread, each block's two passes back to back
            # (its grid still in cache); the same units, so the same numbers
            def blocks(b0, b1):
                for b in range(b0, b1):
                    images(b * CHUNK, min(n, (b + 1) * CHUNK))
                    weights(b * c_out, (b + 1) * c_out)

            map_spans(blocks, np.ones(n_blocks), _drivers.conv_backward_spans,
                      (_drivers.BLOCKS, *driver_args))
        else:
            map_spans(images, np.ones(n), _drivers.conv_backward_spans,
                      (_drivers.IMAGES, *driver_args))
            map_spans(weights, weight_unit_costs(n, self.table, CHUNK),
                      _drivers.conv_backward_spans, (_drivers.WEIGHTS, *driver_args))
        dW = _sum_in_order(list(dW)).reshape(W.shape)
        return (dX if input_grad else None), {"W": dW, "b": _sum_in_order(list(db))}


class Subsample:
    """LeNet trainable subsampling: per map, ``coef * window mean + bias`` (seed 000 S2, S4),
    with the tanh that follows it fused in when ``squash`` (as :class:`Conv2D`).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.cnn.layers import Subsample
    >>> layer = Subsample(n_maps=1, window=(2, 2))
    >>> params = {"coef": np.array([2.0]), "bias": np.array([1.0])}
    >>> Y, cache = layer.forward(params, np.arange(16.0).reshape(1, 1, 4, 4))
    >>> Y  # 2 * (mean of each 2x2 window) + 1
    array([[[[ 6., 10.],
             [22., 26.]]]])
    >>> layer.n_trainable, layer.output_shape((1, 5, 5))  # odd remainders are dropped
    (2, (1, 2, 2))
    """

    def __init__(self, n_maps, window, squash=False):
        self.n_maps, self.window = int(n_maps), tuple(window)
        self.squash = bool(squash)

    @property
    def shapes(self):
        return {"coef": (self.n_maps,), "bias": (self.n_maps,)}

    n_trainable = property(lambda self: 2 * self.n_maps)

    def output_shape(self, shape):
        return (shape[0], shape[1] // self.window[0], shape[2] // self.window[1])

    def init(self, rng):
        return {"coef": np.ones(self.n_maps), "bias": np.zeros(self.n_maps)}

    def forward(self, params, X, workspace=None):
        Y, cache, run = self.forward_units(params, X, workspace)
        map_spans(run, np.ones(X.shape[0]), _drivers.FORWARD[type(run)], tuple(run))
        return Y, cache  # (one unit per image)

    def forward_units(self, params, X, workspace=None):
        """``(Y, cache, run)`` as :meth:`Conv2D.forward_units` (``run``: a
        :class:`._drivers.SubsampleUnits`)."""
        coef, bias = _as(params["coef"], X), _as(params["bias"], X)
        shape = (X.shape[0],) + self.output_shape(X.shape[1:])
        Y = empty(workspace, id(self), "Y", shape, X.dtype)
        means = empty(workspace, id(self), "means", shape, X.dtype)

        run = _drivers.SubsampleUnits(X, coef, bias, *self.window, Y, means, self.squash)
        return Y, (X.shape[2:], means, Y if self.squash else _NONE[X.dtype.char]), run

    def backward(self, params, cache, dY, input_grad=True, workspace=None):
        """Units of (block of ``CHUNK`` images, map): dX and the block's partial gradients,
        added over the blocks in block order."""
        (h, w), means, Y = cache
        coef = _as(params["coef"], dY)
        n, m = dY.shape[:2]
        dX = empty(workspace, id(self), "dX", dY.shape[:2] + (h, w), dY.dtype)
        n_blocks = -(-n // CHUNK)
        dcoef, dbias = (empty(workspace, id(self), role, (n_blocks, m), dY.dtype)
                        for role in ("dcoef", "dbias"))  # every entry stored by its unit
        args, parts = (means, coef, dY, Y, *self.window, dX, CHUNK), (dcoef, dbias)
        map_spans(lambda u0, u1: _kernels.subsample_backward_units(*args, u0, u1, *parts),
                  np.ones(n_blocks * m), _drivers.subsample_backward_spans, args + parts)
        return dX, {"coef": _sum_in_order(list(dcoef)), "bias": _sum_in_order(list(dbias))}


class Dense:
    """Fully connected layer ``Y = X W^T + b`` on flattened inputs (seed 000 C5 on 1x1, F6).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.cnn.layers import Dense
    >>> layer = Dense(n_in=4, n_out=2)
    >>> params = {"W": np.array([[1.0, 0, 0, 0], [0.5, 0.5, 0.5, 0.5]]), "b": np.array([0.0, 1.0])}
    >>> X = np.array([[[[0.0, 1.0], [3.0, 4.0]]]])  # one 1x2x2 input, flattened to 4
    >>> Y, cache = layer.forward(params, X)
    >>> Y, layer.n_trainable
    (array([[0., 5.]]), 10)
    >>> dX, grads = layer.backward(params, cache, np.ones_like(Y))
    >>> dX.shape, grads["W"].tolist()
    ((1, 1, 2, 2), [[0.0, 1.0, 3.0, 4.0], [0.0, 1.0, 3.0, 4.0]])
    """

    def __init__(self, n_in, n_out):
        self.n_in, self.n_out = int(n_in), int(n_out)

    @property
    def shapes(self):
        return {"W": (self.n_out, self.n_in), "b": (self.n_out,)}

    n_trainable = property(lambda self: self.n_out * (self.n_in + 1))

    def output_shape(self, shape):
        return (self.n_out,)

    def init(self, rng):
        return {"W": _uniform(rng, self.n_in, self.shapes["W"]), "b": np.zeros(self.n_out)}

    def forward(self, params, X, workspace=None):
        X2 = X.reshape(X.shape[0], -1)  # (n, d_in)
        return dense_forward(X2, params["W"], params["b"]), (X.shape, X2)

    def backward(self, params, cache, dY, input_grad=True, workspace=None):
        shape, X2 = cache
        dW = empty(workspace, id(self), "dW", (self.n_out, self.n_in), dY.dtype)
        dX, dW, db = dense_backward(X2, params["W"], dY, input_grad, dW)
        return (dX.reshape(shape) if input_grad else None), {"W": dW, "b": db}


TANH_SPLIT = 2 ** 18  # values from which the Tanh layer runs in blocks of images


def _elementwise(fn, X):
    """``fn(rows)`` over all of X's images: in one call under ``TANH_SPLIT`` values (the
    layers after C5 and F6: 32,000 and 6,400 values a batch, less than a thread's start-up),
    else in fixed chunks of ``CHUNK`` images on the layer threads (element-wise: the same
    values either way)."""
    if X.size < TANH_SPLIT:
        fn(slice(0, X.shape[0]))
    else:
        map_chunks(fn, X.shape[0])


class Tanh:
    """Squashing ``Y = tanh(X)``, element-wise; no parameters. The passes are those of the
    ``Tanh`` and ``MLP`` mappings (:func:`.activations.tanh_forward` / ``tanh_backward``: one
    implementation of the dense layers' tanh).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.cnn.layers import Tanh
    >>> X = np.array([[-1.0, 0.0, 2.0]])
    >>> Y, cache = Tanh().forward({}, X)
    >>> np.round(Y, 4), bool(np.allclose(Y, np.tanh(X)))
    (array([[-0.7616,  0.    ,  0.964 ]]), True)
    >>> dX, grads = Tanh().backward({}, cache, np.ones_like(Y))
    >>> bool(np.allclose(dX, 1 - np.tanh(X) ** 2)), grads
    (True, {})
    """

    shapes = {}
    n_trainable = 0

    def output_shape(self, shape):
        return shape

    def init(self, rng):
        return {}

    def forward(self, params, X, workspace=None):
        Y = np.array(X, order="C")  # (n, ...), overwritten with tanh(X)

        def chunk(rows):
            block = Y[rows]
            Y[rows] = tanh_forward(block.reshape(block.shape[0], -1)).reshape(block.shape)

        _elementwise(chunk, X)
        return Y, Y

    def backward(self, params, Y, dY, input_grad=True, workspace=None):
        dX = np.empty_like(dY)

        def chunk(rows):
            m = Y[rows].shape[0]
            dX[rows] = tanh_backward(Y[rows].reshape(m, -1),
                                     dY[rows].reshape(m, -1)).reshape(dX[rows].shape)

        _elementwise(chunk, dY)
        return dX, {}
