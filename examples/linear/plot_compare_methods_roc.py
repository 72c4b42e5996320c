"""
Comparing methods on one protocol: ROC and DET curves
=====================================================

Every learner is fitted on the same training pairs and scored on the same test pairs; one
table reports what seed 002 reports (accuracy at the threshold chosen on validation pairs,
maxDA, EER) and one figure shows the ROC and DET curves. The protocol is ``metricfit
verify``'s default: disjoint sets of digit images give the training, validation and test
pairs (the ten classes are shared, the images are not: ten classes are too few for an
unseen-class protocol; :ref:`sphx_glr_auto_examples_linear_plot_att_faces.py` has unseen people).
Whitening (WPCA to 32 dimensions) is fitted on the training images only.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import norm
from sklearn.datasets import load_digits

from metricfit import CSML, DDML, LDML, TSML, WCCN, WPCA, CosineSimilarity
from metricfit.metrics import (
    accuracy_at_threshold,
    calibrate_threshold,
    equal_error_rate,
    fa_fr_curve,
    max_decision_accuracy,
    roc_curve,
)
from metricfit.pairs import sample_pairs

# An unconstrained LDML metric may have negative eigenvalues: its pair_score uses the full
# metric, only transform() would be affected, so the warning is silenced here.
warnings.filterwarnings("ignore", message=r"\[LDML\] metric_ has negative eigenvalues")

X, labels = load_digits(return_X_y=True)
X = X / 16.0
rng = np.random.default_rng(0)
order = rng.permutation(len(X))
fit_rows, val_rows, test_rows = order[:900], order[900:1350], order[1350:]

wpca = WPCA(n_components=32).fit(X[fit_rows])
Z = wpca.transform(X)


def pairs_of(rows, n, seed):
    index, y = sample_pairs(labels[rows], n, n, random_state=seed)
    return Z[rows][index], y


train, y_train = pairs_of(fit_rows, 600, 0)
val, y_val = pairs_of(val_rows, 300, 1)
test, y_test = pairs_of(test_rows, 500, 2)

# %%
# The methods: the cosine of the whitened vectors (baseline), WCCN then cosine, and the
# learned metrics; a pipeline-free loop, so each method's threshold comes from the
# validation pairs.
methods = {
    "cosine": CosineSimilarity(),
    "WCCN": WCCN(),
    "CSML": CSML(lam=1e-2),
    "TSML": TSML(lam=1e-2),
    "TSML-Sim": TSML(lam=1e-2, similar_only=True),
    "DDML": DDML(lam=1e-2),
    "LDML": LDML(lam=1e-2),
}


def scores_of(name, model, pairs):
    if name == "WCCN":  # a transformer: the cosine in its space
        return CosineSimilarity().fit(train, y_train).pair_score(model.transform(pairs))
    return model.pair_score(pairs)


rows, curves = [], {}
for name, model in methods.items():
    model.fit(train, y_train)
    threshold = calibrate_threshold(y_val, scores_of(name, model, val))
    s = scores_of(name, model, test)
    rows.append((name, accuracy_at_threshold(y_test, s, threshold),
                 max_decision_accuracy(y_test, s)[0], equal_error_rate(y_test, s)[0]))
    curves[name] = s

print(f"{'method':<10} {'accuracy %':>10} {'maxDA %':>8} {'EER %':>6}")
for name, acc, mda, eer in rows:
    print(f"{name:<10} {100 * acc:10.1f} {100 * mda:8.1f} {100 * eer:6.1f}")

# %%
# ROC (true accept against false accept) and DET (both error rates on normal-deviate
# axes, where Gaussian score distributions give straight lines).
fig, (roc_ax, det_ax) = plt.subplots(1, 2, figsize=(9, 4))
for name, s in curves.items():
    far, tar, _ = roc_curve(y_test, s)
    roc_ax.plot(far, tar, label=name)
    _, far, frr = fa_fr_curve(y_test, s)
    keep = (far > 0) & (frr > 0) & (far < 1) & (frr < 1)
    det_ax.plot(norm.ppf(far[keep]), norm.ppf(frr[keep]), label=name)
roc_ax.set(xlabel="false accept rate", ylabel="true accept rate", title="ROC, test pairs")
ticks = np.array([0.01, 0.05, 0.2, 0.5])
det_ax.set(xticks=norm.ppf(ticks), xticklabels=ticks, yticks=norm.ppf(ticks),
           yticklabels=ticks, xlabel="false accept rate", ylabel="false reject rate",
           title="DET")
det_ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
