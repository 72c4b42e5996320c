"""Mappings ``f(., theta)``: the siamese branch that turns an input into an embedding.

Seed 004 section 4: ``Linear`` (``W x``), ``Tanh`` (``tanh(W x + h)``, eqs. 10-12) and ``MLP``
(two tanh layers). Each is a small object holding only its sizes, with pure functions of a
flat parameter vector ``theta``:

- ``n_params``, ``shapes``; ``init(random_state) -> theta`` (identity / Glorot eq. 13);
- ``unpack(theta) -> {name: view}``, ``pack(**blocks) -> theta``;
- ``forward(theta, X) -> (Z, cache)``, ``backward(theta, cache, dZ) -> dtheta``,
  ``transform(theta, X) -> Z``.

:class:`MappedObjective` composes a mapping with any pair loss's ``embedding_cost_grad``
(passed in as a callable: this package imports no loss).
"""

from ._base import Mapping
from .linear import Linear
from .mlp import MLP
from .objective import MappedObjective, l2_normalise
from .tanh import Tanh

MAPPINGS = {"linear": Linear, "tanh": Tanh, "mlp": MLP}

__all__ = ["Mapping", "Linear", "Tanh", "MLP", "MAPPINGS", "MappedObjective", "l2_normalise"]
