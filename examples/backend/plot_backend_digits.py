"""
The verification back-end on digits: PLDA, calibration, DCF, DET, enrolment, s-norm
===================================================================================

What a speaker- or face-verification system does after its embedding, on scikit-learn's
bundled digits: three scorers (the cosine of whitened vectors, a learned TSML metric and
PLDA), their scores calibrated into log-likelihood ratios (LLRs) on validation trials, the
costs of the field on test trials (minDCF, actDCF, Cllr, EER) and their DET curves, models
enrolled from several samples, and s-norm with a cohort.

The digits have only ten classes, so the images (not the classes) are split: 900 images
train, 450 give the validation trials, 447 the test trials; the ten classes appear in all
three. On faces or voices the identities themselves would be disjoint
(:doc:`/user_guide/backend`).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.pipeline import make_pipeline

from metricfit import PLDA, TSML, WPCA, CosineSimilarity, LengthNormalizer
from metricfit.backend import LinearCalibration, PAVCalibration, ScoreNormalizer, score_sets
from metricfit.metrics import act_dcf, cllr, equal_error_rate, min_cllr, min_dcf, pav_llr, plot_det
from metricfit.pairs import sample_pairs

X, labels = load_digits(return_X_y=True)
X = X / 16.0
order = np.random.default_rng(0).permutation(len(X))
train, val, test = order[:900], order[900:1350], order[1350:]


def trials(rows, n_target, n_non, seed):
    """Vector pairs of the images ``rows``: similar (target) pairs first, then dissimilar."""
    index, y = sample_pairs(labels[rows], n_target, n_non, random_state=seed)
    return X[rows][index], y


train_pairs, y_train = trials(train, 2000, 2000, 0)
val_pairs, y_val = trials(val, 1000, 1000, 1)
test_pairs, y_test = trials(test, 1000, 9000, 2)  # P_target 0.01 needs many non-targets

# %%
# Three scorers
# -------------
# All three start from a 30-dimensional whitened PCA fitted on the training images. The
# cosine needs nothing more; TSML learns a metric from the training pairs; PLDA is fitted on
# the training *images with their labels* (the unrestricted setting), after length
# normalisation. Only PLDA's scores are log-likelihood ratios by construction.

systems = {
    "cosine": make_pipeline(WPCA(n_components=30), CosineSimilarity()),
    "TSML": make_pipeline(WPCA(n_components=30), TSML(lam=1e-2)),
    "PLDA": make_pipeline(WPCA(n_components=30), LengthNormalizer(), PLDA()),
}
systems["cosine"].fit(train_pairs, y_train)
systems["TSML"].fit(train_pairs, y_train)
systems["PLDA"].fit(X[train], labels[train])  # the training images and their classes


def raw_scores(model, pairs):
    """The last step's ``pair_score`` (``decision_function`` subtracts its threshold)."""
    return model[-1].pair_score(model[:-1].transform(pairs))


# %%
# Calibration on the validation trials
# ------------------------------------
# Each system's validation scores train a :class:`~metricfit.backend.LinearCalibration` at
# the operating point we report, P_target = 0.01; the map is then applied to the test
# scores. The validation trials share no image with the training or test trials. minDCF,
# EER and minCllr depend only on the order of the scores; actDCF and Cllr judge the LLR
# values themselves, so they are where calibration shows.

P = 0.01
llr = {}
print(f"{'system':<7} {'EER %':>6} {'minDCF':>7} {'actDCF raw':>10} {'actDCF':>7} "
      f"{'Cllr':>6} {'minCllr':>7}")
for name, model in systems.items():
    calibration = LinearCalibration(prior=P).fit(raw_scores(model, val_pairs), y_val)
    raw = raw_scores(model, test_pairs)
    llr[name] = calibration.transform(raw)
    print(f"{name:<7} {100 * equal_error_rate(y_test, raw)[0]:6.2f} "
          f"{min_dcf(y_test, raw, P)[0]:7.3f} {act_dcf(y_test, raw, P):10.3f} "
          f"{act_dcf(y_test, llr[name], P):7.3f} {cllr(y_test, llr[name]):6.3f} "
          f"{min_cllr(y_test, raw):7.3f}")

# %%
# "actDCF raw" reads the raw scores as LLRs: meaningful for PLDA only (a cosine of 0.9 is
# no log-likelihood ratio). The gap between actDCF and minDCF is what calibration still
# loses on the test trials. A non-parametric :class:`~metricfit.backend.PAVCalibration`
# fitted on the same validation trials can be compared with the linear one; ``pav_llr``
# gives the best monotone calibration *on the test trials themselves*, a bound no
# calibration fitted elsewhere reaches (its Cllr is minCllr).

plda_val, plda_test = (raw_scores(systems["PLDA"], p) for p in (val_pairs, test_pairs))
pav = PAVCalibration().fit(plda_val, y_val).transform(plda_test)
oracle = pav_llr(y_test, plda_test)
for name, values in [("linear on validation", llr["PLDA"]), ("PAV on validation", pav),
                     ("PAV on test (oracle)", oracle)]:
    print(f"PLDA, {name:<21} actDCF {act_dcf(y_test, values, P):.3f}  "
          f"Cllr {cllr(y_test, values):.3f}")

# %%
# DET curves
# ----------
# False non-match against false match rate on normal-deviate axes
# (:func:`metricfit.metrics.plot_det`); the legend gives each curve's EER.

fig, ax = plt.subplots(figsize=(5, 5))
plot_det({name: (y_test, s) for name, s in llr.items()}, ax=ax)
fig.tight_layout()

# %%
# Models enrolled from several samples
# ------------------------------------
# A claimed identity is often enrolled from several samples. Here 100 models, 10 per class,
# each enrolled from three test images of its class, are each tested against 10 other test
# images of the same class (target trials) and 10 of other classes (non-target).
# :func:`~metricfit.backend.score_sets` scores the sets by PLDA's closed form (``'plda'``),
# by the mean embedding, by the mean or the max of the 3 pairwise scores, or by a Gaussian
# model of the enrolment embeddings (``'gaussian'``: its impostor term is taken over all
# the claims made against a model in the call, so each model must be given with many test
# samples). "1 sample" enrols the first of the three images only.

rng = np.random.default_rng(3)
enrol, probe, y_enrol = [], [], []
for c in range(10):
    mine, others = test[labels[test] == c], test[labels[test] != c]
    for _ in range(10):
        model = rng.choice(mine, 3, replace=False)
        targets = rng.choice(np.setdiff1d(mine, model), 10, replace=False)
        impostors = rng.choice(others, 10, replace=False)
        for image in np.r_[targets, impostors]:
            enrol.append(X[model])
            probe.append(X[image])
        y_enrol += [1] * 10 + [-1] * 10
y_enrol = np.array(y_enrol)

print(f"{'enrolment':<15} {'PLDA EER %':>10} {'TSML EER %':>10}")
one = [e[:1] for e in enrol]
row = [100 * equal_error_rate(y_enrol, score_sets(systems[n], one, probe))[0]
       for n in ("PLDA", "TSML")]
print(f"{'1 sample':<15} {row[0]:10.2f} {row[1]:10.2f}")
for method in ("plda", "mean-embedding", "mean-score", "max-score", "gaussian"):
    row = []
    for name in ("PLDA", "TSML"):
        if method == "plda" and name != "PLDA":  # PLDA's closed form needs a PLDA
            row.append(f"{'-':>10}")
            continue
        s = score_sets(systems[name], enrol, probe, method=method)
        row.append(f"{100 * equal_error_rate(y_enrol, s)[0]:10.2f}")
    print(f"{method:<15} {row[0]} {row[1]}")

# %%
# Score normalisation
# -------------------
# s-norm standardises each trial's score by the scores of its two sides against a cohort:
# here 300 training images (on faces, a cohort is of identities outside the trials; the
# digits have no spare classes, so this cohort shares the test trials' ten classes).

cohort = X[train[:300]]
print(f"{'system':<7} {'EER %':>6} {'s-norm EER %':>12} {'minDCF':>7} {'s-norm minDCF':>13}")
for name, model in systems.items():
    raw = raw_scores(model, test_pairs)
    snorm = ScoreNormalizer(model, cohort, "s-norm").pair_score(test_pairs)
    print(f"{name:<7} {100 * equal_error_rate(y_test, raw)[0]:6.2f} "
          f"{100 * equal_error_rate(y_test, snorm)[0]:12.2f} {min_dcf(y_test, raw, P)[0]:7.3f} "
          f"{min_dcf(y_test, snorm, P)[0]:13.3f}")

plt.show()
