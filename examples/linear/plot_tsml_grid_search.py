"""
TSML in a Pipeline, lambda chosen by grid search
================================================

Learn a triangular similarity metric (TSML, seed 002) on pairs of scikit-learn's digits,
after a WPCA whitening, and choose the regularisation weight ``lam`` with
:class:`~sklearn.model_selection.GridSearchCV`. The pipeline is an ordinary scikit-learn
estimator on *pairs*: ``fit(pairs, y)`` with pairs of shape ``(n_pairs, 2, n_features)`` and
labels +1 (same digit) / -1 (different digits). Its default score is the accuracy at the
learned threshold; here the search ranks the candidates by maximum decision accuracy
(:func:`metricfit.metrics.get_scorer`), which does not depend on a threshold.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from metricfit import TSML, WPCA
from metricfit.metrics import equal_error_rate, get_scorer
from metricfit.pairs import sample_pairs

# %%
# Pairs of images: half of the images give the training pairs, the other half the test pairs
# (the ten classes are shared, the images are not).
X, labels = load_digits(return_X_y=True)
X = X / 16.0
rng = np.random.default_rng(0)
order = rng.permutation(len(X))
train, test = order[: len(X) // 2], order[len(X) // 2:]


def pairs_of(rows, n, seed):
    index, y = sample_pairs(labels[rows], n, n, random_state=seed)
    return X[rows][index], y  # (n_pairs, 2, 64), labels +1 / -1


pairs_train, y_train = pairs_of(train, 500, 0)
pairs_test, y_test = pairs_of(test, 500, 1)
print("training pairs", pairs_train.shape, "test pairs", pairs_test.shape)

# %%
# The search: WPCA to 32 dimensions, then TSML; three folds of the training pairs.
pipeline = make_pipeline(WPCA(n_components=32), TSML())
lams = [1e-3, 1e-2, 1e-1, 1.0]
search = GridSearchCV(pipeline, {"tsml__lam": lams}, cv=3,
                      scoring=get_scorer("max_accuracy"))
search.fit(pairs_train, y_train)

print(f"{'lam':>8} {'mean maxDA':>10} {'std':>7}")
for lam, mean, std in zip(lams, search.cv_results_["mean_test_score"],
                          search.cv_results_["std_test_score"], strict=True):
    print(f"{lam:8g} {mean:10.3f} {std:7.3f}")
print("chosen:", search.best_params_)

# %%
# The refitted pipeline on the test pairs: accuracy at the learned threshold and EER.
scores = search.decision_function(pairs_test)
print(f"test accuracy {search.score(pairs_test, y_test):.3f}  "
      f"test EER {equal_error_rate(y_test, scores)[0]:.3f}")

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.errorbar(lams, search.cv_results_["mean_test_score"],
            yerr=search.cv_results_["std_test_score"], marker="o", capsize=3)
ax.set_xscale("log")
ax.set_xlabel("lam")
ax.set_ylabel("cross-validated maxDA")
ax.set_title("TSML after WPCA on digits pairs")
fig.tight_layout()
plt.show()
