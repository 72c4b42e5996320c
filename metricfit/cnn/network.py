r"""The convolutional network ``G_W`` of seed 000 (section 3.2): C1-S2-C3-S4-C5-F6, sized to
its input.

For a 56x46 input (AT&T at half resolution) the layers are those of the paper::

    C1  conv 7x7, 1 -> 15 maps          50x40    750 parameters
    S2  subsample 2x2                   25x20     30
    C3  conv 6x6, 15 -> 45, partial     20x15   7101  (LeNet-5 table; paper: 7128)
    S4  subsample 4x3                    5x5      90  (paper: 100)
    C5  conv 5x5, 45 -> 250              1x1  281500  (paper: 312750 = 250 x (50 x 25 + 1))
    F6  full 250 -> 50                          12550

each followed by tanh (fused into the C1, S2, C3 and S4 kernels: ``ConvNetwork.layers`` holds
tanh layers only after C5 and F6), so ``G_W(X)`` lies in (-1, 1)^50 and the L1 energy is
bounded by ``Q = 2 * 50`` (seed 000 eq. 8 needs that bound). C5's kernel covers all of S4's
output, so C5 is a fully connected layer on the flattened S4 maps and runs as one GEMM.

Other inputs (:func:`network_spec`): the S4 window is chosen so that S4 gives a grid of at
most 5x5 (``window = max(1, size // 5)`` per axis, remainders dropped) and C5 covers that grid;
inputs under 28 pixels on a side get 3x3 (C1) and 2x2 (C3) kernels. 62x47 LFW crops:
C1 56x41, S2 28x20, C3 23x15, S4 window 4x3 -> 5x5. 8x8 digits: C1 6x6, S2 3x3, C3 2x2,
S4 1x1 -> 2x2, C5 2x2 -> 1x1.

All parameters live in one flat vector ``theta`` (what the optimizer moves), laid out layer by
layer in the order of ``ConvNetwork.shapes``; the network object holds only sizes.
"""

import threading
from dataclasses import asdict, dataclass

import numpy as np
from sklearn.utils import check_random_state

from .._deprecation import deprecated_aliases
from . import _drivers
from ._workspace import Workspace, empty
from .layers import Conv2D, Dense, Subsample, Tanh, lenet_table
from .threads import CHUNK, blas_single_threaded, drivers_run, map_spans

__all__ = ["NetworkSpec", "network_spec", "ConvNetwork"]

SMALL_INPUT = 28  # inputs smaller than this on a side get the small kernels
S4_GRID = 5
#: Images a thread carries through the per-image layers (C1-S4) at a time in
#: :meth:`ConvNetwork.transform`: their maps in arrays of that many images, reused.
INFER_IMAGES = CHUNK


@dataclass(frozen=True)
class NetworkSpec:
    """Sizes of C1-S2-C3-S4-C5-F6 (all tuples are (height, width)).

    Examples
    --------
    :func:`network_spec` sizes the layers for an input; 8x8 digits get the small kernels:

    >>> from metricfit.cnn import NetworkSpec, network_spec
    >>> spec = network_spec((8, 8), n_maps=(2, 3, 4), n_outputs=2)
    >>> spec.c1_kernel, spec.c3_kernel, spec.s4_window
    ((3, 3), (2, 2), (1, 1))
    >>> spec.to_dict()["n_maps"], NetworkSpec.from_dict(spec.to_dict()) == spec
    ([2, 3, 4], True)
    """

    input_shape: tuple
    n_maps: tuple  # (C1, C3, C5)
    n_outputs: int
    c1_kernel: tuple
    s2_window: tuple
    c3_kernel: tuple
    s4_window: tuple

    def to_dict(self):
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d):
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


def _pair(value, name):
    value = (value, value) if np.isscalar(value) else tuple(value)
    if len(value) != 2 or not all(int(v) == v and v >= 1 for v in value):
        raise ValueError(f"{name} must be an int >= 1 or a pair of them, got {value!r}.")
    return tuple(int(v) for v in value)


def network_spec(input_shape, n_maps=(15, 45, 250), n_outputs=50, kernel_sizes=None):
    """Size C1-S2-C3-S4-C5-F6 for images of ``input_shape`` (see the module docstring).

    Parameters
    ----------
    input_shape : (int, int)
        Image height and width.
    n_maps : (int, int, int), default=(15, 45, 250)
        Feature maps of C1, C3 and C5 (seed 000).
    n_outputs : int, default=50
        Units of F6, the embedding dimension.
    kernel_sizes : (int or pair, int or pair), default=None
        C1 and C3 kernels; None means (7, 6) (seed 000), or (3, 2) for inputs under 28 pixels.

    Returns
    -------
    spec : NetworkSpec

    Raises
    ------
    ValueError
        When a layer would have no output (the input is too small for the kernels).

    References
    ----------
    - Chopra, Hadsell and LeCun, "Learning a Similarity Metric Discriminatively, with Application to
      Face Verification", CVPR 2005 (seed 000).
    """
    h, w = _pair(input_shape, "input_shape")
    if kernel_sizes is None:
        kernel_sizes = (7, 6) if min(h, w) >= SMALL_INPUT else (3, 2)
    k1, k3 = (_pair(k, "kernel_sizes") for k in kernel_sizes)
    s2 = (2, 2)
    h3 = (h - k1[0] + 1) // s2[0] - k3[0] + 1
    w3 = (w - k1[1] + 1) // s2[1] - k3[1] + 1
    if min(h - k1[0] + 1, w - k1[1] + 1) < s2[0] or min(h3, w3) < 1:
        raise ValueError(f"input of {h}x{w} pixels is too small for C1 {k1}, S2 {s2} and C3 "
                         f"{k3} kernels; pass smaller kernel_sizes.")
    s4 = (max(1, h3 // S4_GRID), max(1, w3 // S4_GRID))
    n_maps = tuple(int(m) for m in n_maps)
    if len(n_maps) != 3 or min(n_maps) < 1 or int(n_outputs) < 1:
        raise ValueError(f"n_maps must be 3 ints >= 1 and n_outputs >= 1, got {n_maps}, "
                         f"{n_outputs}.")
    return NetworkSpec((h, w), n_maps, int(n_outputs), k1, s2, k3, s4)


class ConvNetwork:
    """``G_W``: images (n, H, W) -> embeddings (n, n_outputs) in (-1, 1), flat parameters.

    Parameters
    ----------
    spec : NetworkSpec

    Examples
    --------
    >>> net = ConvNetwork(network_spec((56, 46)))
    >>> net.n_trainable, net.output_shapes["S4"]
    (302021, (45, 5, 5))
    """

    def __init__(self, spec):
        self.spec = spec
        m1, m3, m5 = spec.n_maps
        self.layers = {}
        self.output_shapes = {}
        shape = (1,) + spec.input_shape
        plan = [("C1", Conv2D(1, m1, spec.c1_kernel, squash=True)),
                ("S2", Subsample(m1, spec.s2_window, squash=True)),
                ("C3", Conv2D(m1, m3, spec.c3_kernel, lenet_table(m1, m3), squash=True)),
                ("S4", Subsample(m3, spec.s4_window, squash=True))]
        for name, layer in plan:  # tanh fused into the layer
            shape = self._add(name, layer, shape, tanh=False)
        shape = self._add("C5", Dense(int(np.prod(shape)), m5), shape)
        self._add("F6", Dense(m5, spec.n_outputs), shape)

    def _add(self, name, layer, shape, tanh=True):
        self.layers[name] = layer
        if tanh:
            self.layers["tanh" + name] = Tanh()
        self.output_shapes[name] = layer.output_shape(shape)
        return self.output_shapes[name]

    def __repr__(self):
        return f"ConvNetwork({self.spec!r})"

    @property
    def shapes(self):
        """Ordered ``{'C1.W': shape, 'C1.b': shape, ...}``: the layout of theta."""
        return {f"{name}.{key}": shape for name, layer in self.layers.items()
                for key, shape in layer.shapes.items()}

    @property
    def n_params(self):
        return sum(int(np.prod(s)) for s in self.shapes.values())

    @property
    def n_trainable(self):
        """Free parameters (the kernels C3's connection table leaves out are not counted)."""
        return sum(layer.n_trainable for layer in self.layers.values())

    @property
    def n_outputs(self):
        return self.spec.n_outputs

    def decay_mask(self):
        """Boolean mask over theta: True on the weights ``W`` of the convolution and full
        layers (what weight decay shrinks), False on biases and subsampling coefficients."""
        return np.concatenate([np.full(int(np.prod(shape)), key.endswith(".W"))
                               for key, shape in self.shapes.items()])

    def unpack(self, theta, dtype=None, workspace=None):
        """``{layer: {name: array}}`` from the flat theta (views, or copies in ``dtype``: into
        an array of ``workspace`` when one is given)."""
        theta = np.asarray(theta).ravel()
        if theta.size != self.n_params:
            raise ValueError(f"theta has {theta.size} entries; {self!r} has {self.n_params}.")
        if dtype is not None and workspace is not None and theta.dtype != dtype:
            cast = empty(workspace, id(self), "theta", theta.shape, dtype)
            np.copyto(cast, theta, casting="unsafe")
            theta = cast
        elif dtype is not None:
            theta = theta.astype(dtype, copy=False)
        params, start = {}, 0
        for name, layer in self.layers.items():
            params[name] = {}
            for key, shape in layer.shapes.items():
                stop = start + int(np.prod(shape))
                params[name][key] = theta[start:stop].reshape(shape)
                start = stop
        return params

    def pack(self, grads):
        """Flat vector from ``{layer: {name: array}}`` (the inverse of :meth:`unpack`)."""
        parts = [grads[name][key].ravel() for name, layer in self.layers.items()
                 for key in layer.shapes]
        return np.concatenate(parts)

    def init(self, random_state=None):
        """Random weights (std ``1/sqrt(fan_in)``), unit subsampling coefficients, zero
        biases; float64 theta. ``random_state``: None, int, RandomState or Generator."""
        rng = random_state
        if not isinstance(rng, np.random.Generator):
            rng = check_random_state(random_state)
        return self.pack({name: layer.init(rng) for name, layer in self.layers.items()})

    def _check_images(self, X):
        X = np.asarray(X)
        if X.ndim != 3 or X.shape[1:] != self.spec.input_shape:
            raise ValueError(f"images must have shape (n, {self.spec.input_shape[0]}, "
                             f"{self.spec.input_shape[1]}), got {X.shape}.")
        return X

    def forward(self, theta, X, workspace=None):
        """``G = G_W(X)`` (n, n_outputs) and the cache for :meth:`backward`.

        Runs in the dtype of X (float32 or float64); theta is cast to it. ``workspace``
        (:class:`._workspace.Workspace`): the layers' arrays come from it (the caller
        promises that nothing of this pass but the returned G outlives the next pass).
        """
        X = self._check_images(X)
        params = self.unpack(theta, X.dtype, workspace)
        out = np.ascontiguousarray(X[:, None])  # (n, 1, H, W)
        caches = {}
        with blas_single_threaded():
            out = self._forward_layers(params, out, workspace, caches)
        return out, (params, caches)

    def _forward_layers(self, params, out, workspace=None, caches=None):
        """All layers' forward passes on the batch ``out`` (n, 1, H, W); the caches into
        ``caches`` when given. The layers computed image by image (C1, S2, C3, S4: those with
        ``forward_units``) run chained on each thread's span of images, one span per thread for
        the four of them: one hand-out of work instead of four, and each image's maps still in
        cache for the next layer (the same units, so the same numbers as layer by layer)."""
        caches = {} if caches is None else caches
        runs = []
        for name, layer in self.layers.items():
            if hasattr(layer, "forward_units"):
                out, caches[name], run = layer.forward_units(params[name], out, workspace)
                runs.append(run)
                continue
            if runs:
                _run_chained(runs, out.shape[0])
                runs = []
            out, caches[name] = layer.forward(params[name], out, workspace)
        if runs:
            _run_chained(runs, out.shape[0])
        return out

    def backward(self, theta, cache, dG, workspace=None):
        """Flat ``dL/dtheta`` (in the dtype of the forward pass) for ``dG = dL/dG`` (n, k), a
        new array (``workspace``: as in :meth:`forward`)."""
        params, caches = cache
        grads, d = {}, np.ascontiguousarray(dG)
        names = list(self.layers)
        with blas_single_threaded():
            for name in reversed(names):
                layer = self.layers[name]
                d, grads[name] = layer.backward(params[name], caches[name], d,
                                                input_grad=name != names[0],
                                                workspace=workspace)
                if d is not None:
                    d = np.ascontiguousarray(d)
        return self.pack(grads)

    def transform(self, theta, X, batch_size=256):
        """``G_W(X)`` in batches of ``batch_size`` images (bounded memory), no cache kept:
        the numbers of :meth:`forward`, bit for bit (:meth:`_infer_layers`)."""
        X = self._check_images(X)
        batch_size = max(1, int(batch_size))
        out = np.empty((X.shape[0], self.n_outputs), dtype=X.dtype)
        params = self.unpack(theta, X.dtype)
        with blas_single_threaded():
            for start in range(0, X.shape[0], batch_size):
                batch = np.ascontiguousarray(X[start:start + batch_size, None])
                out[start:start + batch_size] = self._infer_layers(params, batch)
        return out

    def _infer_layers(self, params, batch):
        """:meth:`_forward_layers` with no cache: the leading per-image layers (C1, S2, C3,
        S4) run chained on spans of at most :data:`INFER_IMAGES` images, each thread in its
        own arrays of that size, reused from span to span; only the last one's maps are kept
        for the whole batch. A batch's feature maps (15 MB for C1 alone at 128 56x46 float32
        images) are then never allocated: depending on what the process held, a call could map
        them afresh (3,506 page faults a call in ``benchmarks/transform_memory.py
        --workspace``), and the next layer read them back from memory. The same units, so the
        same numbers. Where numba's drivers run the spans (:data:`.threads.DRIVER_MIN_THREADS`
        threads and more), the batch goes through :meth:`_forward_layers`: the drivers take
        whole-batch arrays."""
        names = list(self.layers)
        lead = 0
        while lead < len(names) and hasattr(self.layers[names[lead]], "forward_units"):
            lead += 1
        n = batch.shape[0]
        if lead == 0 or drivers_run(n):
            return self._forward_layers(params, batch)
        shape = batch.shape[1:]
        for name in names[:lead]:
            shape = self.layers[name].output_shape(shape)
        kept = np.empty((n,) + shape, batch.dtype)
        scratch = {}  # a thread's arrays: reused by its spans, freed with this call

        def span(i0, i1):
            workspace = scratch.setdefault(threading.get_ident(), Workspace())
            for s0 in range(i0, i1, INFER_IMAGES):
                s1 = min(i1, s0 + INFER_IMAGES)
                out = batch[s0:s1]
                for name in names[:lead]:
                    out, _, run = self.layers[name].forward_units(params[name], out, workspace)
                    run(0, s1 - s0)
                kept[s0:s1] = out

        map_spans(span, np.ones(n))
        out = kept
        for name in names[lead:]:
            out, _ = self.layers[name].forward(params[name], out)
        return out


def _run_chained(runs, n_images):
    """``run(i0, i1)`` of each layer in order, on each thread's span of the ``n_images`` (the
    paper's C1, S2, C3, S4 on numba's threads through :func:`._drivers.lenet_forward_spans`,
    other chains on the pool)."""

    def span(i0, i1):
        for run in runs:
            run(i0, i1)

    lenet = tuple(type(run) for run in runs) == _drivers.LENET
    map_spans(span, np.ones(n_images), _drivers.lenet_forward_spans if lenet else None,
              tuple(tuple(run) for run in runs))


def network_from_dict(spec):
    """The :class:`ConvNetwork` of a :meth:`NetworkSpec.to_dict` dict; ValueError when it is
    not a valid spec."""
    try:
        return ConvNetwork(NetworkSpec.from_dict(spec))
    except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError) as error:
        raise ValueError(f"is not a valid network spec ({type(error).__name__}: "
                         f"{error}).") from None


def check_same_network(new, fitted, why, n_params=None):
    """ValueError (starting with ``why``) unless ``new`` is the network ``fitted`` (same input
    size, same spec; ``n_params`` fitted weights, if given)."""
    new, fitted, n_new = new.spec, fitted.spec, new.n_params
    if tuple(new.input_shape) != tuple(fitted.input_shape):
        raise ValueError(f"{why}: pairs are {new.input_shape[0]}x{new.input_shape[1]} images, "
                         f"but the network was fitted on {fitted.input_shape[0]}x"
                         f"{fitted.input_shape[1]} images.")
    if new.to_dict() != fitted.to_dict() or (n_params is not None and n_params != n_new):
        raise ValueError(f"{why}, but n_components, n_maps or kernel_sizes changed since the "
                         f"fit: the network {new.to_dict()} is not the fitted "
                         f"{fitted.to_dict()}.")


# The network was called ConvNet, as the mapping metricfit.mappings.ConvNet that wraps it.
__getattr__ = deprecated_aliases(__name__, {"ConvNet": ("ConvNetwork", ConvNetwork)})
