"""
Whitening: WPCA and WCCN before the cosine
==========================================

Two closed-form transformers (:class:`metricfit.WPCA`, :class:`metricfit.WCCN`) do much of a
metric's work before any learning: WPCA projects on the leading principal directions and
divides each by its standard deviation; WCCN whitens the *within-identity* covariance, so the
directions along which one identity varies count less. The cosine of whitened vectors is the
baseline every learned metric of seed 002 is measured against. This example scores pairs
of held-out digit images by the cosine of raw pixels, after WPCA, after WPCA + WCCN, and
after WPCA + TSML started from WCCN's matrix (``init='wccn'``); everything is fitted on the
other images.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from metricfit import TSML, WCCN, WPCA, CosineSimilarity
from metricfit.metrics import equal_error_rate, max_decision_accuracy
from metricfit.pairs import sample_pairs

X, labels = load_digits(return_X_y=True)
X = X / 16.0
order = np.random.default_rng(0).permutation(len(X))
train_rows, test_rows = order[:1200], order[1200:]  # training images, test images
index, y = sample_pairs(labels[train_rows], 1000, 1000, random_state=0)
test_index, y_test = sample_pairs(labels[test_rows], 500, 500, random_state=1)

wpca = WPCA(n_components=24).fit(X[train_rows])  # no labels: the training images
P = wpca.transform(X)
wccn = WCCN().fit(P[train_rows], labels[train_rows])  # points with their identity labels
W = wccn.transform(P)
tsml = TSML(lam=1e-2, init="wccn").fit(P[train_rows][index], y)

spaces = {
    "raw pixels": X,
    "WPCA": P,
    "WPCA + WCCN": W,
    "WPCA + TSML (init WCCN)": tsml.transform(P),
}
cosine = CosineSimilarity()
print(f"{'space':<25} {'maxDA %':>8} {'EER %':>6}")
results = {}
for name, V in spaces.items():
    s = cosine.fit(V[test_rows][test_index], y_test).pair_score(V[test_rows][test_index])
    results[name] = s
    print(f"{name:<25} {100 * max_decision_accuracy(y_test, s)[0]:8.1f} "
          f"{100 * equal_error_rate(y_test, s)[0]:6.1f}")

# %%
# Score distributions of the test pairs: whitening pulls the impostor cosines towards zero.
fig, axes = plt.subplots(1, len(spaces), figsize=(12, 2.8), sharey=True)
for ax, (name, s) in zip(axes, results.items(), strict=True):
    bins = np.linspace(-1, 1, 41)
    ax.hist(s[y_test == 1], bins, alpha=0.6, label="same")
    ax.hist(s[y_test == -1], bins, alpha=0.6, label="different")
    ax.set_title(name, fontsize=9)
    ax.set_xlabel("cosine")
axes[0].legend(fontsize=8)
fig.tight_layout()
plt.show()
