"""
Learning curves: momentum SGD against L-BFGS
============================================

Every siamese learner takes ``solver='lbfgs'`` (scipy's L-BFGS-B on the full-batch cost and
gradient) or ``solver='sgd'`` (momentum SGD on balanced mini-batches with early stopping on a
held-out share of the training pairs, seed 004 Algorithm 1). The ``callback(params, n_iter)``
of the learner is called after every L-BFGS iteration and every SGD check; here it scores
the current matrix on held-out pairs, so both solvers are compared on the same curve:
held-out maxDA against wall time.
"""

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from metricfit import TSML, WPCA
from metricfit.metrics import max_decision_accuracy
from metricfit.pairs import sample_pairs

X, labels = load_digits(return_X_y=True)
X = X / 16.0
rng = np.random.default_rng(0)
order = rng.permutation(len(X))
train, held_out = order[:1200], order[1200:]
Z = WPCA(n_components=32).fit(X[train]).transform(X)

index, y = sample_pairs(labels[train], 2000, 2000, random_state=0)
pairs = Z[train][index]
val_index, y_val = sample_pairs(labels[held_out], 500, 500, random_state=1)
val_pairs = Z[held_out][val_index]


def held_out_maxda(A):
    a, b = val_pairs[:, 0] @ A.T, val_pairs[:, 1] @ A.T
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return max_decision_accuracy(y_val, cosine)[0]


def run(**params):
    trace, start = [], time.perf_counter()

    def callback(A, n_iter):
        elapsed = time.perf_counter() - start
        trace.append((elapsed, held_out_maxda(A)))

    TSML(lam=1e-3, callback=callback, random_state=0, **params).fit(pairs, y)
    return np.array(trace)


# %%
# Warm up the numba kernels once, so that compile time does not count in the curves.
few = np.r_[:50, len(y) - 50:len(y)]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # two iterations do not converge: not the point here
    TSML(max_iter=2).fit(pairs[few], y[few])

curves = {
    "L-BFGS": run(solver="lbfgs", max_iter=60),
    "SGD, lr 1e-2": run(solver="sgd", learning_rate=1e-2, batch_size=32, max_iter=3000,
                        validation_interval=50, n_iter_no_change=10),
    "SGD, lr 1e-3": run(solver="sgd", learning_rate=1e-3, batch_size=32, max_iter=3000,
                        validation_interval=50, n_iter_no_change=10),
}

print(f"{'solver':<14} {'checks':>6} {'best maxDA':>10} {'time to best (s)':>17}")
for name, trace in curves.items():
    best = int(np.argmax(trace[:, 1]))
    print(f"{name:<14} {len(trace):6d} {trace[best, 1]:10.3f} {trace[best, 0]:17.2f}")

fig, ax = plt.subplots(figsize=(5.5, 3.5))
for name, trace in curves.items():
    ax.plot(trace[:, 0], trace[:, 1], marker=".", label=name)
ax.set(xlabel="wall time (s)", ylabel="held-out maxDA", title="TSML on digits pairs")
ax.legend()
fig.tight_layout()
plt.show()
