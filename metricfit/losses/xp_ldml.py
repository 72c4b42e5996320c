r"""LDML's prepared objective (seed 001 eqs. 2-4) over an array namespace ``xp``.

The algebra of :mod:`metricfit.losses.ldml` (its docstring derives it, the sign of eq. 4
included), with ``D = X1 - X2`` (n, d) prepared on the device and ``theta = [M.ravel(), b]``
on the host, where the solvers work on it. One call: ``M`` (d d values) host -> device;
``DM = D M``, ``dist_i = <DM_i, D_i>``, ``v_i = s_i (dist_i - b)``, ``J_i = softplus(v_i)``,
``w_i = t_i - p_i = s_i sigma(v_i)``, ``G_M = (w D)^T D`` (two n x d x d GEMMs), then
``[G_M, sum_i J_i, sum_i w_i]`` device -> host in one transfer; the symmetrisation, the mean
and ``lam/2 |M|^2`` are done on the host as in the NumPy objective.

Index pairs into device points: ``XM = X M`` once per call (one GEMM over the points), per
pair ``dist_i = <XM_p - XM_q, X_p - X_q>`` (O(d)), ``w_i delta_i`` scattered onto R
(+ at p, - at q) and ``G_M = R^T X`` (torch / CuPy); without a scatter, ``(w delta)^T delta``
per chunk.
"""

import numpy as np

from .._array_api import device_of, to_numpy
from .ldml import _check_lam, _check_params, _finish, _symmetrise, unpack
from .xp_linear import (
    XP_CHUNK_SIZE,
    _chunks,
    _softplus_sigmoid,
    check_xp_finite,
    check_xp_pair_data,
    numpy_dtype,
    row_dots,
    scatter_add_rows,
    work_dtype,
    xp_labels,
)

__all__ = ["LDMLXPObjective", "LDMLXPIndexObjective", "xp_objective", "xp_index_objective",
           "xp_metric_distances"]


def _weights(xp, dist, s, b):
    """``(sum_i J_i, w_i)`` from the distances: ``J_i = softplus(s_i (dist_i - b))``,
    ``w_i = s_i sigma(s_i (dist_i - b))``."""
    softplus, sig = _softplus_sigmoid(xp, s * (dist - b))
    return xp.sum(softplus), s * sig


class LDMLXPObjective:
    """LDML ``f(theta) -> (J, g)`` on the host's flat ``theta = [M.ravel(), b]``, the pairs'
    differences ``D = X1 - X2`` prepared on the device of namespace ``xp``.

    Same cost and gradient as :class:`metricfit.losses.ldml.LDMLObjective` (to float
    rounding); ``g = [dJ/dM ravelled, dJ/db]`` in the data's NumPy dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from array_api_compat import numpy as xnp  # NumPy as an array-API namespace
    >>> from metricfit.losses import ldml, xp_ldml
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.normal(size=(2, 20, 4))
    >>> s = np.repeat([1.0, -1.0], 10)
    >>> f = xp_ldml.xp_objective(xnp, X1, X2, s, lam=0.1)
    >>> theta = rng.normal(size=f.n_params)
    >>> (J, g), (J_np, g_np) = f(theta), ldml.objective(X1, X2, s, lam=0.1)(theta)
    >>> bool(np.isclose(J, J_np) and np.allclose(g, g_np))
    True
    """

    def __init__(self, xp, X1, X2, s, lam=0.0, chunk_size=XP_CHUNK_SIZE, validated=False):
        X1, X2, s = check_xp_pair_data(xp, X1, X2, s, validated)
        self._init_common(xp, X1, s, X1.shape[1], lam, chunk_size)
        self.D = X1 - X2

    def _init_common(self, xp, X, s, d, lam, chunk_size):
        self.xp, self.device, self.dtype = xp, device_of(X), numpy_dtype(xp, X.dtype)
        self.lam = _check_lam(lam)
        self.labels, self.n_pairs, self.n_features = s, s.shape[0], int(d)
        self.n_params = self.n_features ** 2 + 1
        self.chunk_size = int(chunk_size)

    def __call__(self, theta):
        M, b = unpack(theta, self.n_features)
        M, b = _check_params(M, b, self.n_features, self.dtype)
        xp = self.xp
        total, GM, sum_w = self._device_cost_grad(xp.asarray(M, device=self.device), b)
        both = to_numpy(xp.concat([xp.reshape(GM, (-1,)), xp.reshape(total, (1,)),
                                   xp.reshape(sum_w, (1,))]))  # one transfer, one sync
        d = self.n_features
        GM = _symmetrise(np.array(both[:d * d].reshape(d, d)))
        J, GM, gb = _finish(float(both[-2]), GM, float(both[-1]), M, self.lam, self.n_pairs,
                            self.dtype)
        return J, np.concatenate([GM.ravel(), np.reshape(gb, 1)])

    def _device_cost_grad(self, M, b):
        xp, s = self.xp, self.labels
        total, sum_w, GM = 0.0, 0.0, xp.zeros_like(M)
        for start, stop in _chunks(self.n_pairs, self.chunk_size):
            delta = self.D[start:stop, :]
            DM = xp.matmul(delta, M)  # (m, d)
            t, w = _weights(xp, row_dots(xp, DM, delta), s[start:stop], b)
            total, sum_w = total + t, sum_w + xp.sum(w)
            GM = GM + xp.matmul((w[:, None] * delta).T, delta)  # sum_i w_i delta_i delta_i^T
        return total, GM, sum_w


class LDMLXPIndexObjective(LDMLXPObjective):
    """LDML over index pairs into device points (n_points, d): O(n_points d^2 + n_pairs d)
    per call with a scatter (torch, CuPy), as :class:`metricfit.losses.ldml.LDMLIndexObjective`.

    Examples
    --------
    >>> import numpy as np
    >>> from array_api_compat import numpy as xnp  # NumPy as an array-API namespace
    >>> from metricfit.losses import ldml, xp_ldml
    >>> rng = np.random.default_rng(0)
    >>> points = rng.normal(size=(6, 4))
    >>> index = np.array([[0, 1], [2, 3], [4, 5], [0, 5], [1, 2], [3, 4]])
    >>> s = np.array([1.0, 1, 1, -1, -1, -1])
    >>> f = xp_ldml.xp_index_objective(xnp, points, index, s, lam=0.1)
    >>> theta = rng.normal(size=f.n_params)
    >>> J, g = f(theta)
    >>> J_np, g_np = ldml.index_objective(points, index, s, lam=0.1)(theta)
    >>> bool(np.isclose(J, J_np) and np.allclose(g, g_np))
    True
    """

    def __init__(self, xp, points, index, s, lam=0.0, chunk_size=XP_CHUNK_SIZE, validated=False):
        if points.ndim != 2 or index.ndim != 2 or index.shape[1] != 2:
            raise ValueError(f"points must be (n_points, d) and index (n_pairs, 2), got "
                             f"{tuple(points.shape)} and {tuple(index.shape)}.")
        points = xp.astype(points, work_dtype(xp, points), copy=False)
        if not validated:
            check_xp_finite(xp, points, "points")
        s = xp_labels(xp, s, index.shape[0], points.dtype, device_of(points))
        self._init_common(xp, points, s, points.shape[1], lam, chunk_size)
        self.points, self.index = points, xp.astype(index, xp.int64, copy=False)

    def _device_cost_grad(self, M, b):
        xp, X, s = self.xp, self.points, self.labels
        XM = xp.matmul(X, M)  # (n_points, d)
        R = xp.zeros_like(X)
        total, sum_w, GM = 0.0, 0.0, xp.zeros_like(M)
        for start, stop in _chunks(self.n_pairs, self.chunk_size):
            p, q = self.index[start:stop, 0], self.index[start:stop, 1]
            delta = xp.take(X, p, axis=0) - xp.take(X, q, axis=0)
            dist = row_dots(xp, xp.take(XM, p, axis=0) - xp.take(XM, q, axis=0), delta)
            t, w = _weights(xp, dist, s[start:stop], b)
            total, sum_w = total + t, sum_w + xp.sum(w)
            wd = w[:, None] * delta
            if not (scatter_add_rows(xp, R, p, wd) and scatter_add_rows(xp, R, q, -wd)):
                GM = GM + xp.matmul(wd.T, delta)
        return total, GM + xp.matmul(R.T, X), sum_w


def xp_objective(xp, X1, X2, s, lam=0.0, chunk_size=XP_CHUNK_SIZE, validated=False):
    """LDML's prepared objective on device pairs; ``f(theta) -> (J, g)`` on the host."""
    return LDMLXPObjective(xp, X1, X2, s, lam=lam, chunk_size=chunk_size, validated=validated)


def xp_index_objective(xp, points, index, s, lam=0.0, chunk_size=XP_CHUNK_SIZE,
                       validated=False):
    """LDML's objective over index pairs into device ``points``."""
    return LDMLXPIndexObjective(xp, points, index, s, lam=lam, chunk_size=chunk_size,
                                validated=validated)


def xp_metric_distances(xp, M, X1, X2, chunk_size=XP_CHUNK_SIZE):
    """``delta_i^T M delta_i`` (n,) on the device, ``M`` a host (d, d) array."""
    M = xp.asarray(np.asarray(M), dtype=X1.dtype, device=device_of(X1))
    out = []
    for start, stop in _chunks(X1.shape[0], chunk_size):
        delta = X1[start:stop, :] - X2[start:stop, :]
        out.append(row_dots(xp, xp.matmul(delta, M), delta))
    return xp.concat(out) if out else xp.zeros((0,), dtype=X1.dtype, device=device_of(X1))
