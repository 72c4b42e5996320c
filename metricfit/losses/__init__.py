"""Pair losses, one module each. For linear maps every module offers

- ``cost_grad(A, X1, X2, s, lam=0.0, A0=None) -> (J, G)``: stateless, the generic composition;
- ``objective(X1, X2, s, lam=0.0, A0=None) -> f``: prepared once per data set, ``f(A) -> (J, G)``;
- ``embedding_cost_grad(a, b, s) -> (J, dJ/da, dJ/db)``: the loss on embeddings.
"""

from . import csml, tsml

LOSSES = {"tsml": tsml, "csml": csml}

__all__ = ["tsml", "csml", "LOSSES"]
