"""
A custom loss and a custom mapping plugged into the siamese grid
================================================================

A siamese learner is one *mapping* ``f(., theta)``, one *pair loss* ``J(a, b, s)`` on the
two embeddings and one *optimizer* (seed 004 Fig. 1). :class:`metricfit.mappings.MappedObjective`
composes any mapping with any loss into ``theta -> (cost, gradient)``, and
:func:`metricfit.optim.minimize` runs L-BFGS or momentum SGD on it. A new loss is a function
``(a, b, s) -> (mean J, dJ/da, dJ/db)``; a new mapping a :class:`metricfit.mappings.Mapping`
subclass with ``shapes``, ``init``, ``forward`` and ``backward``. Neither touches the rest.

Here: DrLIM's contrastive loss (seed 003) with the built-in :class:`~metricfit.mappings.Linear`
mapping, and a *softsign* mapping ``z = p / (1 + |p|)``, ``p = W x + h`` with the built-in
TSML loss; each gradient is checked against finite differences before it is trusted.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import check_grad
from sklearn.datasets import load_digits

from metricfit import WPCA
from metricfit.losses import tsml
from metricfit.mappings import Linear, MappedObjective, Mapping
from metricfit.metrics import equal_error_rate, roc_curve
from metricfit.optim import minimize
from metricfit.pairs import sample_pairs

# %%
# A custom loss: contrastive, with margin ``m`` on the Euclidean distance ``d = |a - b|``:
# ``J = d^2 / 2`` for a similar pair, ``max(0, m - d)^2 / 2`` for a dissimilar one.


def contrastive(a, b, s, margin=1.0):
    diff = a - b  # (n, k)
    d = np.sqrt((diff * diff).sum(axis=1))
    similar = s > 0
    hinge = np.maximum(0.0, margin - d)
    J = np.where(similar, 0.5 * d * d, 0.5 * hinge * hinge)
    # dJ/da: diff for similar pairs; -(m - d) diff / d for dissimilar pairs inside the margin
    scale = np.where(similar, 1.0, -hinge / np.where(d > 0, d, 1.0))
    dJda = scale[:, None] * diff / len(s)  # gradients of the *mean* loss
    return J.mean(), dJda, -dJda


# %%
# A custom mapping: ``Z = softsign(X W^T + h)``, with ``softsign'(p) = 1 / (1 + |p|)^2``.


class Softsign(Mapping):
    def __init__(self, n_features, n_components):
        self.n_features, self.n_components = n_features, n_components

    @property
    def shapes(self):
        return {"W": (self.n_components, self.n_features), "h": (self.n_components,)}

    def init(self, random_state=None):
        rng = np.random.default_rng(random_state)
        W = np.eye(self.n_components, self.n_features)
        W += 0.01 * rng.standard_normal(W.shape)
        return self.pack(W=W, h=np.zeros(self.n_components))

    def forward(self, theta, X):
        blocks = self.unpack(theta)
        P = X @ blocks["W"].T + blocks["h"]
        return P / (1.0 + np.abs(P)), (X, P)

    def backward(self, theta, cache, dZ):
        X, P = cache
        dP = dZ / (1.0 + np.abs(P)) ** 2
        return np.concatenate([(dP.T @ X).ravel(), dP.sum(axis=0)])


# %%
# Pairs of whitened digits: images 0-1199 train, the rest test.
X, labels = load_digits(return_X_y=True)
X = X / 16.0
rng = np.random.default_rng(0)
order = rng.permutation(len(X))
train, test = order[:1200], order[1200:]
Z = WPCA(n_components=32).fit(X[train]).transform(X)
index, y = sample_pairs(labels[train], 1500, 1500, random_state=0)
test_index, y_test = sample_pairs(labels[test], 500, 500, random_state=1)
X1, X2 = Z[train][index[:, 0]], Z[train][index[:, 1]]
T1, T2 = Z[test][test_index[:, 0]], Z[test][test_index[:, 1]]
d, k = Z.shape[1], 16

systems = {
    "TSML loss, linear": (tsml.embedding_cost_grad, Linear(d, k), "cosine"),
    "contrastive loss, linear": (contrastive, Linear(d, k), "distance"),
    "TSML loss, softsign": (tsml.embedding_cost_grad, Softsign(d, k), "cosine"),
}

# %%
# Check each composed gradient on a few pairs, then fit with L-BFGS.


def score(mapping, theta, A, B, kind):
    a, b = mapping.transform(theta, A), mapping.transform(theta, B)
    if kind == "distance":
        return -np.linalg.norm(a - b, axis=1)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


print(f"{'system':<26} {'grad check':>10} {'iters':>6} {'test EER %':>10}")
roc = {}
for name, (loss, mapping, kind) in systems.items():
    theta0 = mapping.init(0)
    few = np.r_[:20, len(y) - 20:len(y)]
    small = MappedObjective(loss, mapping, X1[few], X2[few], y[few], lam=1e-3)
    error = check_grad(lambda t, f=small: f(t)[0], lambda t, f=small: f(t)[1], theta0 + 0.05)
    objective = MappedObjective(loss, mapping, X1, X2, y, lam=1e-3)
    result = minimize(objective, theta0, solver="lbfgs", max_iter=100)
    s = score(mapping, result.x, T1, T2, kind)
    roc[name] = roc_curve(y_test, s)[:2]
    print(f"{name:<26} {error:10.1e} {result.nit:6d} "
          f"{100 * equal_error_rate(y_test, s)[0]:10.1f}")

fig, ax = plt.subplots(figsize=(4.5, 4))
for name, (far, tar) in roc.items():
    ax.plot(far, tar, label=name)
ax.set(xlabel="false accept rate", ylabel="true accept rate", title="test pairs")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
