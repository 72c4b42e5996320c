r"""The prepared linear objectives (TSML, CSML, DDML) over an array namespace ``xp``.

The same hand-derived algebra as the NumPy + numba objectives (:mod:`metricfit.losses.tsml`,
``csml``, ``ddml``: the equations and their derivation are in those modules' docstrings),
written once over the array API (torch, CuPy, array_api_strict; NumPy input keeps the numba
path). The data ``X1``, ``X2`` (n, d) live on the device; the parameters ``A`` (k, d) live on
the host, where scipy's L-BFGS works on them. One call:

1. ``A`` host -> device (k d values);
2. on the device, the GEMMs over the pairs and element-wise work between them (no autograd):

   - TSML (seed 002 eqs. 4-10), ``U = X1 + s X2``, ``S = X1^T X1 + X2^T X2`` prepared:
     ``C = U A^T``; ``J = [1/2 tr(A S A^T) - sum_i |c_i| + n] / n``;
     ``G = [A S - C_hat^T U] / n`` with ``c_hat_i = c_i / |c_i|`` (0 where ``c_i = 0``);
   - CSML (seed 002 eq. 11): ``P1 = X1 A^T``, ``P2 = X2 A^T``, per pair
     ``dJ_i/da_i = (s_i/|a_i|)(cos_i a_i/|a_i| - b_i/|b_i|)`` (and symmetrically for b),
     ``G = [D1^T X1 + D2^T X2] / n``; a zero embedding contributes nothing;
   - DDML (seed 004 eqs. 5-7), ``D = X1 - X2`` prepared: ``P = D A^T``,
     ``z_i = 1 - s_i (tau - |p_i|^2)``, ``J_i = softplus(T z_i) / (2 T)``,
     ``G = [(s sigma(T z) * P)^T D] / n``;
3. ``[G, sum_i J_i]`` device -> host in one transfer (k d + 1 values, one synchronisation);
   the regulariser ``lam/2 |A - A0|^2`` is added on the host
   (:func:`metricfit.losses.penalty.add_penalty`).

So an iteration moves k d values each way and never the data. The arithmetic stays in the
data's dtype on the device (float32 data: float32 sums; the numba kernels accumulate in
float64, so float32 results agree to about 1e-5 relative, not bit for bit).

Index pairs (points on the device, an (n_pairs, 2) integer index): the points are projected
once per call (``P = X A^T``), the embeddings of each chunk of pairs gathered, the loss's
per-pair gradients formed by the same element-wise code and scattered back onto the points
(torch ``index_add_``, CuPy ``scatter_add``), then ``G = R^T X``: one GEMM over the points.
A namespace without a scatter (array_api_strict) gathers the points' rows instead and does
the backward GEMM per chunk of pairs.
"""

import numpy as np

from .._array_api import device_of, namespace_name, to_numpy
from ._linear import check_components
from .penalty import add_penalty

__all__ = ["XP_CHUNK_SIZE", "xp_dtype", "numpy_dtype", "work_dtype", "safe_inverse",
           "row_norms", "row_dots",
           "check_xp_finite", "xp_labels", "check_xp_pair_data", "scatter_add_rows",
           "XPLinearObjective", "XPIndexObjective", "xp_objective", "xp_index_objective",
           "XP_LOSSES"]

XP_CHUNK_SIZE = 1 << 20  # pairs per chunk on a device: temporaries O(chunk k); big GEMMs


def numpy_dtype(xp, dtype):
    """The NumPy float dtype of an ``xp`` float dtype (None for any other dtype)."""
    if dtype == xp.float32:
        return np.dtype(np.float32)
    if dtype == xp.float64:
        return np.dtype(np.float64)
    return None


def xp_dtype(xp, dtype):
    """The ``xp`` dtype of a NumPy float32/float64 dtype."""
    return xp.float32 if np.dtype(dtype) == np.float32 else xp.float64


def work_dtype(xp, *arrays):
    """The house float-dtype rule on a device: float32 if every array is float32, else
    float64 (integers, float16 and bfloat16 included)."""
    return xp.float32 if all(x.dtype == xp.float32 for x in arrays) else xp.float64


def check_xp_finite(xp, X, what):
    """Raise a ValueError naming ``what`` if the device array X has a NaN or infinity (one
    synchronisation)."""
    if not bool(xp.all(xp.isfinite(X))):
        raise ValueError(f"{what} contains NaN or infinity.")


def xp_labels(xp, s, n, dtype, device):
    """Labels ``s`` (any namespace, {-1, +1} or {0, 1}) checked on the host (n values) and
    put on ``device`` as a (n,) array of ``dtype`` in {-1, +1}."""
    from ..pairs import check_pair_labels

    s = check_pair_labels(to_numpy(s), n, require_both=False)
    return xp.asarray(s.astype(numpy_dtype(xp, dtype)), device=device)


def check_xp_pair_data(xp, X1, X2, s, validated=False):
    """``(X1, X2, s)`` on one device, in the data's float dtype (float32 kept, else
    float64); ``s`` in {-1, +1}. Without ``validated``: shapes and finiteness checked."""
    if X1.ndim != 2 or tuple(X1.shape) != tuple(X2.shape):
        raise ValueError(f"X1 and X2 must be 2-D arrays of the same shape (n_pairs, n_features), "
                         f"got {tuple(X1.shape)} and {tuple(X2.shape)}.")
    if X1.shape[0] == 0:
        raise ValueError("no pairs given (n_pairs = 0).")
    dtype = work_dtype(xp, X1, X2)
    X1, X2 = xp.astype(X1, dtype, copy=False), xp.astype(X2, dtype, copy=False)
    if not validated:
        check_xp_finite(xp, X1, "X1")
        check_xp_finite(xp, X2, "X2")
    if validated:  # labels checked upstream (the estimator's edge)
        return X1, X2, xp.asarray(s, dtype=dtype, device=device_of(X1))
    return X1, X2, xp_labels(xp, s, X1.shape[0], dtype, device_of(X1))


def _library(xp):
    return namespace_name(xp)


def row_norms(xp, X):
    """``|x_i|`` of each row of X (m, k): one reduction kernel on torch
    (``torch.linalg.vector_norm``), else ``sqrt(vecdot(x, x))``."""
    library = _library(xp)
    if library == "torch":
        import torch

        return torch.linalg.vector_norm(X, dim=-1)
    if library in ("array_api_strict", "numpy"):
        return xp.sqrt(xp.vecdot(X, X))
    return xp.sqrt(xp.sum(X * X, axis=-1))


def row_dots(xp, a, b):
    """``<a_i, b_i>`` of each pair of rows (m,): the square of :func:`row_norms` when a is b;
    ``vecdot`` on namespaces that implement it natively, else ``sum(a * b)`` (array_api_compat
    writes torch's ``vecdot`` as a batched matrix product)."""
    if a is b and _library(xp) == "torch":
        norms = row_norms(xp, a)
        return norms * norms
    if _library(xp) in ("array_api_strict", "numpy"):
        return xp.vecdot(a, b)
    return xp.sum(a * b, axis=-1)


def _chunks(n, chunk_size):
    return [(start, min(start + chunk_size, n)) for start in range(0, n, chunk_size)]


def safe_inverse(xp, norms):
    """``1 / norms`` where ``norms > 0``, else 0 (the minimum-norm subgradient convention)."""
    positive = norms > 0
    return xp.where(positive, 1 / xp.where(positive, norms, xp.ones_like(norms)),
                    xp.zeros_like(norms))


def _softplus_sigmoid(xp, t):
    """``(log(1 + e^t), 1 / (1 + e^-t))`` without overflow, element-wise."""
    e = xp.exp(-xp.abs(t))  # in (0, 1]
    softplus = xp.maximum(t, xp.zeros_like(t)) + xp.log1p(e)
    return softplus, xp.where(t >= 0, 1 / (1 + e), e / (1 + e))


# -- the per-pair gradients on embeddings (the generic composition's middle step) ----------

def tsml_embedding_grad(xp, P1, P2, s):
    """TSML (eq. 4, 6): ``(sum_i J_i, dJ/da, dJ/db)`` for embeddings P1, P2 (m, k)."""
    C = P1 + s[:, None] * P2
    norms = row_norms(xp, C)
    total = (0.5 * xp.sum(row_dots(xp, P1, P1) + row_dots(xp, P2, P2)) - xp.sum(norms)
             + P1.shape[0])
    C *= safe_inverse(xp, norms)[:, None]
    return total, P1 - C, P2 - s[:, None] * C


def csml_embedding_grad(xp, P1, P2, s):
    """CSML (seed 002 eq. 11): ``(sum_i J_i, dJ/da, dJ/db)`` for embeddings P1, P2 (m, k),
    in the normalised form of the numba kernel; a zero embedding gives 0."""
    na, nb = row_norms(xp, P1), row_norms(xp, P2)
    inv_a, inv_b = safe_inverse(xp, na), safe_inverse(xp, nb)
    cos = xp.clip(row_dots(xp, P1, P2) * inv_a * inv_b, -1.0, 1.0)  # 0 where a or b is 0
    total = -xp.sum(s * cos)
    ab = (s * inv_a * inv_b)[:, None]
    c1, c2 = (s * cos * inv_a * inv_a)[:, None], (s * cos * inv_b * inv_b)[:, None]
    if _library(xp) == "torch":  # fused multiply-adds: fewer passes over the (m, k) arrays
        import torch

        D1 = torch.addcmul(P1 * c1, P2, ab, value=-1)
        return total, D1, torch.addcmul(P2 * c2, P1, ab, value=-1)
    return total, c1 * P1 - ab * P2, c2 * P2 - ab * P1


def _ddml_weights(xp, P, s, T, tau):
    """``(sum_i J_i, s_i sigma(T z_i))`` for the differences P (m, k) = a - b."""
    softplus, sig = _softplus_sigmoid(xp, T * (1 - s * (tau - row_dots(xp, P, P))))
    return xp.sum(softplus) * (0.5 / T), s * sig


def ddml_embedding_grad(xp, P1, P2, s, T, tau):
    """DDML (seed 004 eqs. 5-7): ``dJ/da = s sigma(T z)(a - b) = -dJ/db``."""
    P = P1 - P2
    total, w = _ddml_weights(xp, P, s, T, tau)
    P *= w[:, None]
    return total, P, -P


# -- prepared objectives on vector pairs --------------------------------------------------

class XPLinearObjective:
    """``f(A) -> (J, G)`` of a linear pair loss with the data on a device of namespace ``xp``.

    ``A`` (k, d) or flat (k d,) is a NumPy array on the host, as scipy's L-BFGS gives it; J
    (the data's NumPy dtype) and G (A's layout, the data's NumPy dtype) come back on the host.
    Subclasses prepare the data in ``_prepare`` and implement ``_device_cost_grad(A) ->
    (sum_i J_i, sum_i dJ_i/dA)`` on device arrays.

    Attributes
    ----------
    xp : namespace; device : its device; n_pairs, n_features : int; dtype : NumPy dtype
    labels : (n_pairs,) device array in {-1, +1}

    Examples
    --------
    NumPy (through array_api_compat's wrapper) is an array-API namespace, so the xp objectives
    run anywhere (the learners pass torch or CuPy arrays); they equal the NumPy + numba
    objectives:

    >>> import numpy as np
    >>> from array_api_compat import numpy as xnp  # NumPy as an array-API namespace
    >>> from metricfit.losses import tsml, xp_linear
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.normal(size=(2, 20, 4))
    >>> s, A = np.repeat([1.0, -1.0], 10), rng.normal(size=(2, 4))
    >>> f = xp_linear.xp_objective(xnp, "triangular", X1, X2, s, lam=0.1)
    >>> type(f).__name__
    'TSMLXPObjective'
    >>> J, G = f(A)
    >>> J_np, G_np = tsml.objective(X1, X2, s, lam=0.1)(A)
    >>> bool(np.isclose(J, J_np) and np.allclose(G, G_np))
    True
    """

    def __init__(self, xp, X1, X2, s, lam=0.0, A0=None, chunk_size=XP_CHUNK_SIZE,
                 validated=False, **params):
        X1, X2, s = check_xp_pair_data(xp, X1, X2, s, validated)
        self._init_common(xp, X1, s, X1.shape[1], lam, A0, chunk_size)
        self.params = params
        self._prepare(X1, X2)

    def _init_common(self, xp, X, s, n_features, lam, A0, chunk_size):
        self.xp, self.device = xp, device_of(X)
        self.dtype = numpy_dtype(xp, X.dtype)
        self.labels, self.n_pairs, self.n_features = s, s.shape[0], int(n_features)
        self.chunk_size = int(chunk_size)
        self.lam = float(lam)
        if not self.lam >= 0:
            raise ValueError(f"lam must be >= 0, got {lam}.")
        self.A0 = None if A0 is None else np.ascontiguousarray(A0, dtype=self.dtype)
        if self.A0 is not None and (self.A0.ndim != 2 or self.A0.shape[1] != self.n_features):
            raise ValueError(f"A0 must have shape (k, {self.n_features}), got {np.shape(A0)}.")

    def _prepare(self, X1, X2):
        raise NotImplementedError

    def _device_cost_grad(self, A):
        raise NotImplementedError

    def __call__(self, A):
        A = np.asarray(A)
        flat = A.ndim == 1
        if flat:
            if A.size % self.n_features:
                raise ValueError(f"A has {A.size} entries, not a multiple of {self.n_features}.")
            A = A.reshape(-1, self.n_features)
        A, A0 = check_components(A, self.n_features, self.dtype, self.A0)
        xp = self.xp
        total, G = self._device_cost_grad(xp.asarray(A, device=self.device))
        both = to_numpy(xp.concat([xp.reshape(G, (-1,)), xp.reshape(total, (1,))]))  # one sync
        G = both[:-1].reshape(A.shape) / self.n_pairs
        J, G = add_penalty(float(both[-1]) / self.n_pairs, G, A, self.lam, A0)
        return self.dtype.type(J), (G.ravel() if flat else G)


class TSMLXPObjective(XPLinearObjective):
    """TSML with ``U = X1 + s X2`` (n, d) and ``S = X1^T X1 + X2^T X2`` (d, d) prepared: per
    call ``C = U A^T`` and ``C_hat^T U`` (two n x d x k GEMMs) and ``A S`` (k x d x d)."""

    def _prepare(self, X1, X2):
        xp, s = self.xp, self.labels
        self.U = X1 + s[:, None] * X2
        self.S = xp.zeros((self.n_features, self.n_features), dtype=X1.dtype, device=self.device)
        for start, stop in _chunks(self.n_pairs, self.chunk_size):
            x1, x2 = X1[start:stop, :], X2[start:stop, :]
            self.S += xp.matmul(x1.T, x1) + xp.matmul(x2.T, x2)

    def _device_cost_grad(self, A):
        xp = self.xp
        G = xp.matmul(A, self.S)  # (k, d): sum_i a_i x_i^T + b_i y_i^T
        total = 0.5 * xp.sum(A * G) + self.n_pairs  # 1/2 sum |a|^2 + |b|^2, + n ("+1" of eq. 4)
        for start, stop in _chunks(self.n_pairs, self.chunk_size):
            u = self.U[start:stop, :]
            C = xp.matmul(u, A.T)  # (m, k)
            norms = row_norms(xp, C)
            total = total - xp.sum(norms)
            C *= safe_inverse(xp, norms)[:, None]
            G = G - xp.matmul(C.T, u)
        return total, G


class CSMLXPObjective(XPLinearObjective):
    """CSML: ``P1 = X1 A^T``, ``P2 = X2 A^T``, the per-pair gradients, ``D1^T X1 + D2^T X2``
    (four n x d x k GEMMs, half of them n x ... each; as the NumPy objective)."""

    def _prepare(self, X1, X2):
        self.X1, self.X2 = X1, X2

    def _device_cost_grad(self, A):
        xp, s = self.xp, self.labels
        total, G = 0.0, xp.zeros_like(A)
        for start, stop in _chunks(self.n_pairs, self.chunk_size):
            x1, x2 = self.X1[start:stop, :], self.X2[start:stop, :]
            t, D1, D2 = csml_embedding_grad(xp, xp.matmul(x1, A.T), xp.matmul(x2, A.T),
                                            s[start:stop])
            total = total + t
            G = G + xp.matmul(D1.T, x1) + xp.matmul(D2.T, x2)
        return total, G


class DDMLXPObjective(XPLinearObjective):
    """DDML with ``D = X1 - X2`` (n, d) prepared: ``P = D A^T``, the weights, ``(w P)^T D``
    (two n x d x k GEMMs)."""

    def _prepare(self, X1, X2):
        self.D = X1 - X2
        self.T, self.tau = float(self.params.get("T", 10.0)), float(self.params.get("tau", 1.0))
        if not (np.isfinite(self.T) and self.T > 0) or not np.isfinite(self.tau):
            raise ValueError(f"T must be finite and > 0 and tau finite, got T={self.T}, "
                             f"tau={self.tau}.")

    def _device_cost_grad(self, A):
        xp, s = self.xp, self.labels
        total, G = 0.0, xp.zeros_like(A)
        for start, stop in _chunks(self.n_pairs, self.chunk_size):
            delta = self.D[start:stop, :]
            P = xp.matmul(delta, A.T)  # (m, k): a_i - b_i
            t, w = _ddml_weights(xp, P, s[start:stop], self.T, self.tau)
            total = total + t
            P *= w[:, None]
            G = G + xp.matmul(P.T, delta)
        return total, G


# -- index pairs: points on the device -----------------------------------------------------

def scatter_add_rows(xp, R, rows, values):
    """``R[rows[i]] += values[i]`` in place (duplicates summed); False if ``xp`` has no
    scatter-add (the array API has none: torch's ``index_add_``, CuPy's ``scatter_add``)."""
    name = getattr(xp, "__name__", "")
    if "torch" in name:
        R.index_add_(0, rows, values)
        return True
    if "cupy" in name:
        import cupyx

        cupyx.scatter_add(R, rows, values)
        return True
    return False


class XPIndexObjective(XPLinearObjective):
    """``f(A) -> (J, G)`` over index pairs into points (n_points, d) on the device.

    Per call: ``P = X A^T`` (one GEMM over the points); per chunk of pairs, gather
    ``a_i = P[p_i]``, ``b_i = P[q_i]``, the loss's per-pair gradients (``embedding_grad``)
    and their scatter onto ``R`` (n_points, k); then ``G = R^T X`` (one GEMM over the
    points). Without a scatter in ``xp``: ``G += dJ/da^T X[p] + dJ/db^T X[q]`` per chunk.

    Examples
    --------
    >>> import numpy as np
    >>> from array_api_compat import numpy as xnp  # NumPy as an array-API namespace
    >>> from metricfit.losses import ddml, xp_linear
    >>> rng = np.random.default_rng(0)
    >>> points = rng.normal(size=(6, 4))
    >>> index = np.array([[0, 1], [2, 3], [4, 5], [0, 5], [1, 2], [3, 4]])
    >>> s, A = np.array([1.0, 1, 1, -1, -1, -1]), rng.normal(size=(2, 4))
    >>> f = xp_linear.xp_index_objective(xnp, "ddml", points, index, s, T=10.0, tau=1.0)
    >>> J, G = f(A)
    >>> J_vec, G_vec = ddml.objective(points[index[:, 0]], points[index[:, 1]], s)(A)
    >>> bool(np.isclose(J, J_vec) and np.allclose(G, G_vec))
    True
    """

    def __init__(self, xp, points, index, s, embedding_grad, lam=0.0, A0=None,
                 chunk_size=XP_CHUNK_SIZE, validated=False, **params):
        if points.ndim != 2 or index.ndim != 2 or index.shape[1] != 2:
            raise ValueError(f"points must be (n_points, d) and index (n_pairs, 2), got "
                             f"{tuple(points.shape)} and {tuple(index.shape)}.")
        dtype = work_dtype(xp, points)
        points = xp.astype(points, dtype, copy=False)
        if not validated:
            check_xp_finite(xp, points, "points")
            if index.shape[0] and (bool(xp.any(index < 0))
                                   or bool(xp.any(index >= points.shape[0]))):
                raise ValueError(f"index holds rows outside 0..{points.shape[0] - 1}.")
        s = xp_labels(xp, s, index.shape[0], dtype, device_of(points))
        self._init_common(xp, points, s, points.shape[1], lam, A0, chunk_size)
        self.points, self.index = points, xp.astype(index, xp.int64, copy=False)
        self.embedding_grad, self.params = embedding_grad, params

    def _device_cost_grad(self, A):
        xp, X = self.xp, self.points
        P = xp.matmul(X, A.T)  # (n_points, k)
        R = xp.zeros_like(P)
        total, G = 0.0, xp.zeros_like(A)
        for start, stop in _chunks(self.n_pairs, self.chunk_size):
            p, q = self.index[start:stop, 0], self.index[start:stop, 1]
            t, Ga, Gb = self.embedding_grad(xp, xp.take(P, p, axis=0), xp.take(P, q, axis=0),
                                            self.labels[start:stop], **self.params)
            total = total + t
            if not (scatter_add_rows(xp, R, p, Ga) and scatter_add_rows(xp, R, q, Gb)):
                G = G + xp.matmul(Ga.T, xp.take(X, p, axis=0))
                G = G + xp.matmul(Gb.T, xp.take(X, q, axis=0))
        return total, G + xp.matmul(R.T, X)


XP_LOSSES = {"triangular": (TSMLXPObjective, tsml_embedding_grad),
             "cosine": (CSMLXPObjective, csml_embedding_grad),
             "ddml": (DDMLXPObjective, ddml_embedding_grad)}


def _loss_entry(loss):
    name = getattr(loss, "name", loss)
    if name not in XP_LOSSES:
        raise ValueError(f"loss {name!r} has no array-API objective; the device path covers "
                         f"{sorted(XP_LOSSES)} (and LDML). Pass NumPy arrays for the others.")
    return XP_LOSSES[name]


def xp_objective(xp, loss, X1, X2, s, lam=0.0, A0=None, chunk_size=XP_CHUNK_SIZE,
                 validated=False, **params):
    """The prepared objective of ``loss`` ('triangular', 'cosine', 'ddml' or its declared
    :class:`~metricfit.losses.PairLoss`) on device pairs; ``f(A) -> (J, G)`` on the host."""
    cls = _loss_entry(loss)[0]
    return cls(xp, X1, X2, s, lam=lam, A0=A0, chunk_size=chunk_size, validated=validated,
               **params)


def xp_index_objective(xp, loss, points, index, s, lam=0.0, A0=None, chunk_size=XP_CHUNK_SIZE,
                       validated=False, **params):
    """The objective of ``loss`` over index pairs into device ``points``; ``f(A) -> (J, G)``."""
    if "T" in params or "tau" in params:
        params = {"T": float(params.get("T", 10.0)), "tau": float(params.get("tau", 1.0))}
    return XPIndexObjective(xp, points, index, s, _loss_entry(loss)[1], lam=lam, A0=A0,
                            chunk_size=chunk_size, validated=validated, **params)
