r"""Discriminative Distance Metric Learning (DDML) cost and gradient.

Seed 004 (Zheng et al.), section 3.2, eqs. 5-7, with the margin generalised to ``tau`` (the
paper has ``tau = 1``). For a pair ``(x, y, s)``, ``a = A x``, ``b = A y``:

.. math::

    z_i = 1 - s_i\,(\tau - \|a_i - b_i\|^2)                                       (eq. 6)
    J_i = \tfrac12\, g(z_i), \qquad g(z) = \tfrac1T \log(1 + e^{T z})             (eq. 5)

A similar pair (``s = +1``) is pulled together (``z = ||a - b||^2 + 1 - tau``); a dissimilar
pair (``s = -1``) is pushed beyond ``||a - b||^2 = 1 + tau`` (``sqrt 2`` for ``tau = 1``). The
scores are distances: lower = more similar.

Derivation
----------
``g'(z) = sigma(T z)`` with ``sigma(t) = 1 / (1 + e^{-t})`` and
``dz_i/da_i = 2 s_i (a_i - b_i) = -dz_i/db_i``, so the ``1/2`` of eq. 5 cancels the 2 of
``d||a - b||^2``:

.. math::

    \frac{\partial J_i}{\partial a_i} = s_i\,\sigma(T z_i)\,(a_i - b_i)
        = -\frac{\partial J_i}{\partial b_i}.

For ``tau = 1``, ``T z_i = T(1 - s_i + s_i \|a_i - b_i\|^2)``, so this is eq. 7 as printed
(no factor 2 is missing there; the finite-difference tests confirm it). Through ``a = A x``,
with ``delta_i = x_i - y_i`` and ``a_i - b_i = A delta_i``, and over n pairs (eq. 8) with the
regulariser:

.. math::

    J = \frac1n \sum_i J_i + \frac\lambda2 \|A - A_0\|_F^2, \qquad
    \frac{\partial J}{\partial A} = \frac1n \sum_i s_i\,\sigma(T z_i)\,(A\delta_i)\,\delta_i^T
        + \lambda (A - A_0).

The cost depends on the data only through ``D = X1 - X2`` (n, d): one iteration is two
(n x d x k) GEMMs, ``P = D A^T`` and ``G = W^T D`` with ``W_i = s_i sigma(T z_i) P_i``, and a
fused numba kernel in between that turns P into W in place. That is the bound the prepared
objective attains; the generic composition (``embedding_cost_grad``, ``batch``) needs four.

Numerical stability
-------------------
``log(1 + e^t) = max(t, 0) + log1p(e^{-|t|})`` and the sigmoid is evaluated through
``e^{-|t|}``, so neither overflows for any ``T z``: for ``T z -> +inf``, ``J_i -> z_i / 2``
and the weight -> ``s_i``; for ``T z -> -inf`` both -> 0. Accumulators are float64 for
float32 data.
"""

import math

import numpy as np
from numba import njit, prange

from ..pairs.rows import squared_distances
from ._index import IndexPairObjective
from ._linear import (
    CHUNK_SIZE,
    PreparedObjective,
    check_components,
    check_pair_data,
)
from ._linear import embedding_cost_grad as _embedding_cost_grad
from ._rows import (
    CHECKED_WEIGHT,
    IndexRows,
    PairKernel,
    ordered_sum,
    row_sumsq,
    run_rows,
    tiny,
)
from ._scratch import add_product, product
from ._simd_rows import pair_sumsq
from ._spec import LinearPath, PairLoss
from .penalty import add_penalty

__all__ = ["cost_grad", "objective", "index_objective", "embedding_cost_grad", "pair_score",
           "DEFAULTS"]


@njit(cache=True)
def _softplus_sigmoid(t):  # pragma: no cover (compiled)
    """(log(1 + e^t), 1 / (1 + e^-t)) without overflow, in float64."""
    e = math.exp(-abs(t))  # in (0, 1]
    sp = max(t, 0.0) + math.log1p(e)
    sig = 1.0 / (1.0 + e) if t >= 0.0 else e / (1.0 + e)
    return sp, sig


@njit(cache=True, nogil=True)
def _delta_rows(P, s, T, tau, tiny, out, lo, hi):  # pragma: no cover (compiled)
    """Rows lo..hi-1 of P: p_i = A delta_i -> s_i sigma(T z_i) p_i in place, ``out[i] = J_i``.

    z_i = 1 - s_i (tau - |p_i|^2) and J_i = 1/2 g(z_i) (seed 004 eqs. 5-6). Entries below
    ``tiny`` in magnitude are written as 0 (no subnormal into the GEMM, module docstring of
    :mod:`metricfit.losses._rows`).
    """
    k = P.shape[1]
    for i in range(lo, hi):
        dd = row_sumsq(P, i)  # float64, vector lanes in a fixed order
        si = np.float64(s[i])
        sp, sig = _softplus_sigmoid(T * (1.0 - si * (tau - dd)))
        out[i] = 0.5 * sp / T
        w = si * sig
        for j in range(k):
            g = w * P[i, j]
            P[i, j] = g if abs(g) >= tiny else 0.0


@njit(cache=True, nogil=True, parallel=True)
def _delta_rows_parallel(P, s, T, tau, tiny, out, n_rows, block):  # pragma: no cover
    """:func:`_delta_rows` block by block on numba's threads (``_rows.run_rows``)."""
    for t in prange(-(-n_rows // block)):
        _delta_rows(P, s, T, tau, tiny, out, t * block, min(n_rows, t * block + block))


@njit(cache=True, nogil=True, inline="always")
def _cost_and_weight(X, i, Y, j, si, T, tau):  # pragma: no cover (compiled)
    """``(J, s sigma(T z))`` of one pair from its rows ``a = X[i]``, ``b = Y[j]``: ``|a -
    b|^2`` in float64 on vector lanes in a fixed order (:mod:`metricfit.losses._simd_rows`;
    each difference in float64)."""
    dd = pair_sumsq(X, i, Y, j, -1.0)
    si = np.float64(si)
    sp, sig = _softplus_sigmoid(T * (1.0 - si * (tau - dd)))
    return 0.5 * sp / T, si * sig


@njit(cache=True, nogil=True)
def _grad_rows(P1, P2, s, T, tau, out, lo, hi):  # pragma: no cover (compiled)
    """Rows lo..hi-1: a_i, b_i -> dJ_i/da_i = s_i sigma(T z_i)(a_i - b_i) = -dJ_i/db_i in
    place, ``out[i] = J_i``; entries below the smallest normal number of P1's dtype in
    magnitude are written as 0 (the rule of :func:`_delta_rows`: a gradient deep in the
    sigmoid's tail would put float32 subnormals into the products after it)."""
    k = P1.shape[1]
    smallest = np.finfo(P1.dtype).tiny
    for i in range(lo, hi):
        out[i], w = _cost_and_weight(P1, i, P2, i, s[i], T, tau)
        checked = 0.0 < abs(w) < CHECKED_WEIGHT
        for j in range(k):
            g = w * (np.float64(P1[i, j]) - np.float64(P2[i, j]))
            if checked and abs(g) < smallest:
                g = 0.0
            P1[i, j] = g
            P2[i, j] = -g


@njit(cache=True, nogil=True, parallel=True)
def _grad_rows_parallel(P1, P2, s, T, tau, out, n_rows, block):  # pragma: no cover
    """:func:`_grad_rows` block by block on numba's threads (``_rows.run_rows``)."""
    for t in prange(-(-n_rows // block)):
        _grad_rows(P1, P2, s, T, tau, out, t * block, min(n_rows, t * block + block))


@njit(cache=True, nogil=True)
def _index_pair_rows(E, first, second, s, T, tau, out, W, lo, hi):  # pragma: no cover
    """Index pairs lo..hi-1, ``a_i = E[first[i]]``, ``b_i = E[second[i]]`` read in place:
    ``out[i] = J_i`` and ``W[i, 0] = s_i sigma(T z_i)``, as :func:`_grad_rows` computes
    them (same bits)."""
    for i in range(lo, hi):
        out[i], W[i, 0] = _cost_and_weight(E, first[i], E, second[i], s[i], T, tau)


@njit(cache=True, nogil=True, parallel=True)
def _index_pair_rows_parallel(E, first, second, s, T, tau, out, W, n_rows,
                              block):  # pragma: no cover
    """:func:`_index_pair_rows` block by block on numba's threads (``_rows.run_rows``)."""
    for t in prange(-(-n_rows // block)):
        hi = min(n_rows, t * block + block)
        _index_pair_rows(E, first, second, s, T, tau, out, W, t * block, hi)


@njit(cache=True, nogil=True)
def _index_side_rows(E, first, second, s, W, R, order, lo, hi):  # pragma: no cover (compiled)
    """``R[p_i] += w_i (a_i - b_i)`` (side 2i) and ``R[q_i] += -(w_i (a_i - b_i))`` (side 2i +
    1) for the sides ``order[lo:hi]`` in that order: :func:`_grad_rows`'s expressions,
    rounded to R's dtype as its in-place rows were, subnormal terms as 0 (same bits)."""
    g = np.empty_like(R[0])
    smallest = np.finfo(R.dtype).tiny
    for t in range(lo, hi):
        e = order[t]
        i = e // 2
        p, q, w = first[i], second[i], W[i, 0]
        for j in range(g.shape[0]):
            g[j] = w * (np.float64(E[p, j]) - np.float64(E[q, j]))
        if 0.0 < abs(w) < CHECKED_WEIGHT:  # a term may be subnormal (in float64: g rounds)
            for j in range(g.shape[0]):
                if abs(w * (np.float64(E[p, j]) - np.float64(E[q, j]))) < smallest:
                    g[j] = 0.0
        if e % 2 == 0:
            for j in range(g.shape[0]):
                R[p, j] += g[j]
        else:
            for j in range(g.shape[0]):
                R[q, j] += -g[j]


@njit(cache=True, nogil=True, parallel=True)
def _index_side_rows_parallel(E, first, second, s, W, R, order, cuts):  # pragma: no cover
    """:func:`_index_side_rows` run by run of sides (``cuts``) on numba's threads."""
    for t in prange(cuts.shape[0] - 1):
        _index_side_rows(E, first, second, s, W, R, order, cuts[t], cuts[t + 1])


def _delta_grad_inplace(P, s, T, tau):
    """Every row p_i of P -> s_i sigma(T z_i) p_i on every core; return sum_i J_i (in pair
    order)."""
    out = np.empty(P.shape[0])
    run_rows(_delta_rows, P.shape[0], P.shape[1], P, s, T, tau, tiny(P.dtype), out,
             driver=_delta_rows_parallel)
    return ordered_sum(out)


def _check_hyper(T, tau, lam=0.0):
    T, tau, lam = float(T), float(tau), float(lam)
    if not (np.isfinite(T) and T > 0):
        raise ValueError(f"T must be a finite number > 0, got {T}.")
    if not np.isfinite(tau):
        raise ValueError(f"tau must be finite, got {tau}.")
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam}.")
    return T, tau, lam


def _bind(T, tau):
    """The embedding kernel with T and tau bound: ``kernel(P1, P2, s) -> sum_i J_i``, on
    every core (:class:`metricfit.losses._rows.PairKernel`)."""
    return PairKernel(_grad_rows, T, tau,
                      index=IndexRows(_index_pair_rows, _index_side_rows, 1,
                                      _index_pair_rows_parallel, _index_side_rows_parallel),
                      driver=_grad_rows_parallel)


def _delta_cost_grad(A, X1, X2, s, T, tau, chunk_size, D=None, scratch=None):
    """sum_i J_i and sum_i dJ_i/dA from the differences delta_i (no regulariser).

    ``D`` (n, d) = X1 - X2 if prepared; otherwise each chunk's differences are formed on the
    fly. ``scratch``: the products' arrays, kept between calls (:mod:`._scratch`).
    """
    total = 0.0
    G = None  # (k, d), a new array
    n = X1.shape[0] if D is None else D.shape[0]
    for start in range(0, n, chunk_size):
        stop = start + chunk_size
        delta = X1[start:stop] - X2[start:stop] if D is None else D[start:stop]  # (m, d)
        P = product(delta, A.T, scratch, "P")  # (m, k): a_i - b_i
        total += _delta_grad_inplace(P, s[start:stop], T, tau)
        G = add_product(G, P.T, delta, scratch)
    return total, (np.zeros_like(A) if G is None else G)


def embedding_cost_grad(a, b, s, T=10.0, tau=1.0, validated=False):
    """Mean DDML loss on embeddings ``(a, b)`` (n, k) and its gradients ``(J, dJ/da, dJ/db)``.

    Eqs. 5-7 of seed 004, averaged over the pairs (no regulariser, no mapping):
    ``dJ/da_i = s_i sigma(T z_i)(a_i - b_i) / n = -dJ/db_i``.

    References
    ----------
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """
    T, tau, _ = _check_hyper(T, tau)
    return _embedding_cost_grad(_bind(T, tau), a, b, s, validated)


def cost_grad(A, X1, X2, s, lam=0.0, A0=None, T=10.0, tau=1.0, chunk_size=CHUNK_SIZE):
    """DDML cost and gradient (seed 004 eqs. 5-8 plus ``lam/2 ||A - A0||^2``), stateless.

    Uses the difference trick chunk by chunk: each chunk forms ``delta = x - y`` and needs two
    GEMMs (``P = delta A^T``, ``P_w^T delta``). :func:`objective` forms ``D = X1 - X2`` once.

    Parameters
    ----------
    A : ndarray of shape (k, d)
    X1, X2 : ndarray of shape (n_pairs, d)
        First and second vector of each pair.
    s : ndarray of shape (n_pairs,)
        +1 similar, -1 dissimilar ({0, 1} also accepted, 1 = similar).
    lam : float, default=0.0
    A0 : ndarray of shape (k, d), default=None (zeros)
    T : float, default=10.0
        Sharpness of the generalised logistic loss g (> 0).
    tau : float, default=1.0
        Margin of eq. 6 (the paper's 1).
    chunk_size : int, default=8192
        Pairs per chunk: temporaries are O(chunk_size * (k + d) + k * d).

    Returns
    -------
    J : float (the data dtype)
    G : ndarray of shape (k, d), the data dtype

    References
    ----------
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """
    X1, X2, s = check_pair_data(X1, X2, s)
    T, tau, lam = _check_hyper(T, tau, lam)
    A, A0 = check_components(A, X1.shape[1], X1.dtype, A0)
    total, G = _delta_cost_grad(A, X1, X2, s, T, tau, int(chunk_size))
    n = X1.shape[0]
    G /= n
    J, G = add_penalty(total / n, G, A, lam, A0)
    return X1.dtype.type(J), G


class DDMLObjective(PreparedObjective):
    """DDML ``f(A) -> (J, G)`` with ``D = X1 - X2`` (n, d) prepared.

    Per call: ``P = D A^T`` and ``P_w^T D`` (two n x d x k GEMMs) with the fused kernel in
    between. ``batch`` uses the generic composition with the embedding kernel (T, tau bound).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X1, X2 = rng.normal(size=(2, 20, 4))  # 20 pairs of 4-d vectors
    >>> s = np.repeat([1, -1], 10)
    >>> A = rng.normal(size=(2, 4))
    >>> from metricfit.losses import ddml
    >>> f = ddml.DDMLObjective(X1, X2, s, lam=0.1, T=10.0, tau=1.0)
    >>> J, G = f(A)
    >>> def central(f, A, h=1e-6):  # central differences of J, entry by entry
    ...     E = h * np.eye(A.size).reshape((A.size,) + A.shape)
    ...     return np.array([f(A + e)[0] - f(A - e)[0] for e in E]).reshape(A.shape) / (2 * h)
    >>> bool(np.allclose(G, central(f, A), atol=1e-6))
    True
    >>> bool(np.allclose(G, ddml.cost_grad(A, X1, X2, s, lam=0.1)[1]))
    True
    >>> J_all, G_all = f.batch(A, np.arange(20))  # the generic composition, every pair
    >>> bool(np.isclose(J_all, J) and np.allclose(G_all, G))
    True

    At ``A = 0``, ``z = 0`` for a similar pair and 2 for a dissimilar one (eq. 6):

    >>> J0 = f(np.zeros((2, 4)))[0]
    >>> bool(np.isclose(J0, (np.log(2) + np.log1p(np.exp(20))) / 40))
    True
    """

    def __init__(self, X1, X2, s, lam=0.0, A0=None, T=10.0, tau=1.0, chunk_size=CHUNK_SIZE,
                 validated=False):
        X1, X2, s = check_pair_data(X1, X2, s, validated)
        self.T, self.tau, _ = _check_hyper(T, tau)
        super().__init__(X1, X2, s, lam, A0, chunk_size)
        self._embedding_kernel = _bind(self.T, self.tau)
        self.D = X1 - X2  # (n, d)

    def _data_cost_grad(self, A):
        return _delta_cost_grad(A, self.X1, self.X2, self.labels, self.T, self.tau,
                                self.chunk_size, D=self.D, scratch=self._scratch)


def objective(X1, X2, s, lam=0.0, A0=None, T=10.0, tau=1.0, chunk_size=CHUNK_SIZE,
              validated=False):
    """Prepare the DDML objective once per data set; return ``f(A) -> (J, G)``.

    Same cost and gradient as :func:`cost_grad` (a test ties them). ``f`` accepts ``A`` as
    (k, d) or flat, as scipy's ``jac=True`` needs, and has the batch protocol.
    """
    return DDMLObjective(X1, X2, s, lam=lam, A0=A0, T=T, tau=tau, chunk_size=chunk_size,
                         validated=validated)


def index_objective(points, index, s, lam=0.0, A0=None, T=10.0, tau=1.0, chunk_size=CHUNK_SIZE,
                    validated=False):
    """The DDML objective over index pairs into ``points``; return ``f(A) -> (J, G)``.

    ``x - y`` is no longer formed: ``a_i - b_i = P[p_i] - P[q_i]`` with ``P = X A^T``
    projected once per call, and ``s_i sigma(T z_i)(a_i - b_i)`` is scattered back onto both
    points with opposite signs (:mod:`metricfit.losses._index`).
    """
    T, tau, _ = _check_hyper(T, tau)
    return IndexPairObjective(points, index, s, _bind(T, tau), lam=lam,
                              A0=A0, chunk_size=chunk_size, validated=validated)


DEFAULTS = {"T": 10.0, "tau": 1.0}


def pair_score(a, b, T=10.0, tau=1.0):
    """Minus the squared distance ``-|a - b|^2`` (seed 004's ``(a - b)^2``; higher = more
    similar).

    References
    ----------
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """
    return -squared_distances(a, b)


SPEC = PairLoss("ddml", embedding_cost_grad, pair_score, score_kind="distance",
                defaults=DEFAULTS, linear=LinearPath(cost_grad, objective, index_objective),
                checks_input=True)
