"""Probe (issue 28 item 3; not a learner of the package): a linear map W (start I) under the
cosine, trained with the prior-weighted logistic loss of BOSARIS's calibration at P_target
``prior`` (an affine alpha, beta learned with it) plus ``lam/2 ||W - I||^2``, on embeddings
with an LFW-style pairs file; per experiment and lambda, the paired difference to raw cosine
of the test accuracy (at the validation fold's threshold) and minDCF(0.01), and the same on
the validation fold.

    python benchmarks/prior_weighted_probe.py lfw_dlib.npz pairs.txt 0.01 1e-3,1e-2,1e-1

Loss: with ``c = cos(W x, W y)``, ``z = alpha c + beta + logit(prior)``,
``J = prior/N_t sum_targets log(1 + e^-z) + (1 - prior)/N_n sum_non-targets log(1 + e^z)``;
``dc/da = b / (|a||b|) - c a / |a|^2`` (and symmetrically for b), ``dJ/dW = sum dJ/da x^T +
dJ/db y^T``. The gradient is checked against finite differences before the first fit.
"""

import argparse

import numpy as np
from scipy.optimize import check_grad, minimize

from metricfit.datasets import load_embeddings, read_pairs_over_ids
from metricfit.metrics import accuracy_at_threshold, max_decision_accuracy, min_dcf
from metricfit.pairs import FoldRotation


def cosine(W, A, B):
    a, b = A @ W.T, B @ W.T
    return np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def loss_and_grad(theta, A, B, s, lam, prior):
    d = A.shape[1]
    W, (alpha, beta) = theta[:d * d].reshape(d, d), theta[d * d:]
    a, b = A @ W.T, B @ W.T
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    c = np.sum(a * b, 1) / (na * nb)
    z = alpha * c + beta + np.log(prior / (1 - prior))
    weight = np.where(s > 0, prior / np.sum(s > 0), (1 - prior) / np.sum(s < 0))
    margin = -s * z
    J = np.sum(weight * np.logaddexp(0, margin))
    dz = weight * (-s) * np.exp(-np.logaddexp(0, -margin))  # sigmoid(margin), no overflow
    dc = dz * alpha
    da = dc[:, None] * (b / (na * nb)[:, None] - c[:, None] * a / (na ** 2)[:, None])
    db = dc[:, None] * (a / (na * nb)[:, None] - c[:, None] * b / (nb ** 2)[:, None])
    E = W - np.eye(d)
    G = da.T @ A + db.T @ B + lam * E
    return J + lam / 2 * np.sum(E * E), np.r_[G.ravel(), np.sum(dz * c), np.sum(dz)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("embeddings")
    parser.add_argument("pairs")
    parser.add_argument("prior", type=float)
    parser.add_argument("lams")
    args = parser.parse_args()
    data = load_embeddings(args.embeddings)
    P, y, fold = read_pairs_over_ids(args.pairs, data.ids, data.labels)
    X, d = data.X, data.X.shape[1]
    lams = [float(v) for v in args.lams.split(",")]
    rotation = FoldRotation(fold, n_train_folds=np.unique(fold).size - 2)
    rng = np.random.default_rng(0)
    small = rng.normal(size=(20, 2, 5))
    err = check_grad(lambda t: loss_and_grad(t, small[:, 0], small[:, 1], np.r_[[1] * 10, [-1] * 10], 0.3, args.prior)[0],  # noqa: E501
                     lambda t: loss_and_grad(t, small[:, 0], small[:, 1], np.r_[[1] * 10, [-1] * 10], 0.3, args.prior)[1],  # noqa: E501
                     np.r_[np.eye(5).ravel() + 0.1 * rng.normal(size=25), 3.0, -1.0])
    print(f"finite-difference check of the gradient: {err:.2e}")
    results = {lam: [] for lam in lams}
    for e in range(rotation.get_n_splits()):
        train, (val,), test = rotation.rotation(e)
        sets = [(X[P[m]], y[m]) for m in (np.isin(fold, train), fold == val, fold == test)]
        (tr, s), (va, vy), (te, ty) = sets
        c_val, c_test = cosine(np.eye(d), va[:, 0], va[:, 1]), cosine(np.eye(d), te[:, 0], te[:, 1])
        t0 = max_decision_accuracy(vy, c_val)[1]
        base = (accuracy_at_threshold(ty, c_test, t0), min_dcf(ty, c_test, 0.01)[0],
                max_decision_accuracy(vy, c_val)[0], min_dcf(vy, c_val, 0.01)[0])
        for lam in lams:
            fit = minimize(loss_and_grad, np.r_[np.eye(d).ravel(), 10.0, -8.0],
                           args=(tr[:, 0], tr[:, 1], s, lam, args.prior), jac=True,
                           method="L-BFGS-B", options=dict(maxiter=300))
            W = fit.x[:d * d].reshape(d, d)
            v, t = cosine(W, va[:, 0], va[:, 1]), cosine(W, te[:, 0], te[:, 1])
            threshold = max_decision_accuracy(vy, v)[1]
            row = (accuracy_at_threshold(ty, t, threshold) - base[0],
                   min_dcf(ty, t, 0.01)[0] - base[1], max_decision_accuracy(vy, v)[0] - base[2],
                   min_dcf(vy, v, 0.01)[0] - base[3])
            results[lam].append(row)
            print(f"experiment {e} lambda {lam:g} ({fit.nit} iterations): test d acc "
                  f"{row[0]:+.4f} d minDCF {row[1]:+.3f} | validation {row[2]:+.4f} "
                  f"{row[3]:+.3f}", flush=True)
    for lam, rows in results.items():
        r = np.array(rows)
        print(f"lambda {lam:g}: test d acc {100 * r[:, 0].mean():+.2f} points, d minDCF "
              f"{r[:, 1].mean():+.4f} +- {r[:, 1].std(ddof=1) / np.sqrt(len(r)):.4f}")


if __name__ == "__main__":
    main()
