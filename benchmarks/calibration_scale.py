"""Linear calibration at any score scale: the fitted offset and the excess of the calibration
cost over its optimum (scikit-learn's prior-weighted logistic regression fitted to
convergence), for the same overlapping scores times 1, 1e3 and 1e5, at priors 0.5, 0.2, 0.01.

    python benchmarks/calibration_scale.py
    # an older metricfit: run from its checkout with PYTHONPATH set to it
"""

import numpy as np
from sklearn.linear_model import LogisticRegression

from metricfit.backend import LinearCalibration


def overlapping_scores(seed=1, n_tar=400, n_non=4000):
    rng = np.random.default_rng(seed)
    s = np.r_[rng.normal(1.0, 1.0, n_tar), rng.normal(-1.0, 1.2, n_non)]
    return np.r_[np.ones(n_tar), -np.ones(n_non)].astype(int), s


def reference(y, s, prior):
    """(a, b) of LLR = a s + b by scikit-learn (C = 1e12: a vanishing penalty)."""
    tar = y == 1
    weight = np.where(tar, prior / tar.sum(), (1 - prior) / (~tar).sum())
    model = LogisticRegression(C=1e12, solver="newton-cholesky", tol=1e-14, max_iter=1000)
    model.fit(s[:, None], tar.astype(int), sample_weight=weight / weight.mean())
    return float(model.coef_[0, 0]), float(model.intercept_[0] - np.log(prior / (1 - prior)))


def cost(y, llr, prior):
    tar = y == 1
    z = llr + np.log(prior / (1 - prior))
    return (prior * np.logaddexp(0, -z[tar]).mean()
            + (1 - prior) * np.logaddexp(0, z[~tar]).mean())


def main():
    y, s = overlapping_scores()
    for prior in (0.5, 0.2, 0.01):
        a, b = reference(y, s, prior)
        best = cost(y, a * s + b, prior)
        row = []
        for scale in (1.0, 1e3, 1e5):
            fitted = LinearCalibration(prior).fit(scale * s, y)
            excess = cost(y, fitted.slope_ * scale * s + fitted.offset_, prior) / best - 1
            row.append(f"x{scale:g}: offset {fitted.offset_:+.4f}, excess {100 * excess:.1e} %")
        print(f"prior {prior}: optimum offset {b:+.4f}; " + "; ".join(row))


if __name__ == "__main__":
    main()
