r"""One EM iteration of the two-covariance PLDA, batched by class size, over any array namespace.

The posterior of a class centre depends on the class only through its count n and its
(centred) mean m (:mod:`.plda`, eq. 1): with ``S_n = B + W / n``,

.. math::

    C_n = (B^{-1} + n W^{-1})^{-1} = A_n W / n, \qquad w_c = A_n m_c, \qquad
    A_n = B S_n^{-1},

(``C_n = B S_n^{-1} (W / n)`` from ``B^{-1} + n W^{-1} = B^{-1} S_n n W^{-1}``). The classes
sharing a count n (c_n of them) therefore enter the M-step only through the scatter of their
means, ``M_n = sum_{n_c = n} m_c m_c^T`` (d x d, computed once before EM)::

    sum_c (C_n + w_c w_c^T)                  = c_n C_n + A_n M_n A_n^T
    sum_c n (C_n + (m_c - w_c)(m_c - w_c)^T) = n c_n C_n + n (M_n - P - P^T + P A_n^T),

with ``P = A_n M_n``. A group costs a few d x d products per iteration (about 9 d^3 flops on
NumPy: a Cholesky factorisation of S_n and the inverse from it, :func:`inverse_and_logdet`,
then four GEMMs), whatever its number of classes, where the per-class form
costs three (c_n, d) x (d, d) GEMMs. Its terms of eq. (2) are
``-1/2 [c_n (log|S_n| + d log 2 pi) + tr(S_n^-1 M_n)]``, and the within part
``-1/2 (N - C)(log|W| + d log 2 pi) - 1/2 tr(W^-1 S_off)`` comes from one more factorisation.

:func:`grouped_terms` works on any array-API namespace ``xp`` (NumPy, torch, CuPy,
array_api_strict) with d x d arrays in float64: no eigendecomposition is needed. Groups with
fewer classes than dimensions are cheaper per class, in the diagonalising basis
(:func:`metricfit.backend.plda.fit_two_covariance` takes them there on the NumPy path).

Threads: on several package threads the factorisations of an iteration (every group's S_n,
and W for the likelihood) run side by side on the pool, LAPACK without the GIL
(:func:`factorisations`, from d = :data:`TOGETHER_MIN_DIM`); the GEMMs then run on BLAS's
threads, and the element-wise M-step work is two single-pass numba kernels
(:func:`._symmetric_kernels.add_group_sums`, :func:`symmetric_means`) with the NumPy
expressions' operations. Every result is the same bits on any thread count (BLAS's own
rounding aside).
"""

from dataclasses import dataclass

import numpy as np

from ..parallel import blas_threads, get_threads, map_blocks
from ._nogil_lapack import cholesky_inverse, gil_free
from ._symmetric_kernels import add_group_sums, mirror_upper, symmetric_mean

__all__ = ["EMGroups", "grouped_terms", "within_log_likelihood", "group_by_count",
           "factorisations", "factorised_together", "symmetric_means"]

LOG_2PI = float(np.log(2 * np.pi))
_NONE = np.empty((0, 0))
#: The smallest d whose factorisations run side by side. Two factorisations and inverses on
#: the 2-core machine, 1 / 2 threads (``factorisations``, median of 300): d = 64 0.11 / 0.19
#: ms, 96 0.22 / 0.25, 128 0.44 / 0.40, 192 1.11 / 0.71, 256 2.59 / 1.44: below about 120
#: the pool's hand-off costs more than the second thread gives.
TOGETHER_MIN_DIM = 128


@dataclass
class EMGroups:
    """The statistics EM reads for classes batched by count: ``(n, c_n, M_n)`` per group,
    the total count N and number of classes C (all groups, batched or not), the offset
    scatter S_off and the identity I (d x d, in the namespace and device of the arrays).

    Examples
    --------
    Three classes of 2 samples batched into one group: the likelihood of (B, W) = (I, I)
    from the group equals the per-class sum ``-1/2 sum_c [log|S| + d log 2 pi + m^T S^-1 m]``
    with ``S = I + I / 2``:

    >>> import numpy as np
    >>> from metricfit.backend.plda_em import EMGroups, group_by_count, grouped_terms
    >>> means = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    >>> groups, rest = group_by_count(np.array([2.0, 2.0, 2.0]), means, min_classes=1)
    >>> stats = EMGroups(groups, N=6.0, C=3, scatter=np.eye(2), eye=np.eye(2))
    >>> ll = grouped_terms(np, np.eye(2), np.eye(2), stats, terms=False)[2]
    >>> direct = -0.5 * sum(2 * np.log(1.5) + 2 * np.log(2 * np.pi) + m @ m / 1.5
    ...                     for m in means)
    >>> bool(np.isclose(ll, direct)), rest.size
    (True, 0)
    """

    groups: list
    N: float
    C: int
    scatter: object
    eye: object


def group_by_count(counts, means, min_classes):
    """Split classes (NumPy counts (C,), means (C, d)) by count: ``(groups, rest)`` with
    ``groups`` a list of ``(n, c_n, M_n)`` for counts shared by at least ``min_classes``
    classes and ``rest`` the indices (sorted) of the other classes."""
    sizes, inverse, shared = np.unique(counts, return_inverse=True, return_counts=True)
    groups, rest = [], []
    for j, n in enumerate(sizes):
        members = np.flatnonzero(inverse == j)
        if shared[j] >= min_classes:
            M = means[members]
            groups.append((float(n), int(shared[j]), M.T @ M))
        else:
            rest.append(members)
    rest = np.sort(np.concatenate(rest)) if rest else np.empty(0, dtype=np.intp)
    return groups, rest


def _not_positive_definite():
    return np.linalg.LinAlgError("a covariance of the PLDA model is not positive definite")


def _logdet(xp, S):
    sign, logdet = xp.linalg.slogdet(S)[:2]
    if not float(sign) > 0:
        raise _not_positive_definite()
    return logdet


def inverse_and_logdet(xp, S, eye):
    """``(S^-1, log|S|)`` of a symmetric positive definite S (LinAlgError otherwise); ``eye``
    the identity of S's size, namespace and device.

    NumPy: one Cholesky factorisation ``S = L L^T`` (LAPACK ``potrf``), ``S^-1`` from it
    (``potri``, which sets the lower triangle; :func:`._symmetric_kernels.mirror_upper` copies
    it onto the upper one) and ``log|S| = 2 sum_i log L_ii``, with the GIL released
    (:mod:`._nogil_lapack`). Other namespaces: ``solve(S, eye)`` and ``slogdet``.
    """
    if xp is not np:
        return xp.linalg.solve(S, eye), _logdet(xp, S)
    inverse, logdet, info = cholesky_inverse(S)  # Fortran order, the inverse's lower triangle
    if info != 0:
        raise _not_positive_definite()
    # inverse.T is C-ordered (no copy) with the inverse in its upper triangle
    return mirror_upper(inverse.T), logdet


def factorised_together(n_matrices, d):
    """Whether :func:`factorisations` runs ``n_matrices`` NumPy factorisations of size d side
    by side: at least two of them, of size :data:`TOGETHER_MIN_DIM` or more, two package
    threads, and LAPACK without the GIL."""
    return (n_matrices >= 2 and d >= TOGETHER_MIN_DIM and get_threads() >= 2
            and gil_free())


def _factor_terms(xp, S, companion, eye):
    """``(S^-1, log|S|, tr(S^-1 X))`` with X = ``companion`` (both symmetric)."""
    S_inv, logdet = inverse_and_logdet(xp, S, eye)
    return S_inv, logdet, xp.sum(S_inv * companion)


def _group_products(B, W, S_inv, M):
    """``A = B S_n^-1`` (``w_c = A m_c``) and the products a group's M-step sums read:
    ``(A W, P = A M, P A^T)``."""
    A = B @ S_inv
    P = A @ M
    return A @ W, P, P @ A.T


def factorisations(xp, B, W, stats, within=False, also=None, products=False):
    """Each batched group's ``(S_n^-1, log|S_n|, tr(S_n^-1 M_n), products)``, ``S_n = B + W /
    n``, in order (``products``: :func:`_group_products` where asked for, else None); with
    ``within``, W's ``(W^-1, log|W|, tr(W^-1 S_off))`` after them; with ``also`` (a
    callable), its result last.

    NumPy on several package threads (:func:`factorised_together`): a matrix a task on the
    pool (its ``S_n``, its factorisation, which releases the GIL (:mod:`._nogil_lapack`), its
    trace and its products), and ``also`` one more, started first, BLAS on one thread inside,
    so the groups' ``S_n`` and W are factorised side by side. Each result is the same bits as
    on one thread with BLAS on one thread.
    """
    jobs = [(n, M) for n, _, M in stats.groups] + ([(None, stats.scatter)] if within else [])
    jobs += [also] if also is not None else []

    def job(unit):
        if callable(jobs[unit.start]):
            return jobs[unit.start]()
        n, companion = jobs[unit.start]
        if n is None:
            return _factor_terms(xp, W, companion, stats.eye)
        S_inv, logdet, trace = _factor_terms(xp, B + W / n, companion, stats.eye)
        return S_inv, logdet, trace, _group_products(B, W, S_inv, companion) if products \
            else None

    if xp is not np or not factorised_together(len(jobs), B.shape[0]):
        return [job(slice(i, i + 1)) for i in range(len(jobs))]
    if also is not None:  # the longest task (an eigenproblem) starts first
        jobs.insert(0, jobs.pop())
    with blas_threads(1):
        results = map_blocks(job, len(jobs), 1)
    return results[1:] + results[:1] if also is not None else results


def within_log_likelihood(xp, W, stats, factor=None):
    """``-1/2 [(N - C)(log|W| + d log 2 pi) + tr(W^-1 S_off)]`` (eq. 2's within part);
    ``factor``: W's ``(W^-1, log|W|, tr(W^-1 S_off))`` where already computed."""
    d = W.shape[0]
    _, logdet_W, spread = factor or _factor_terms(xp, W, stats.scatter, stats.eye)
    return -0.5 * ((stats.N - stats.C) * (logdet_W + d * LOG_2PI) + spread)


def symmetric_means(between, C, scatter, within, N):
    """The M-step's ``(sym(between) / C, sym(scatter + within) / N)``, ``sym(T) = (T + T^T)
    / 2`` (:func:`._symmetric_kernels.symmetric_mean`: the same bits as NumPy's
    ``0.5 * (T + T.T) / C``)."""
    new_B, new_W = np.empty_like(between), np.empty_like(within)
    symmetric_mean(between, _NONE, float(C), new_B)
    symmetric_mean(scatter, within, float(N), new_W)
    return new_B, new_W


def grouped_terms(xp, B, W, stats, terms=True, factors=None):
    """The batched groups' M-step sums ``(between, within)`` (d x d, or None with
    ``terms=False``) and their part of eq. (2)'s log-likelihood at (B, W); ``factors``: the
    groups' ``(S_n^-1, log|S_n|, tr(S_n^-1 M_n), products)`` where already computed
    (:func:`factorisations`)."""
    d = B.shape[0]
    between = within = None
    ll = 0.0
    if factors is None:
        factors = factorisations(xp, B, W, stats)
    for (n, c, M), (S_inv, logdet_S, trace, products) in zip(stats.groups, factors,
                                                             strict=True):
        ll = ll - 0.5 * (c * (logdet_S + d * LOG_2PI) + trace)
        if not terms:
            continue
        if xp is np:  # the same sums in one pass (:func:`._symmetric_kernels.add_group_sums`)
            first = between is None
            if first:
                between, within = np.empty_like(B), np.empty_like(B)
            AW, P, AMA = products or _group_products(B, W, S_inv, M)
            add_group_sums(AW, P, AMA, M, n, float(c), float(n * c), between, within, first)
            continue
        A = B @ S_inv  # w_c = A m_c
        Cn = (A @ W) / n  # posterior covariance of the centre
        P = A @ M
        AMA = P @ A.T
        b = c * Cn + AMA
        w = (n * c) * Cn + n * (M - P - P.T + AMA)
        between = b if between is None else between + b
        within = w if within is None else within + w
    return between, within, ll
