r"""SCML: Sparse Compositional Metric Learning (Shi, Bellet and Sha, AAAI 2014), the
triplet objective and its regularised dual averaging kernel.

The metric is a non-negative combination of rank-one bases :math:`b_k` (rows of B, (K, d)):
:math:`M = \sum_k w_k b_k b_k^T = B^T \operatorname{diag}(w) B`, so that
:math:`d_M(x, y) = \sum_k w_k ((x - y) \cdot b_k)^2`. For a triplet t = (a, p, n) ("a is closer
to p than to n") write :math:`z_{tk} = ((a - p) \cdot b_k)^2 - ((a - n) \cdot b_k)^2`; the
global formulation (eq. 2 of the paper) is the L1-regularised hinge

.. math::

    \min_{w \ge 0} \frac{1}{T} \sum_t [1 + z_t \cdot w]_+ + \beta \|w\|_1 .

Its stochastic subgradient on a mini-batch :math:`\mathcal B` is
:math:`g = \frac{1}{|\mathcal B|} \sum_{t \in \mathcal B,\ 1 + z_t \cdot w > 0} z_t`. The
solver is regularised dual averaging with AdaGrad scaling (Xiao 2010; Duchi et al. 2011), as
in the authors' code and metric-learn: with :math:`\bar g` the running mean of the g's and
:math:`h = \sqrt{\sum g^2}` (element-wise),

.. math::

    w_{t+1} = \frac{t}{\gamma (\epsilon + h)} \max(0, -(\bar g + \beta)), \qquad
    \epsilon = 10^{-3},

which is the closed form of
:math:`\arg\min_{w \ge 0} \bar g \cdot w + \beta \|w\|_1 + \frac{\gamma}{2t} w^T
\operatorname{diag}(\epsilon + h) w`. Every ``output_iter`` iterations the full objective is
evaluated and the best w kept.

The kernel never stores the (T, K) matrix z: it keeps the projections :math:`P = X B^T` (n_points,
K) and forms a triplet's row when needed; the full objective touches only the non-zero
weights (w is sparse). One fixed order (batches as drawn, triplets in order): the result does
not depend on the thread count.
"""

import numpy as np
from numba import njit

__all__ = ["dual_averaging", "triplet_objective", "triplet_diff_bases"]

ADAGRAD_EPS = 1e-3


@njit(cache=True)
def _objective_kernel(P, triplets, w, active, beta):  # pragma: no cover - numba
    T = triplets.shape[0]
    total = 0.0
    for t in range(T):
        a, p, n = triplets[t, 0], triplets[t, 1], triplets[t, 2]
        s = 1.0
        for k in active:
            dp = P[a, k] - P[p, k]
            dn = P[a, k] - P[n, k]
            s += w[k] * (dp * dp - dn * dn)
        if s > 0:
            total += s
    reg = 0.0
    for k in active:
        reg += w[k]
    return total / T + beta * reg


def triplet_objective(P, triplets, w, beta):
    """``1/T sum_t [1 + z_t . w]_+ + beta |w|_1`` (w >= 0)."""
    active = np.flatnonzero(w > 0).astype(np.int64)
    return float(_objective_kernel(P, triplets, w, active, beta))


@njit(cache=True)
def _dual_averaging_kernel(P, triplets, batches, beta, gamma, output_iter):  # pragma: no cover
    K = P.shape[1]
    n_iter, batch_size = batches.shape
    w = np.zeros(K)
    best_w = np.zeros(K)
    avg = np.zeros(K)
    ada = np.zeros(K)
    g = np.empty(K)
    z = np.empty(K)
    best = np.inf
    for it in range(n_iter):
        for k in range(K):
            g[k] = 0.0
        for b in range(batch_size):
            t = batches[it, b]
            a, p, n = triplets[t, 0], triplets[t, 1], triplets[t, 2]
            s = 1.0
            for k in range(K):
                dp = P[a, k] - P[p, k]
                dn = P[a, k] - P[n, k]
                z[k] = dp * dp - dn * dn
                s += z[k] * w[k]
            if s > 0:
                for k in range(K):
                    g[k] += z[k]
        for k in range(K):
            gk = g[k] / batch_size
            avg[k] = (it * avg[k] + gk) / (it + 1)
            ada[k] = np.sqrt(ada[k] * ada[k] + gk * gk)
            w[k] = (it + 1) / (gamma * (ADAGRAD_EPS + ada[k])) * max(0.0, -(avg[k] + beta))
        if (it + 1) % output_iter == 0:
            count = 0
            for k in range(K):
                if w[k] > 0:
                    count += 1
            active = np.empty(count, dtype=np.int64)
            count = 0
            for k in range(K):
                if w[k] > 0:
                    active[count] = k
                    count += 1
            obj = _objective_kernel(P, triplets, w, active, beta)
            if obj < best:
                best = obj
                best_w[:] = w
    return best_w, best


def dual_averaging(P, triplets, batches, beta, gamma, output_iter):
    """Regularised dual averaging (see the module); returns (best w (K,), its objective).

    Parameters
    ----------
    P : ndarray (n_points, K) float64 (or float32, kept: large problems), the projections
        ``X B^T``; the sums are float64 either way
    triplets : ndarray (T, 3) int64, rows of P
    batches : ndarray (n_iter, batch_size) int64, the triplets of each step
    beta, gamma : float
    output_iter : int, iterations between evaluations of the full objective
    """
    P = P if P.dtype == np.float32 else np.asarray(P, dtype=np.float64)
    return _dual_averaging_kernel(np.ascontiguousarray(P),
                                  np.ascontiguousarray(triplets, dtype=np.int64),
                                  np.ascontiguousarray(batches, dtype=np.int64),
                                  float(beta), float(gamma), int(output_iter))


def triplet_diff_bases(X, triplets, n_basis, rng):
    """Bases from the triplets (the paper's "triplet_diffs" scheme): repeatedly draw d
    triplets, form :math:`S = \\sum (a - p)(a - p)^T - \\sum (a - n)(a - n)^T` and keep its
    eigenvectors of positive eigenvalue (the directions where the similar differences
    dominate), until ``n_basis`` rows (K, d) are gathered.
    """
    n, d = triplets.shape[0], X.shape[1]
    if d > n:
        raise ValueError(f"SCML's 'triplet_diffs' bases need at least n_features={d} triplets, "
                         f"got {n}; give more triplets or basis='lda' / an array of bases.")
    rows, found, tries = [], 0, 0
    while found < n_basis:
        pick = rng.choice(n, size=d, replace=False)
        t = triplets[pick]
        pos, neg = X[t[:, 0]] - X[t[:, 1]], X[t[:, 0]] - X[t[:, 2]]
        w, V = np.linalg.eigh(pos.T @ pos - neg.T @ neg)
        keep = V[:, w > 1e-12 * max(np.abs(w).max(), 1e-300)].T
        rows.append(keep)
        found += keep.shape[0]
        tries += 1
        if tries > 100 * n_basis and found == 0:
            raise ValueError("SCML: no triplet difference gives a positive direction; the "
                             "triplets' positives are never closer than their negatives.")
    return np.concatenate(rows)[:n_basis]
