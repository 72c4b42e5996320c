r"""Gaussian PLDA: the two-covariance model and the simplified (rank-limited) model, by EM.

The model (Ioffe 2006; Prince and Elder 2007; Brümmer and de Villiers 2010, "two-covariance")
draws a class (identity) centre and its samples::

    y_c ~ N(mu, B),        x_ij | y_c ~ N(y_c, W),

with between-class covariance B and within-class covariance W. The *simplified* PLDA limits
the identity variability to a q-dimensional subspace, ``B = V V^T`` with V (d, q).

**Sufficient statistics**

For a class of n samples with mean m (centred on mu), the likelihood factorises into the
within-class offsets ``x_ij - m``, distributed alike under every hypothesis about the class,
and the mean::

    m ~ N(0, B + W / n).                                                       (1)

Everything below works on the class means, their counts and one d x d scatter of the
offsets, ``S_off = sum_ij (x_ij - m_c)(x_ij - m_c)^T`` (one O(n d^2) GEMM, computed once).

**EM for the two-covariance model** (Kaldi, ``ivector/plda.cc``, ``PldaEstimator``)

Write m = x + e with x ~ N(0, B) (the class centre) and e ~ N(0, W / n). The posterior of x
is Gaussian with covariance ``C_n = (B^-1 + n W^-1)^-1`` and mean ``w = C_n n W^-1 m``. The
M-step (Kaldi ``GetStatsFromClassMeans`` / ``EstimateFromStats``)::

    B <- (1 / n_classes) sum_c (C_n + w_c w_c^T)
    W <- (1 / N) [S_off + sum_c n_c (C_n + (m_c - w_c)(m_c - w_c)^T)]

The posterior depends on a class only through its count and mean. Classes that share a count
with at least d others are batched (:mod:`.plda_em`): their means enter only through the
scatter ``M_n = sum m_c m_c^T`` of the group (one GEMM before EM), and an iteration costs a
few d x d products per distinct count (one Cholesky factorisation, four GEMMs), independent of
the number of classes. The remaining classes (rare counts) are run in the basis T that
diagonalises both covariances (``T W T^T = I``, ``T B T^T = diag(psi)``; one d x d
generalised eigenproblem): there ``C_n = diag(psi / (1 + n psi))`` is elementwise for every
n, and the two sums of outer products are two (n_rest, d) GEMMs. The data enter once
through S_off and the class means (O(n d^2), :mod:`.class_stats`). No n x n array is formed.
Initialisation and iteration count are Kaldi's: ``W = B = I`` and 10 iterations
(``PldaEstimationConfig::num_em_iters``). The mean mu is the mean of the class means
(Kaldi ``GetOutput``), held fixed.

The log-likelihood (up to a constant in the counts) is Kaldi's ``ComputeObjf``::

    L = -1/2 [(N - n_classes)(log|W| + d log 2 pi) + tr(W^-1 S_off)]
        -1/2 sum_c [log|B + W/n_c| + d log 2 pi + m_c^T (B + W/n_c)^-1 m_c]     (2)

**EM for the simplified PLDA (Prince and Elder 2007)**

Latent ``h_c ~ N(0, I_q)``, ``x_ij = mu + V h_c + eps``, ``eps ~ N(0, W)``. With ``f_c =
n_c m_c`` (centred sums), ``P = W^-1``, the posterior of h_c has precision ``L_n = I + n V^T P
V`` and mean ``E h_c = L_n^-1 V^T P f_c``; with ``R = sum_c n_c (L_n^-1 + E h_c E h_c^T)`` and
``G = sum_c f_c E h_c^T``::

    V <- G R^-1,      W <- (1 / N) [S_tot - V G^T],     S_tot = S_off + sum_c n_c m_c m_c^T.

Per iteration O(n_classes d q + d^3 + q^3 per distinct class size).
Initialisation: V from the top q eigenpairs of the between-class scatter, W = I.

**The log-likelihood ratio (closed form)**

In the basis T (``u = T (x - mu)``), dimensions are independent: the class centre has
variance psi_k, a sample variance 1. An enrolment mean a of n samples and a test mean b of m
samples have, under "same identity", covariance ``[[p + 1/n, p], [p, p + 1/m]]`` and under
"different" ``diag(p + 1/n, p + 1/m)`` (p = psi_k); with ``s = p + 1/n``, ``t = p + 1/m``,
``D = s t - p^2``::

    LLR = sum_k  -1/2 log(D / (s t)) - 1/2 [(t a^2 - 2 p a b + s b^2) / D - a^2 / s - b^2 / t]

(n = m = 1 is Kaldi's ``Plda::LogLikelihoodRatio`` for one enrolment utterance; general n, m
is the N-vs-M multi-enrolment score). Directions with psi_k = 0 contribute exactly 0.

:class:`PLDAScorer` holds psi and gives this LLR for pairs of rows and, as one GEMM, for every
row of one set against every row of another (the cohort scores of score normalisation): the
one home of the LLR, as Kaldi's ``Plda`` object.
"""

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from .._validation import user_stacklevel
from ..parallel import blas_threads, get_threads
from ._nogil_lapack import generalized_eigh
from .class_stats import class_means, class_statistics, offset_scatter
from .plda_em import (
    EMGroups,
    factorisations,
    factorised_together,
    group_by_count,
    grouped_terms,
    symmetric_means,
    within_log_likelihood,
)

__all__ = ["SINGULAR_RATIO", "singular_within_message", "warn_if_singular_within",
           "class_statistics", "class_means", "offset_scatter", "fit_two_covariance",
           "fit_simplified", "converged", "log_likelihood", "plda_basis", "llr", "PLDAScorer",
           "plda_scorer", "KALDI_N_ITER"]

#: Kaldi's default number of EM iterations (``PldaEstimationConfig::num_em_iters``).
KALDI_N_ITER = 10
LOG_2PI = np.log(2 * np.pi)
#: Eigenproblems up to this size run on one BLAS thread: their tridiagonal reduction is a
#: sequence of small BLAS-2 calls for which OpenBLAS's threads cost more than they give.
SMALL_LAPACK = 1024
#: Multiply-adds of one d x d x d product per BLAS thread in the two-covariance EM, whose work
#: is such products (the classes' statistics are grouped by count). At d = 256 (4 threads) on a
#: 16-core Xeon, one iteration took 6.25 ms with BLAS on 4 threads against 10.27 / 7.18 / 6.95 /
#: 7.95 ms on 1 / 2 / 8 / 16 (docs/results/timing.md, benchmarks/device_cnn_ab.sh).
EM_MACS_PER_THREAD = 2 ** 22


def plda_basis(B, W):
    """``(T, psi)`` with ``T W T^T = I`` and ``T B T^T = diag(psi)``, psi descending and
    floored at 0 (B may be singular).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.backend.plda import plda_basis
    >>> B = np.array([[4.0, 1.0], [1.0, 2.0]])
    >>> W = np.array([[1.0, 0.2], [0.2, 0.5]])
    >>> T, psi = plda_basis(B, W)
    >>> bool(np.allclose(T @ W @ T.T, np.eye(2))), bool(np.allclose(T @ B @ T.T, np.diag(psi)))
    (True, True)
    >>> np.round(psi, 3)
    array([4.22 , 3.606])
    """
    with blas_threads(1 if B.shape[0] <= SMALL_LAPACK else None):  # see SMALL_LAPACK
        # scipy.linalg.eigh(B, W), the same bits, without the GIL (._nogil_lapack)
        psi, vecs = generalized_eigh(B, W)  # vecs^T W vecs = I, vecs^T B vecs = diag(psi)
    order = np.argsort(psi)[::-1]
    return vecs[:, order].T, np.maximum(psi[order], 0.0)


def log_likelihood(B, W, counts, means, scatter):
    """Eq. (2): the log-likelihood of the data (up to a constant in the counts) under the
    two-covariance model (B, W), from :func:`class_statistics`.

    Examples
    --------
    Data drawn from B = diag(9, 4, 1), W = I are likelier under that model than under
    B = W = I:

    >>> import numpy as np
    >>> from metricfit.backend.plda import class_statistics, log_likelihood
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(np.arange(500), 4)
    >>> X = rng.normal(size=(500, 3))[labels] * [3, 2, 1] + rng.normal(size=(2000, 3))
    >>> counts, means, mu, scatter = class_statistics(X, labels)
    >>> true = log_likelihood(np.diag([9.0, 4.0, 1.0]), np.eye(3), counts, means, scatter)
    >>> unit = log_likelihood(np.eye(3), np.eye(3), counts, means, scatter)
    >>> round(true), round(unit)
    (-9442, -10705)
    """
    return _em_pass(B, W, *_em_statistics(counts, means, scatter), terms=False)[2]


def _em_statistics(counts, means, scatter, min_group=None):
    """The batched groups (:mod:`.plda_em`: counts shared by at least ``min_group`` classes,
    None: d) and the counts and means of the other classes, taken one by one in the basis."""
    d = means.shape[1]
    groups, rest = group_by_count(counts, means, d if min_group is None else min_group)
    stats = EMGroups(groups, float(counts.sum()), counts.size, scatter, np.eye(d))
    return stats, counts[rest], means[rest]


def _em_pass(B, W, stats, rest_counts, rest_means, terms=True, likelihood=True):
    """The M-step sums ``(between, within)`` over every class (None with ``terms=False``) and
    eq. (2) at (B, W) (None with ``likelihood=False``): batched groups by :mod:`.plda_em`,
    the other classes one by one in the diagonalising basis of (B, W), where ``C_n =
    diag(psi / (1 + n psi))`` is elementwise and the sums of outer products are two GEMMs.
    On several package threads the groups' ``S_n`` and W (for the likelihood) are factorised
    first, side by side (:func:`.plda_em.factorisations`); with classes in the basis, its
    eigenproblem is one more task and each group's task also makes the group's products, on
    one BLAS thread, while the eigenproblem runs. On one thread each is computed where it is
    used, as before (a few percent faster there)."""
    group_factors = within_factor = basis = None  # None: each computed where it is used
    # the basis beside them where its eigenproblem runs on one BLAS thread anyway
    beside = rest_counts.size > 0 and B.shape[0] <= SMALL_LAPACK
    if factorised_together(len(stats.groups) + likelihood + beside, B.shape[0]):
        factors = factorisations(np, B, W, stats, within=likelihood,
                                 also=(lambda: plda_basis(B, W)) if beside else None,
                                 products=beside and terms)
        basis = factors.pop() if beside else None
        group_factors = factors[:len(stats.groups)]
        within_factor = factors[-1] if likelihood else None
    between, within, ll = grouped_terms(np, B, W, stats, terms, group_factors)
    if rest_counts.size:
        T, psi = basis or plda_basis(B, W)
        U = rest_means @ T.T  # (c, d) class means in the basis
        n = rest_counts[:, None]
        var = psi[None, :] + 1.0 / n  # diag of T (B + W/n) T^T
        logdet_W = -2 * np.linalg.slogdet(T)[1]
        ll += -0.5 * np.sum(np.log(var).sum(axis=1) + logdet_W + T.shape[0] * LOG_2PI
                            + np.sum(U * U / var, axis=1))
        if terms:
            Tinv = np.linalg.inv(T)
            mixed = psi[None, :] / (1.0 + n * psi[None, :])  # diag C_n
            Wm = mixed * n * U  # posterior means of the centres
            R = U - Wm
            b = Tinv @ (np.diag(mixed.sum(axis=0)) + Wm.T @ Wm) @ Tinv.T
            w = Tinv @ (np.diag(rest_counts @ mixed) + (R * n).T @ R) @ Tinv.T
            between = b if between is None else between + b
            within = w if within is None else within + w
    if likelihood:
        ll += within_log_likelihood(np, W, stats, within_factor)
    return between, within, float(ll) if likelihood else None


def _symmetric(S):
    return 0.5 * (S + S.T)


def _check_n_classes(counts, d):
    if counts.size < 2:
        raise ValueError("PLDA needs at least two identities: got a single identity.")
    if (counts < 2).all():
        raise ValueError("PLDA needs identities with two samples or more (the within-class "
                         "covariance is estimated from them): every identity has one sample.")


def converged(history, n_points, tol):
    """Whether EM has converged: ``tol`` is not None, two log-likelihoods were recorded and
    the last iteration gained less than ``tol`` per point, ``(L_t - L_{t-1}) / n_points <
    tol`` (the criterion of scikit-learn's ``GaussianMixture``, on eq. (2)).

    Examples
    --------
    >>> from metricfit.backend.plda import converged
    >>> converged([-100.0, -50.0, -49.99], n_points=10, tol=1e-2), converged([-100.0], 10, 1.0)
    (True, False)
    """
    return tol is not None and len(history) >= 2 and \
        (history[-1] - history[-2]) < tol * n_points


def fit_two_covariance(counts, means, scatter, n_iter=KALDI_N_ITER, callback=None,
                       min_group=None, tol=None):
    """EM for the two-covariance model (Kaldi's estimator, in the diagonalising basis).

    Parameters
    ----------
    counts, means, scatter : from :func:`class_statistics`
    n_iter : int, default=10 (Kaldi)
    callback : callable(iteration, B, W, log_likelihood) or None
        Called with the parameters after initialisation (iteration 0) and after every
        iteration, and their eq. (2) log-likelihood. The iteration's own basis gives it for
        free, except after the last iteration (one more pass without the M-step sums).
    min_group : int or None, default=None
        Classes sharing a count with at least this many others (None: d) are batched
        (:mod:`.plda_em`, a few d x d products per count); the others are taken one by one
        in the diagonalising basis. Either way the same EM, to rounding.
    tol : float or None, default=None
        None: exactly ``n_iter`` iterations (Kaldi). A float: stop after the first iteration
        whose gain of eq. (2) per point, ``(L_t - L_{t-1}) / N``, is below ``tol``
        (:func:`converged`); ``n_iter`` is then the most iterations. Each iteration's
        likelihood comes with its pass (the basis is there), so the test costs nothing more.

    Returns
    -------
    B, W : ndarray of shape (d, d)

    Examples
    --------
    500 identities of 4 samples from B = diag(9, 4, 1), W = I; the log-likelihood never
    decreases (EM):

    >>> import numpy as np
    >>> from metricfit.backend.plda import class_statistics, fit_two_covariance
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(np.arange(500), 4)
    >>> X = rng.normal(size=(500, 3))[labels] * [3, 2, 1] + rng.normal(size=(2000, 3))
    >>> counts, means, mu, scatter = class_statistics(X, labels)
    >>> history = []
    >>> B, W = fit_two_covariance(counts, means, scatter,
    ...                           callback=lambda it, B, W, ll: history.append(ll))
    >>> np.round(np.diag(B), 1), np.round(np.diag(W), 1)
    (array([8.4, 3.8, 1. ]), array([1., 1., 1.]))
    >>> len(history), bool(np.all(np.diff(history) >= 0))
    (11, True)
    """
    d = means.shape[1]
    _check_n_classes(counts, d)
    with blas_threads(_em_blas_threads(d)):
        return _two_covariance_em(counts, means, scatter, n_iter, callback, tol, min_group)


def _em_blas_threads(d):
    """BLAS threads for the two-covariance EM in dimension d: one per
    :data:`EM_MACS_PER_THREAD` multiply-adds of a d x d x d product, at least 1, at most the
    package setting (:func:`metricfit.parallel.get_threads`)."""
    return min(get_threads(), max(1, d ** 3 // EM_MACS_PER_THREAD))


def _two_covariance_em(counts, means, scatter, n_iter, callback, tol, min_group):
    d = means.shape[1]
    B, W = np.eye(d), np.eye(d)  # Kaldi InitParameters: SetUnit()
    em = _em_statistics(counts, means, scatter, min_group)
    history = []
    for it in range(1, n_iter + 1):
        between, within, ll = _em_pass(
            B, W, *em, likelihood=callback is not None or tol is not None)
        history.append(ll)
        if callback:
            callback(it - 1, B, W, ll)
        if converged(history, em[0].N, tol):
            return B, W  # the last iteration (it - 1) gained less than tol per point
        B, W = symmetric_means(between, em[0].C, scatter, within, em[0].N)
    if callback:
        callback(n_iter, B, W, _em_pass(B, W, *em, terms=False)[2])
    return B, W


def fit_simplified(counts, means, scatter, n_components, n_iter=KALDI_N_ITER, callback=None,
                   tol=None):
    """EM for the simplified PLDA, ``B = V V^T`` with V of shape (d, n_components).

    Returns ``B, W`` as :func:`fit_two_covariance` (B of rank n_components) and V; ``tol``
    (None or float) as there, at the cost of one likelihood pass per iteration.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.backend.plda import class_statistics, fit_simplified
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(np.arange(500), 4)
    >>> X = rng.normal(size=(500, 3))[labels] * [3, 2, 1] + rng.normal(size=(2000, 3))
    >>> counts, means, mu, scatter = class_statistics(X, labels)
    >>> B, W, V = fit_simplified(counts, means, scatter, n_components=1)
    >>> V.shape, int(np.linalg.matrix_rank(B))
    ((3, 1), 1)
    >>> round(float(B[0, 0]), 1)
    8.6
    """
    d, q = means.shape[1], n_components
    _check_n_classes(counts, d)
    N = counts.sum()
    F = means * counts[:, None]  # (C, d) centred sums f_c
    between_scatter = means.T @ F  # sum_c n_c m_c m_c^T
    total = scatter + between_scatter
    lam, vecs = linalg.eigh(between_scatter / N)
    V = vecs[:, ::-1][:, :q] * np.sqrt(np.maximum(lam[::-1][:q], 1e-12))
    W = np.eye(d)
    sizes, size_of = np.unique(counts, return_inverse=True)
    track = callback is not None or tol is not None
    em = _em_statistics(counts, means, scatter) if track else None
    history = [_em_pass(V @ V.T, W, *em, terms=False)[2]] if track else []
    if callback:
        callback(0, V @ V.T, W, history[0])
    for it in range(1, n_iter + 1):
        PV = linalg.solve(W, V, assume_a="pos")  # (d, q) = W^-1 V
        A = V.T @ PV  # (q, q)
        G = F @ PV  # (C, q)
        Eh = np.empty_like(G)
        R = np.zeros((q, q))
        for j, n in enumerate(sizes):
            rows = size_of == j
            cov = np.linalg.inv(np.eye(q) + n * A)
            Eh[rows] = G[rows] @ cov
            R += n * rows.sum() * cov
        R += (Eh * counts[:, None]).T @ Eh
        Gs = F.T @ Eh  # (d, q)
        V = linalg.solve(R, Gs.T, assume_a="pos").T
        W = _symmetric(total - V @ Gs.T) / N
        if track:
            history.append(_em_pass(V @ V.T, W, *em, terms=False)[2])
        if callback:
            callback(it, V @ V.T, W, history[-1])
        if converged(history, N, tol):
            break
    return V @ V.T, W, V


def llr(a, b, psi, n=1, m=1):
    """The closed-form LLR of enrolment means a and test means b (rows, in the PLDA basis),
    of n and m samples (scalars or arrays broadcasting against the rows).

    Examples
    --------
    One dimension with between-class variance 4: a test sample near the enrolment one
    gives a positive LLR, one on the other side a negative LLR, and both grow in
    magnitude when the enrolment is the mean of 5 samples; a direction with psi = 0
    contributes nothing:

    >>> import numpy as np
    >>> from metricfit.backend.plda import llr
    >>> a, b = np.array([[1.0], [1.0]]), np.array([[1.0], [-1.0]])
    >>> np.round(llr(a, b, np.array([4.0])), 3)
    array([ 0.6  , -0.289])
    >>> np.round(llr(a, b, np.array([4.0]), n=5), 3)
    array([ 0.817, -0.783])
    >>> float(llr(a, b, np.array([0.0]))[0]) == 0
    True
    """
    p = psi[None, :]
    n = np.asarray(n, dtype=np.float64).reshape(-1, 1)
    m = np.asarray(m, dtype=np.float64).reshape(-1, 1)
    s, t = p + 1.0 / n, p + 1.0 / m
    D = s * t - p * p
    quad = (t * a * a - 2 * p * a * b + s * b * b) / D - a * a / s - b * b / t
    return -0.5 * np.sum(np.log(D / (s * t)) + quad, axis=1)


@dataclass(frozen=True)
class PLDAScorer:
    r"""The PLDA log-likelihood ratio in the PLDA basis (within-class covariance I, between-class
    ``diag(psi)``): the model object behind :class:`metricfit.PLDA`'s scores.

    For one sample on each side (n = m = 1: ``s = t = p + 1``, ``D = s^2 - p^2``) the LLR of
    :func:`llr` splits into a constant, a term in a alone, one in b alone and a cross term::

        LLR(a, b) = c + q.(a^2) + q.(b^2) + (r a).b,
        c = -1/2 sum_k log(D_k / s_k^2),   q = -1/2 (s / D - 1 / s),   r = p / D,

    so the scores of n rows against K rows are two matrix-vector products and one
    (n, d) x (d, K) GEMM (:meth:`cross_llr`), O(n K d) with no (n K, 2, d) pair array.

    Parameters
    ----------
    psi : ndarray of shape (k,)
        Between-class variances in the basis (``PLDA.psi_``).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.backend.plda import PLDAScorer
    >>> scorer = PLDAScorer(np.array([4.0]))
    >>> a, b = np.array([[1.0], [1.0]]), np.array([[1.0], [-1.0]])
    >>> np.round(scorer.pair_llr(a, b), 3)
    array([ 0.6  , -0.289])
    >>> np.round(scorer.cross_llr(a[:1], b), 3)  # row 0 of a against both rows of b
    array([[ 0.6  , -0.289]])
    """

    psi: np.ndarray

    def pair_llr(self, a, b, n=1, m=1):
        """:func:`llr` of rows a (enrolment means of n samples) against rows b (test means of
        m samples), in float64; shape (n_pairs,)."""
        return llr(np.asarray(a, np.float64), np.asarray(b, np.float64), self.psi, n, m)

    def cross_llr(self, A, B):
        """The (n, K) LLRs of every row of A (n, k) against every row of B (K, k), one sample
        each side, by the expansion above."""
        A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
        p = self.psi
        s = p + 1.0
        D = s * s - p * p
        q, r = -0.5 * (s / D - 1.0 / s), p / D
        const = -0.5 * np.sum(np.log(D / (s * s)))
        return const + (A * A) @ q[:, None] + ((B * B) @ q)[None, :] + (A * r) @ B.T


def plda_scorer(estimator):
    """The :class:`PLDAScorer` of a fitted PLDA (its ``scorer_``), or None for any other
    estimator and an unfitted PLDA: where the back-end takes PLDA's closed forms."""
    scorer = getattr(estimator, "scorer_", None)
    return scorer if isinstance(scorer, PLDAScorer) else None


#: A within-class covariance whose smallest eigenvalue is below this fraction of its largest
#: is (numerically) singular: the data have directions without within-class variation.
SINGULAR_RATIO = 1e-10


def _eigvalsh(W):
    """Eigenvalues of the symmetric W (one BLAS thread up to SMALL_LAPACK)."""
    with blas_threads(1 if W.shape[0] <= SMALL_LAPACK else None):
        return linalg.eigvalsh(W)


def singular_within_message(W):
    """What is wrong with a (nearly) singular within-class covariance or scatter W."""
    w = _eigvalsh(W)
    return (f"the within-class covariance is singular (smallest / largest eigenvalue "
            f"{max(w[0], 0.0) / w[-1]:.1e}): X has directions without within-class variation. "
            "Reduce the dimension first (WPCA or PCA to at most the rank of the within-class "
            "scatter)")


def warn_if_singular_within(W):
    """Warn when the fitted within-class covariance W is (nearly) singular: along a direction
    in which no identity varies (a constant pixel, fewer samples than dimensions), the model
    calls any difference impossible within an identity, and the LLRs grow without bound
    (-1e16 on raw digits pixels). Where EM itself breaks down, ``fit`` raises instead."""
    w = _eigvalsh(W)
    if not w[0] > SINGULAR_RATIO * w[-1]:
        warnings.warn(f"PLDA: {singular_within_message(W)}; LLRs along those directions are "
                      "unbounded.", UserWarning, stacklevel=user_stacklevel())
