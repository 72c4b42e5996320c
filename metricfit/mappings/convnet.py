r"""The convolutional network of seed 000 as a mapping: ``f(x, theta) = G_W(x)``.

Wraps :class:`metricfit.cnn.network.ConvNetwork` (C1-S2-C3-S4-C5-F6 on the numba kernels of
:mod:`metricfit.cnn`, sized to the images; the kernels and layers stay there) behind the
interface every mapping shares: inputs are rows ``X (n, H * W)`` (images flattened in C
order, so pairs are the toolkit's ``(n_pairs, 2, d)`` arrays and index pairs work unchanged),
``forward(theta, X) -> (Z, cache)``, ``backward(theta, cache, dZ) -> dtheta``, a flat
``theta`` and ``init(random_state)``. The back-propagation through the layers is that of the
convnet (LeCun et al. 1998, appendix; seed 000 section 3.2), tested by central differences.
"""

import numpy as np

from ..cnn.network import ConvNetwork, network_spec
from ._base import Mapping, _check_size

__all__ = ["ConvNet"]


class ConvNet(Mapping):
    """Seed 000's convnet ``G_W``: flattened images (n, H * W) -> embeddings (n, k) in (-1, 1).

    Parameters
    ----------
    input_shape : (int, int)
        Image height and width; inputs have ``H * W`` features.
    n_components : int, default=50
        Units of F6, the embedding dimension.
    n_maps : (int, int, int), default=(15, 45, 250)
        Feature maps of C1, C3 and C5 (seed 000).
    kernel_sizes : (int or pair, int or pair), default=None
        C1 and C3 kernels; None: (7, 6), or (3, 2) for images under 28 pixels.

    Examples
    --------
    >>> import numpy as np
    >>> f = ConvNet((8, 8), n_components=3, n_maps=(2, 3, 4))
    >>> theta = f.init(random_state=0)
    >>> f.transform(theta, np.zeros((5, 64))).shape
    (5, 3)

    References
    ----------
    - Chopra, Hadsell and LeCun, "Learning a Similarity Metric Discriminatively, with Application to
      Face Verification", CVPR 2005 (seed 000).
    """

    def __init__(self, input_shape, n_components=50, n_maps=(15, 45, 250), kernel_sizes=None):
        self.input_shape = tuple(int(v) for v in input_shape)
        self.n_maps = tuple(int(m) for m in n_maps)
        self.kernel_sizes = None if kernel_sizes is None else tuple(kernel_sizes)
        self.n_components = _check_size(n_components, "n_components")
        self.network = ConvNetwork(network_spec(self.input_shape, self.n_maps,
                                                self.n_components, self.kernel_sizes))
        self.n_features = int(np.prod(self.input_shape))

    def _sizes(self):
        return {"input_shape": self.input_shape, "n_components": self.n_components,
                "n_maps": self.n_maps, "kernel_sizes": self.kernel_sizes}

    # scikit-learn's clone / get_params of an estimator holding a mapping compare by repr and
    # deep-copy; the network object holds sizes only, so both are cheap.

    @property
    def shapes(self):
        return self.network.shapes

    @property
    def n_params(self):
        return self.network.n_params

    def init(self, random_state=None):
        """Random weights (std ``1/sqrt(fan_in)``), unit subsampling coefficients, zero
        biases (:meth:`metricfit.cnn.network.ConvNetwork.init`); float64 theta."""
        return self.network.init(random_state)

    def _images(self, X):
        X = self._check_input(X)
        return np.ascontiguousarray(X).reshape(X.shape[0], *self.input_shape)

    def forward(self, theta, X):
        """``Z = G_W(X)`` (n, k), in the dtype of X, and the cache for :meth:`backward`."""
        return self.network.forward(theta, self._images(X))

    def backward(self, theta, cache, dZ):
        """Flat ``dJ/dtheta`` for ``dZ = dJ/dZ`` (n, k), in the dtype of the forward pass."""
        return self.network.backward(theta, cache, np.asarray(dZ))

    def transform(self, theta, X, batch_size=256):
        """``G_W(X)`` in batches of ``batch_size`` images, no cache kept."""
        return self.network.transform(theta, self._images(X), batch_size)
