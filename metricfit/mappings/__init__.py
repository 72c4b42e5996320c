"""Mappings ``f(., theta)``: the siamese branch that turns an input into an embedding.

Seed 004 section 4: ``Linear`` (``W x``), ``Tanh`` (``tanh(W x + h)``, eqs. 10-12) and ``MLP``
(two tanh layers); seed 000's convnet as ``ConvNet`` (flattened images in, its numba kernels in
:mod:`metricfit.cnn`). Each is a small object holding only its sizes, with pure functions of a
flat parameter vector ``theta``:

- ``n_params``, ``shapes``; ``init(random_state) -> theta`` (identity / Glorot eq. 13);
- ``unpack(theta) -> {name: view}``, ``pack(**blocks) -> theta``;
- ``forward(theta, X) -> (Z, cache)``, ``backward(theta, cache, dZ) -> dtheta``,
  ``transform(theta, X) -> Z``;
- what the estimators need to stay mapping-agnostic: ``fitted_attribute`` and
  ``as_attribute(theta)`` (``components_`` (k, d) for ``Linear``, the flat ``params_``
  otherwise), ``regularise_towards_init`` (``Linear``: the penalty pulls towards the start, seed
  002 eq. 9; others towards 0) and ``is_matrix`` (identity / WCCN starts).

:func:`make_mapping` turns a name ('linear', 'tanh', 'mlp', 'convnet') into a mapping sized to
the data, with a ValueError listing the choices for an unknown name.

:class:`MappedObjective` composes a mapping with any pair loss's ``embedding_cost_grad``
(passed in as a callable: this package imports no loss, only the one L2 penalty of
:mod:`metricfit.losses.penalty`).
"""

import numpy as np

from .._deprecation import deprecated_aliases
from ._base import Mapping
from .convnet import ConvNet
from .linear import Linear
from .mlp import MLP
from .objective import MappedObjective, l2_normalize
from .tanh import Tanh

MAPPINGS = {"linear": Linear, "tanh": Tanh, "mlp": MLP, "convnet": ConvNet}


def make_mapping(mapping, n_features, n_components=None, n_hidden=None):
    """The mapping named ``mapping`` for inputs of ``n_features``, or ``mapping`` itself when
    it is a :class:`Mapping` (then its input size must be ``n_features``).

    ``n_components`` None means ``n_features`` (50 for 'convnet'); 'linear' needs
    ``n_components <= n_features``; 'mlp' has ``n_hidden`` (None: ``n_components``) hidden
    units; 'convnet' takes square images of ``n_features`` pixels with seed 000's map counts
    (pass a :class:`ConvNet` for other shapes and sizes). Raises ValueError for an unknown
    name, listing the choices.

    References
    ----------
    - Chopra, Hadsell and LeCun, "Learning a Similarity Metric Discriminatively, with Application to
      Face Verification", CVPR 2005 (seed 000).
    """
    d = int(n_features)
    if isinstance(mapping, Mapping):
        if mapping.n_features != d:
            raise ValueError(f"{mapping!r} takes {mapping.n_features} features; the data "
                             f"have {d}.")
        return mapping
    if not isinstance(mapping, str) or mapping not in MAPPINGS:
        raise ValueError(f"unknown mapping {mapping!r}; choose from {', '.join(MAPPINGS)} or "
                         f"pass a metricfit.mappings.Mapping.")
    if mapping == "convnet":
        side = int(round(np.sqrt(d)))
        if side * side != d:
            raise ValueError(f"mapping='convnet' needs square images (n_features a square), "
                             f"got {d}; pass mapping=ConvNet(input_shape=(H, W)).")
        return ConvNet((side, side), n_components=n_components or 50)
    k = d if n_components is None else int(n_components)
    if mapping == "linear" and k > d:
        raise ValueError(f"n_components={k} must be <= n_features={d}.")
    if mapping == "mlp":
        return MLP(d, n_hidden or k, k)
    return MAPPINGS[mapping](d, k)


__all__ = ["Mapping", "Linear", "Tanh", "MLP", "ConvNet", "MAPPINGS", "MappedObjective",
           "l2_normalize", "make_mapping"]

__getattr__ = deprecated_aliases(__name__, {"l2_normalise": ("l2_normalize", l2_normalize)})
