"""Pair losses, one module each. For linear maps every module offers

- ``cost_grad(A, X1, X2, s, lam=0.0, A0=None) -> (J, G)``: stateless, the generic composition;
- ``objective(X1, X2, s, lam=0.0, A0=None) -> f``: prepared once per data set, ``f(A) -> (J, G)``;
- ``embedding_cost_grad(a, b, s) -> (J, dJ/da, dJ/db)``: the loss on embeddings.

``ddml`` follows this API (with its hyper-parameters ``T`` and ``tau`` as extra keywords; its
cost depends on ``x - y`` only, so its ``cost_grad`` uses the differences, not the composition).
``ldml`` does not learn a linear map but a Mahalanobis matrix M and a bias b:
``cost_grad(M, b, X1, X2, s, lam=0.0) -> (J, GM, gb)`` and ``objective(X1, X2, s, lam=0.0)``
on the flat ``theta = [M.ravel(), b]``.
"""

from . import csml, ddml, ldml, tsml

LOSSES = {"tsml": tsml, "csml": csml, "ddml": ddml, "ldml": ldml}

__all__ = ["tsml", "csml", "ddml", "ldml", "LOSSES"]
