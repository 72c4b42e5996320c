"""What every linear pair loss shares: input checks, the chunked composition of a loss on
embeddings with the linear map ``a = A x`` and the prepared-objective protocol (the
regulariser is :func:`metricfit.losses.penalty.add_penalty`).

The generic composition (the "truth" path)
-----------------------------------------
For ``a_i = A x_i``, ``b_i = A y_i`` and a pair loss ``J_i(a_i, b_i, s_i)``,

    J(A)  = 1/n sum_i J_i + lam/2 ||A - A0||_F^2
    dJ/dA = 1/n sum_i [ (dJ_i/da_i) x_i^T + (dJ_i/db_i) y_i^T ] + lam (A - A0)

which is four GEMMs over the pairs: ``P1 = X1 A^T``, ``P2 = X2 A^T`` (forward) and
``D1^T X1 + D2^T X2`` (backward), with a fused numba kernel in between that turns the
embeddings P1, P2 into the per-pair gradients D1, D2 in place and returns sum_i J_i.
Pairs go through in chunks, so temporaries are O(chunk_size * k + k * d) whatever n is.
"""

import numpy as np

from ..pairs import check_pair_labels
from ..pairs.checks import float_dtype
from ..pairs.index import CHUNK_SIZE
from ..pairs.rows import cosine_rows
from ._rows import zero_subnormals
from ._scratch import Scratch, add_product, product
from .penalty import add_penalty


def check_pair_data(X1, X2, s, validated=False):
    """Validate the data of a linear pair loss; return C-contiguous X1, X2 and s (same dtype).

    X1, X2 : (n, d) arrays of the first and second vector of each pair; s : (n,) labels in
    {-1, +1} (or {0, 1}, 1 = similar). Float32 is kept; anything else becomes float64.
    ``validated=True`` (data checked at the estimator's edge): no scan for NaN or bad labels,
    only the layout and dtype conversions.
    """
    if validated:
        return trusted_pair_data(X1, X2, s)
    X1, X2 = np.asarray(X1), np.asarray(X2)
    if X1.ndim != 2 or X1.shape != X2.shape:
        raise ValueError(
            f"X1 and X2 must be 2-D arrays of the same shape (n_pairs, n_features), got "
            f"{X1.shape} and {X2.shape}."
        )
    if X1.shape[0] == 0:
        raise ValueError("no pairs given (n_pairs = 0).")
    dtype = float_dtype(X1, X2)
    X1 = np.ascontiguousarray(X1, dtype=dtype)
    X2 = np.ascontiguousarray(X2, dtype=dtype)
    if not (np.isfinite(X1).all() and np.isfinite(X2).all()):
        raise ValueError("X1 or X2 contains NaN or infinity.")
    s = check_pair_labels(s, X1.shape[0], require_both=False).astype(dtype)
    return X1, X2, s


def trusted_pair_data(X1, X2, s):
    """C-contiguous X1, X2 in their float dtype and s in it: the layout of
    :func:`check_pair_data` without its checks (for data validated once, upstream)."""
    dtype = float_dtype(X1, X2)
    X1 = np.ascontiguousarray(X1, dtype=dtype)
    X2 = np.ascontiguousarray(X2, dtype=dtype)
    return X1, X2, np.asarray(s).astype(dtype)


def check_components(A, n_features, dtype, A0=None):
    """Return A (k, d) and A0 (zeros when None) as C-contiguous arrays of the data dtype."""
    A = np.asarray(A)
    if A.ndim != 2 or A.shape[1] != n_features:
        raise ValueError(f"A must have shape (k, {n_features}), got {A.shape}.")
    A = np.ascontiguousarray(A, dtype=dtype)
    if A0 is None:
        return A, np.zeros_like(A)
    A0 = np.asarray(A0)
    if A0.shape != A.shape:
        raise ValueError(f"A0 must have the shape of A {A.shape}, got {A0.shape}.")
    return A, np.ascontiguousarray(A0, dtype=dtype)


def composed_cost_grad(embedding_kernel, A, X1, X2, s, chunk_size=CHUNK_SIZE, scratch=None):
    """sum_i J_i and sum_i dJ_i/dA through the linear map, chunk by chunk (no regulariser).

    ``embedding_kernel(P1, P2, s)`` overwrites the embeddings P1, P2 (chunk, k) with dJ_i/da_i
    and dJ_i/db_i and returns sum_i J_i. ``scratch`` (:class:`._scratch.Scratch`, a prepared
    objective's): the products go into its arrays instead of new ones (the same numbers).
    """
    total = 0.0
    G = None  # (k, d), a new array
    for start in range(0, X1.shape[0], chunk_size):
        x1 = X1[start:start + chunk_size]  # (m, d)
        x2 = X2[start:start + chunk_size]  # (m, d)
        P1 = product(x1, A.T, scratch, "P1")  # (m, k)
        P2 = product(x2, A.T, scratch, "P2")  # (m, k)
        total += embedding_kernel(P1, P2, s[start:start + chunk_size])
        G = add_product(G, P1.T, x1, scratch)
        G = add_product(G, P2.T, x2, scratch)
    return total, (np.zeros_like(A) if G is None else G)


def cosine_scores(a, b):
    """Row-wise cosine of (n, k) embeddings, scale-safe; 0 where an embedding is zero."""
    return cosine_rows(a, b)


def embedding_cost_grad(embedding_kernel, a, b, s, validated=False):
    """The mean pair loss on embeddings and its gradients (J, dJ/da, dJ/db), without mapping.

    This is the entry point for non-linear mappings: they back-propagate dJ/da and dJ/db.
    ``validated=True`` (inside an objective, on embeddings of validated data): no scan.
    J is a Python float (its value rounded to the data dtype), the gradients in the data
    dtype.
    """
    a, b, s = check_pair_data(a, b, s, validated)
    Ga, Gb = a.copy(), b.copy()
    n = a.shape[0]
    J = embedding_kernel(Ga, Gb, s) / n
    Ga /= n
    Gb /= n
    zero_subnormals(Ga)  # the mean's division makes them of tiny terms; they slow the
    zero_subnormals(Gb)  # mapping's products (module docstring of ._rows)
    return float(a.dtype.type(J)), Ga, Gb


class PreparedObjective:
    """``f(A) -> (J, G)`` over a fixed data set, for the optimizers.

    Subclasses prepare their data once in ``__init__`` (keeping the validated ``X1``, ``X2``,
    ``labels`` and their ``_embedding_kernel``) and implement ``_data_cost_grad(A)``,
    returning sum_i J_i and sum_i dJ_i/dA. ``A`` may be given as (k, d) or flat (k * d,), the
    layout scipy's ``minimize(jac=True)`` uses; G comes back in the layout of A. J and G have
    the data dtype.

    The batch protocol (what stochastic solvers use): ``n_pairs``, ``labels`` (n_pairs,) in
    {-1, +1}, and ``batch(A, indices) -> (J, G)``, the same objective (mean cost plus
    regulariser) over the pairs ``indices`` only, by the generic composition.
    """

    _embedding_kernel = None

    def __init__(self, X1, X2, s, lam, A0, chunk_size):
        self.X1, self.X2 = X1, X2
        self._init_common(X1.shape[0], X1.shape[1], X1.dtype, s, lam, A0, chunk_size)

    def _init_common(self, n_pairs, n_features, dtype, s, lam, A0, chunk_size):
        """Sizes, labels, chunk size, ``lam`` and ``A0``: what every layout of the data shares."""
        self.labels, self.n_pairs, self.n_features, self.dtype = s, n_pairs, n_features, dtype
        self.chunk_size = int(chunk_size)
        self.lam = float(lam)
        if lam < 0:
            raise ValueError(f"lam must be >= 0, got {lam}.")
        self.A0 = None if A0 is None else np.ascontiguousarray(A0, dtype=self.dtype)
        self._scratch = Scratch()  # the per-call products' arrays, kept between calls
        if self.A0 is not None and (self.A0.ndim != 2 or self.A0.shape[1] != self.n_features):
            raise ValueError(f"A0 must have shape (k, {self.n_features}), got {np.shape(A0)}.")

    def __call__(self, A):
        return self._evaluate(A, self._data_cost_grad, self.n_pairs)

    def batch(self, A, indices):
        indices = np.asarray(indices)

        def data_cost_grad(A):
            return composed_cost_grad(self._embedding_kernel, A, self.X1[indices],
                                      self.X2[indices], self.labels[indices], self.chunk_size)

        return self._evaluate(A, data_cost_grad, indices.shape[0])

    def _evaluate(self, A, data_cost_grad, n_pairs):
        A = np.asarray(A)
        flat = A.ndim == 1
        if flat:
            if A.size % self.n_features:
                raise ValueError(f"A has {A.size} entries, not a multiple of {self.n_features}.")
            A = A.reshape(-1, self.n_features)
        A, A0 = check_components(A, self.n_features, self.dtype, self.A0)
        total, G = data_cost_grad(A)
        G /= n_pairs
        J, G = add_penalty(total / n_pairs, G, A, self.lam, A0)
        return self.dtype.type(J), (G.ravel() if flat else G)

    def _data_cost_grad(self, A):
        return composed_cost_grad(self._embedding_kernel, A, self.X1, self.X2, self.labels,
                                  self.chunk_size, self._scratch)
