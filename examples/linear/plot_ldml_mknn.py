"""
LDML and MkNN: probabilities and neighbourhoods
===============================================

Seed 001's two methods: :class:`metricfit.LDML` learns a Mahalanobis distance ``d_M`` with a
logistic model ``p(same | x, y) = sigmoid(b - d_M(x, y))``, so ``predict_proba`` gives a
calibrated-looking probability; :class:`metricfit.MkNN` (marginalised k nearest neighbours)
scores a pair by how many of the two points' k neighbours share an identity, in any fitted
metric (here LDML's, or the Euclidean one when ``metric=None``). MkNN is fitted on *points*
with identity labels, not on pairs.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from metricfit import LDML, WPCA, MkNN
from metricfit.metrics import equal_error_rate
from metricfit.pairs import sample_pairs

X, labels = load_digits(return_X_y=True)
rng = np.random.default_rng(0)
order = rng.permutation(len(X))
train, test = order[:1200], order[1200:]
Z = WPCA(n_components=24).fit(X[train] / 16.0).transform(X / 16.0)

index, y = sample_pairs(labels[train], 1500, 1500, random_state=0)
test_index, y_test = sample_pairs(labels[test], 500, 500, random_state=1)
test_pairs = Z[test][test_index]

ldml = LDML(lam=1e-2, constraint="psd").fit(Z[train][index], y)  # PSD: a true metric for MkNN
proba = ldml.predict_proba(test_pairs)[:, 1]  # column 1: P(same identity)

# %%
# MkNN with the Euclidean metric and with LDML's; the neighbours are the training images.
mknn_l2 = MkNN(n_neighbors=10).fit(Z[train], labels[train])
mknn_ldml = MkNN(n_neighbors=10, metric=ldml).fit(Z[train], labels[train])

print(f"{'scorer':<14} {'EER %':>6}")
for name, s in [("LDML", proba), ("MkNN, L2", mknn_l2.pair_score(test_pairs)),
                ("MkNN, LDML", mknn_ldml.pair_score(test_pairs))]:
    print(f"{name:<14} {100 * equal_error_rate(y_test, s)[0]:6.1f}")

# %%
# Reliability of LDML's probability on the test pairs: the share of same-identity pairs in
# each bin of predicted probability (the diagonal is perfect calibration).
bins = np.linspace(0, 1, 11)
which = np.clip(np.digitize(proba, bins) - 1, 0, 9)
centres = (bins[:-1] + bins[1:]) / 2
observed = [np.mean(y_test[which == b] == 1) if np.any(which == b) else np.nan
            for b in range(10)]
fig, ax = plt.subplots(figsize=(4, 4))
ax.plot([0, 1], [0, 1], color="grey", lw=1)
ax.plot(centres, observed, marker="o")
ax.set(xlabel="LDML predict_proba", ylabel="share of same-identity pairs",
       title="LDML on test pairs")
fig.tight_layout()
plt.show()
