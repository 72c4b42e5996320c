"""Slow plain-NumPy twins of the compiled kernels: one pair at a time, straight from the
papers' equations. The kernels must match them."""

import numpy as np

from metricfit.losses import scml


def _regulariser(A, A0, lam):
    A0 = np.zeros_like(A) if A0 is None else A0
    return 0.5 * lam * np.sum((A - A0) ** 2), lam * (A - A0)


def tsml_cost_grad_ref(A, X1, X2, s, lam=0.0, A0=None):
    """Seed 002 eqs. 9-10, pair by pair."""
    J, G = 0.0, np.zeros_like(A)
    for x, y, si in zip(X1, X2, s, strict=True):
        a, b = A @ x, A @ y
        c = a + si * b
        nc = np.linalg.norm(c)
        unit = c / nc if nc > 0 else np.zeros_like(c)
        J += 0.5 * a @ a + 0.5 * b @ b - nc + 1
        G += np.outer(a - unit, x) + np.outer(b - si * unit, y)
    R, dR = _regulariser(A, A0, lam)
    n = len(s)
    return J / n + R, G / n + dR


def csml_cost_grad_ref(A, X1, X2, s, lam=0.0, A0=None):
    """J = mean(-s cos(Ax, Ay)); gradient seed 002 eq. 11, pair by pair."""
    J, G = 0.0, np.zeros_like(A)
    for x, y, si in zip(X1, X2, s, strict=True):
        a, b = A @ x, A @ y
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        if na * nb == 0:
            continue
        J += -si * (a @ b) / (na * nb)
        scale = si / (na * nb)
        G += scale * (np.outer((a @ b) / na**2 * a - b, x) + np.outer((a @ b) / nb**2 * b - a, y))
    R, dR = _regulariser(A, A0, lam)
    n = len(s)
    return J / n + R, G / n + dR


FD_STEP = 1e-6  # central_differences' step


def central_differences(f, A, eps=FD_STEP, positions=None, in_place=False):
    """Numerical gradient of the scalar f at A by central differences: the tests' one helper.

    Entry i (a flat, C-order position of A) is ``(f(A + eps e_i) - f(A - eps e_i)) / (2 eps)``,
    the perturbed entry rounded in A's dtype.

    Parameters
    ----------
    f : callable
        ``f(A')`` -> a scalar, for A' equal to A but for one perturbed entry.
    A : ndarray
        C-contiguous when ``in_place``.
    eps : float, default=FD_STEP
    positions : sequence of int, default=None
        Flat positions to differentiate at; None: every entry.
    in_place : bool, default=False
        Perturb A itself (each entry restored) rather than a copy, for an ``f`` that reads A
        through a closure (the convnet's layers: ``lambda _: loss()``).

    Returns
    -------
    num : ndarray of float64, of A's shape (every entry) or of shape (len(positions),)
    """
    work = A if in_place else A.copy()
    flat = work.reshape(-1)  # a view: A is C-contiguous
    if positions is None:
        num, positions = np.zeros_like(A, dtype=np.float64), range(A.size)
    else:
        num = np.zeros(len(positions), dtype=np.float64)
    out = num.reshape(-1)
    for k, i in enumerate(positions):
        keep = flat[i]
        flat[i] = keep + eps
        up = f(work)
        flat[i] = keep - eps
        down = f(work)
        flat[i] = keep
        out[k] = (up - down) / (2 * eps)
    return num


def relative_error(G, num, J=None):
    """||G - num|| / ||num||, floored at 1e-8 where the true gradient is 0 (CSML with k = 1).

    With ``J`` (the function's value) and ``num`` from :func:`central_differences`, the part
    of ||G - num|| within the differences' own rounding is not counted: each entry is
    (f(A+) - f(A-)) / (2 eps), and two values rounded to within one ulp of J can differ by
    2 ulp where f is flat (CSML's cost with k = 1 is constant in A: an entry of one ulp /
    2 eps = 2.8e-11 is rounding, not slope). The bound: four ulp of J per entry.
    """
    error = np.linalg.norm(np.ravel(G) - np.ravel(num))
    if J is not None:
        roundoff = 4 * np.spacing(max(abs(float(J)), 1.0)) / (2 * FD_STEP) * np.sqrt(np.size(num))
        error = max(error - roundoff, 0.0)
    return error / max(np.linalg.norm(num), 1e-8)


def nca_cost_grad_ref(A, X, y):
    """Seed 003's NCA slides, point by point: ``p_ij`` by the softmax over ``k != i``,
    ``J = -sum_i sum_{j in C_i} p_ij`` and ``dJ/dA = -2A sum_i (p_i sum_k p_ik x_ik x_ik^T
    - sum_{j in C_i} p_ij x_ij x_ij^T)`` (minus the slide's gradient of f)."""
    n = X.shape[0]
    J, S = 0.0, np.zeros((X.shape[1], X.shape[1]))
    for i in range(n):
        others = [k for k in range(n) if k != i]
        logits = np.array([-np.sum((A @ (X[i] - X[k])) ** 2) for k in others])
        p = np.exp(logits - logits.max())
        p /= p.sum()
        p_i = sum(p_ik for k, p_ik in zip(others, p, strict=True) if y[k] == y[i])
        J -= p_i
        for k, p_ik in zip(others, p, strict=True):
            x_ik = X[i] - X[k]
            S += p_i * p_ik * np.outer(x_ik, x_ik)
            if y[k] == y[i]:
                S -= p_ik * np.outer(x_ik, x_ik)
    return J, -2 * A @ S

# --------------------------------------------------------------------------- image descriptors


def gradients_ref(image):
    """Central differences, not halved, 0 on the outer rows / columns (skimage's HOG)."""
    image = np.asarray(image, dtype=np.float64)
    g_row, g_col = np.zeros_like(image), np.zeros_like(image)
    g_row[1:-1, :] = image[2:, :] - image[:-2, :]
    g_col[:, 1:-1] = image[:, 2:] - image[:, :-2]
    return g_row, g_col


def hog_ref(image, orientations=9, cell=(8, 8), block=(2, 2), norm="L2-Hys", eps=1e-5):
    """HOG of one image, cell by cell and block by block (Dalal & Triggs as skimage does it)."""
    g_row, g_col = gradients_ref(image)
    magnitude = np.hypot(g_col, g_row)
    theta = np.rad2deg(np.arctan2(g_row, g_col)) % 180
    edges = (np.arange(orientations + 1, dtype=np.float32)
             * np.float32(180.0 / orientations)).astype(np.float64)
    (ch, cw), (bh, bw) = cell, block
    n_cr, n_cc = image.shape[0] // ch, image.shape[1] // cw
    hist = np.zeros((n_cr, n_cc, orientations))
    for i in range(n_cr):
        for j in range(n_cc):
            m = magnitude[i * ch:(i + 1) * ch, j * cw:(j + 1) * cw]
            t = theta[i * ch:(i + 1) * ch, j * cw:(j + 1) * cw]
            for b in range(orientations):
                hist[i, j, b] = m[(t >= edges[b]) & (t < edges[b + 1])].sum() / (ch * cw)
    out = []
    for i in range(n_cr - bh + 1):
        for j in range(n_cc - bw + 1):
            v = hist[i:i + bh, j:j + bw].ravel()
            if norm in ("L1", "L1-sqrt"):
                v = v / (np.abs(v).sum() + eps)
                v = np.sqrt(v) if norm == "L1-sqrt" else v
            else:
                v = v / np.sqrt((v ** 2).sum() + eps ** 2)
                if norm == "L2-Hys":
                    v = np.minimum(v, 0.2)
                    v = v / np.sqrt((v ** 2).sum() + eps ** 2)
            out.append(v)
    return np.concatenate(out)


def sift_patch_ref(image, r0, c0, bin_size):
    """Lowe's 128-d descriptor of one upright patch of 4b x 4b pixels, pixel by pixel."""
    g_row, g_col = gradients_ref(image)
    patch = 4 * bin_size
    centre, sigma = (patch - 1) / 2, patch / 2
    hist = np.zeros((4, 4, 8))
    for i in range(patch):
        for j in range(patch):
            gr, gc = g_row[r0 + i, c0 + j], g_col[r0 + i, c0 + j]
            theta = np.arctan2(gr, gc) % (2 * np.pi)
            weight = np.hypot(gc, gr) * np.exp(-((i - centre) ** 2 + (j - centre) ** 2)
                                               / (2 * sigma ** 2))
            u, v, t = (i + 0.5) / bin_size - 0.5, (j + 0.5) / bin_size - 0.5, theta / (np.pi / 4)
            for y in (int(np.floor(u)), int(np.floor(u)) + 1):
                for x in (int(np.floor(v)), int(np.floor(v)) + 1):
                    for o in (int(np.floor(t)), int(np.floor(t)) + 1):
                        if 0 <= y < 4 and 0 <= x < 4:
                            share = (1 - abs(u - y)) * (1 - abs(v - x)) * (1 - abs(t - o))
                            hist[y, x, o % 8] += weight * share
    d = hist.ravel()
    if not d.any():
        return d
    d = np.minimum(d / np.linalg.norm(d), 0.2)
    return d / np.linalg.norm(d)


def dense_sift_ref(image, bin_sizes=(4, 6, 8), steps=None):
    """Dense SIFT of one image: every patch of a centred grid, scale by scale, row-major."""
    steps = [2 * b for b in bin_sizes] if steps is None else steps
    out = []
    for b, s in zip(bin_sizes, steps, strict=True):
        starts = []
        for length in image.shape:
            n = (length - 4 * b) // s + 1
            first = (length - (n - 1) * s - 4 * b) // 2
            starts.append([first + k * s for k in range(n)])
        out += [sift_patch_ref(image, r, c, b) for r in starts[0] for c in starts[1]]
    return np.concatenate(out)


def convolve_reflect_ref(image, kernel):
    """Direct 2-D convolution of ``image`` with an odd-sized ``kernel``, the image extended by
    symmetric reflection (d c b a | a b c d | d c b a), same size as the image."""
    hy, hx = kernel.shape[0] // 2, kernel.shape[1] // 2
    padded = np.pad(np.asarray(image, dtype=np.float64), ((hy, hy), (hx, hx)), mode="symmetric")
    windows = np.lib.stride_tricks.sliding_window_view(padded, kernel.shape)
    return np.einsum("rcij,ij->rc", windows, kernel[::-1, ::-1])


def gabor_ref(image, kernels, block):
    """Mean Gabor magnitude of every kernel over every block window (kept while more than half
    of it lies in the image), kernels outer, blocks row-major."""
    rows, cols = image.shape
    out = []
    for kernel in kernels:
        magnitude = np.abs(convolve_reflect_ref(image, kernel))
        for r in range(0, rows, block[0]):
            for c in range(0, cols, block[1]):
                if r + block[0] / 2 < rows and c + block[1] / 2 < cols:
                    out.append(magnitude[r:r + block[0], c:c + block[1]].mean())
    return np.array(out)


# -- ITML and SCML (issue 26) --

def bregman_sweep_numpy(M, V, delta, lam, xi, gamma_proj, inv_gamma):
    """Plain-NumPy twin of :func:`metricfit.losses.itml.bregman_sweep` (same updates, same
    order)."""
    for c in range(V.shape[0]):
        Mv = M @ V[c]
        p = V[c] @ Mv
        if not p > 0.0:
            continue
        s = delta[c]
        alpha = min(lam[c], s * gamma_proj * (1.0 / p - 1.0 / xi[c]))
        if alpha == 0.0:
            continue
        lam[c] -= alpha
        beta = s * alpha / (1.0 - s * alpha * p)
        xi[c] = 1.0 / (1.0 / xi[c] + s * alpha * inv_gamma)
        M += beta * np.outer(Mv, Mv)


def dual_averaging_numpy(P, triplets, batches, beta, gamma, output_iter):
    """Plain-NumPy twin of :func:`metricfit.losses.scml.dual_averaging` (the whole z rows,
    metric-learn's form)."""
    K = P.shape[1]
    w, avg, ada = np.zeros(K), np.zeros(K), np.zeros(K)
    best_w, best = np.zeros(K), np.inf
    for it, idx in enumerate(batches):
        t = triplets[idx]
        z = (P[t[:, 0]] - P[t[:, 1]]) ** 2 - (P[t[:, 0]] - P[t[:, 2]]) ** 2
        g = z[1 + z @ w > 0].sum(axis=0) / batches.shape[1]
        avg = (it * avg + g) / (it + 1)
        ada = np.sqrt(ada ** 2 + g ** 2)
        w = (it + 1) / (gamma * (scml.ADAGRAD_EPS + ada)) * np.maximum(0.0, -(avg + beta))
        if (it + 1) % output_iter == 0:
            zall = ((P[triplets[:, 0]] - P[triplets[:, 1]]) ** 2
                    - (P[triplets[:, 0]] - P[triplets[:, 2]]) ** 2)
            slack = 1 + zall @ w
            obj = slack[slack > 0].sum() / triplets.shape[0] + beta * w.sum()
            if obj < best:
                best, best_w = obj, w.copy()
    return best_w, best


def kaldi_plda_adapt_ref(B, W, mean, X, mean_diff_scale=1.0, within_covar_scale=0.3,
                         between_covar_scale=0.7):
    """Kaldi's ``PldaUnsupervisedAdaptor`` (``AddStats`` then ``UpdatePlda``, weights 1), step
    by step in plain NumPy, with the model's basis from Kaldi's ``GetOutput`` (Cholesky of W,
    eigendecomposition of the projected B). Returns ``(B_new, W_new, mean_new)``."""
    d = mean.shape[0]
    # GetOutput: transform1 whitens W (inverse Cholesky), U diagonalises the projected B
    transform1 = np.linalg.inv(np.linalg.cholesky(W))
    s_b, U = np.linalg.eigh(transform1 @ B @ transform1.T)
    order = np.argsort(s_b)[::-1]
    psi, U = np.maximum(s_b[order], 0.0), U[:, order]
    transform = U.T @ transform1
    # AddStats: weighted sums of x and x x^T
    tot, mean_stats, var_stats = 0.0, np.zeros(d), np.zeros((d, d))
    for x in X:
        tot += 1.0
        mean_stats += x
        var_stats += np.outer(x, x)
    # UpdatePlda
    m = mean_stats / tot
    variance = var_stats / tot - np.outer(m, m)
    diff = m - mean
    variance += mean_diff_scale * np.outer(diff, diff)
    transform_mod = transform / np.sqrt(1.0 + psi)[:, None]
    s, P = np.linalg.eigh(transform_mod @ variance @ transform_mod.T)
    order = np.argsort(s)[::-1]  # SortSvd
    s, P = s[order], P[:, order]
    Wd, Bd = np.diag(1.0 / (1.0 + psi)), np.diag(psi / (1.0 + psi))
    Wp, Bp = P.T @ Wd @ P, P.T @ Bd @ P
    for i in range(d):
        if s[i] > 1.0:
            Wp[i, i] += (s[i] - 1.0) * within_covar_scale
            Bp[i, i] += (s[i] - 1.0) * between_covar_scale
    inv = np.linalg.inv(P.T @ transform_mod)
    return inv @ Bp @ inv.T, inv @ Wp @ inv.T, m


def plda_em_ref(X, labels, n_iter, tol=None):
    """Plain-NumPy twin of the two-covariance PLDA EM (:func:`metricfit.backend.plda.
    fit_two_covariance`, Kaldi's ``PldaEstimator``), class by class with explicit inverses:
    ``C = (B^-1 + n W^-1)^-1``, ``w = C n W^-1 m``, ``B <- mean_c (C + w w^T)``,
    ``W <- (S_off + sum_c n (C + (m - w)(m - w)^T)) / N``; the log-likelihood
    ``-1/2 [(N - K)(log|W| + d log 2 pi) + tr(W^-1 S_off)] - 1/2 sum_c [log|S_c| + d log 2 pi
    + m^T S_c^-1 m]`` with ``S_c = B + W / n_c``. With ``tol``: stop after the first iteration
    whose gain per point is below tol. Returns ``(B, W, history)``."""
    classes = np.unique(labels)
    d, N, K = X.shape[1], X.shape[0], classes.size
    rows = [X[labels == c] for c in classes]
    mu = np.mean([r.mean(axis=0) for r in rows], axis=0)
    means = [r.mean(axis=0) - mu for r in rows]
    S_off = sum((r - r.mean(axis=0)).T @ (r - r.mean(axis=0)) for r in rows)
    counts = [r.shape[0] for r in rows]
    log2pi = np.log(2 * np.pi)

    def loglik(B, W):
        ll = -0.5 * ((N - K) * (np.linalg.slogdet(W)[1] + d * log2pi)
                     + np.trace(np.linalg.solve(W, S_off)))
        for n, m in zip(counts, means, strict=True):
            S = B + W / n
            ll -= 0.5 * (np.linalg.slogdet(S)[1] + d * log2pi + m @ np.linalg.solve(S, m))
        return ll

    B, W = np.eye(d), np.eye(d)
    history = [loglik(B, W)]
    for _ in range(n_iter):
        Winv, Binv = np.linalg.inv(W), np.linalg.inv(B)
        newB, newW = np.zeros((d, d)), S_off.copy()
        for n, m in zip(counts, means, strict=True):
            C = np.linalg.inv(Binv + n * Winv)
            w = C @ (n * Winv @ m)
            newB += C + np.outer(w, w)
            newW += n * (C + np.outer(m - w, m - w))
        B, W = newB / K, newW / N
        B, W = (B + B.T) / 2, (W + W.T) / 2
        history.append(loglik(B, W))
        if tol is not None and history[-1] - history[-2] < tol * N:
            break
    return B, W, history
