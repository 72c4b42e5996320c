"""
Index pairs over memory-mapped points
=====================================

With many pairs over few points, an ``(n_pairs, 2, n_features)`` array repeats every point in
every pair it belongs to. Instead give the points once, as the learner's ``preprocessor``, and
the pairs as an ``(n_pairs, 2)`` integer array of row indices (metric-learn's convention). The
points may be a :class:`numpy.memmap` that is never loaded whole: the learner reads it in
blocks of rows. Here the digits are written to a temporary ``.npy`` file, opened with
``mmap_mode='r'``, and TSML is fitted on index pairs into it; the same pairs as a 3-D array
give the same model to round-off.
"""

import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from metricfit import TSML
from metricfit.pairs import sample_pairs

X, labels = load_digits(return_X_y=True)
X = (X / 16.0).astype(np.float64)

workdir = tempfile.TemporaryDirectory()
path = Path(workdir.name) / "points.npy"
np.save(path, X)
points = np.load(path, mmap_mode="r")  # a numpy.memmap: nothing read yet
print(type(points).__name__, points.shape, points.dtype)

# %%
# Many pairs over the same 1797 points: the index array is 16 bytes a pair, the 3-D array
# 1 KiB a pair.
index, y = sample_pairs(labels, 3000, 3000, random_state=0)
print(f"index pairs: {index.nbytes / 1e6:.2f} MB;  as (n, 2, d) float64: "
      f"{index.shape[0] * 2 * X.shape[1] * 8 / 1e6:.2f} MB")

by_index = TSML(lam=1e-2, preprocessor=points).fit(index, y)
by_pairs = TSML(lam=1e-2).fit(X[index], y)

# %%
# The two fits: same matrix and same scores, up to round-off.
gap = np.abs(by_index.components_ - by_pairs.components_).max()
scores_index = by_index.pair_score(index[:500])
scores_pairs = by_pairs.pair_score(X[index[:500]])
print(f"max |A_index - A_pairs| = {gap:.1e}")
print(f"max |score difference|  = {np.abs(scores_index - scores_pairs).max():.1e}")
print(f"training accuracy: index {by_index.score(index, y):.3f}, "
      f"3-D pairs {by_pairs.score(X[index], y):.3f}")

fig, ax = plt.subplots(figsize=(4, 4))
ax.scatter(scores_pairs, scores_index, s=4)
ax.set(xlabel="score, (n, 2, d) pairs", ylabel="score, index pairs into a memmap",
       title="the same model")
fig.tight_layout()
plt.show()

del points  # close the memmap before the directory goes
workdir.cleanup()
