"""
Fusing the scores of several methods
====================================

:class:`metricfit.learners.ScoreFusion` stacks the scores of fitted pair scorers into one short
vector per pair and trains a linear classifier on them (a linear SVM as in seed 002 IV.D, or
a logistic regression as in seed 001 5.3). It must be fitted on *held-out* pairs (the
validation fold), never on the pairs the base methods were trained on. Here: the cosine of
whitened vectors, TSML, CSML and LDML on pairs of digits; three disjoint sets of images
train the methods, train the fusion and test (the ten classes are shared, as in
``metricfit verify``).
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from metricfit import CSML, LDML, TSML, WPCA, CosineSimilarity
from metricfit.learners.fusion import ScoreFusion
from metricfit.metrics import equal_error_rate, max_decision_accuracy
from metricfit.pairs import sample_pairs

# An unconstrained LDML metric may have negative eigenvalues: its pair_score uses the full
# metric, only transform() would be affected, so the warning is silenced here.
warnings.filterwarnings("ignore", message=r"\[LDML\] metric_ has negative eigenvalues")

X, labels = load_digits(return_X_y=True)
X = X / 16.0
order = np.random.default_rng(0).permutation(len(X))
train_rows, val_rows, test_rows = order[:900], order[900:1350], order[1350:]
Z = WPCA(n_components=24).fit(X[train_rows]).transform(X)


def pairs_of(rows, n, seed):
    index, y = sample_pairs(labels[rows], n, n, random_state=seed)
    return Z[rows][index], y


train, y_train = pairs_of(train_rows, 800, 0)
val, y_val = pairs_of(val_rows, 300, 1)
test, y_test = pairs_of(test_rows, 500, 2)

base = [
    ("cosine", CosineSimilarity().fit(train, y_train)),
    ("TSML", TSML(lam=1e-2).fit(train, y_train)),
    ("CSML", CSML(lam=1e-2).fit(train, y_train)),
    ("LDML", LDML(lam=1e-2).fit(train, y_train)),
]
fusion = ScoreFusion(base, method="svm").fit(val, y_val)

print(f"{'scorer':<10} {'accuracy %':>10} {'maxDA %':>8} {'EER %':>6}")
rows = []
for name, model in base + [("fusion", fusion)]:
    s = model.pair_score(test)
    rows.append((name, 100 * model.score(test, y_test), 100 * max_decision_accuracy(y_test, s)[0],
                 100 * equal_error_rate(y_test, s)[0]))
    print(f"{name:<10} {rows[-1][1]:10.1f} {rows[-1][2]:8.1f} {rows[-1][3]:6.1f}")
print("fusion weights of the standardised scores:",
      ", ".join(f"{name} {w:+.2f}" for (name, _), w in zip(base, fusion.coef_, strict=True)))

fig, ax = plt.subplots(figsize=(5, 3))
ax.bar([r[0] for r in rows], [r[3] for r in rows])
ax.set(ylabel="test EER %", title="digits pairs, held-out images")
fig.tight_layout()
plt.show()
