"""
The siamese convnet on small images
===================================

:class:`metricfit.SiameseCNN` is the network of seed 000 (Chopra, Hadsell and LeCun 2005):
two copies of one convnet (C1-S2-C3-S4-C5-F6) map the images of a pair to embeddings whose
L1 distance is the pair's *energy*; low energy means same identity. It runs on numba kernels,
without PyTorch. The network is sized from the images: on 8x8 digits it uses 3x3 and 2x2
kernels. A small net (few feature maps) and a few epochs keep this under a minute.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from metricfit import SiameseCNN
from metricfit.metrics import equal_error_rate, max_decision_accuracy
from metricfit.pairs import sample_pairs

X, labels = load_digits(return_X_y=True)
images = (X / 16.0).reshape(-1, 8, 8).astype(np.float32)
rng = np.random.default_rng(0)
order = rng.permutation(len(images))
train, test = order[:1200], order[1200:]

index, y = sample_pairs(labels[train], 1000, 1000, random_state=0)
pairs = images[train][index]  # (n_pairs, 2, 8, 8)
test_index, y_test = sample_pairs(labels[test], 400, 400, random_state=1)
test_pairs = images[test][test_index]

cnn = SiameseCNN(n_components=16, n_maps=(4, 8, 32), max_epochs=4, batch_size=32,
                 learning_rate=1e-2, momentum=0.9, random_state=0)
cnn.fit(pairs, y)

# %%
# Energies of the test pairs (new images of the same ten digits): genuine pairs low,
# impostor pairs high. ``pair_score`` is minus the energy (higher = more similar).
energy = cnn.pair_distance(test_pairs)
scores = cnn.pair_score(test_pairs)
print(f"test accuracy at the calibrated threshold: {cnn.score(test_pairs, y_test):.3f}")
print(f"test maxDA {max_decision_accuracy(y_test, scores)[0]:.3f}, "
      f"EER {equal_error_rate(y_test, scores)[0]:.3f}")

fig, ax = plt.subplots(figsize=(5, 3.5))
bins = np.linspace(0, energy.max(), 40)
ax.hist(energy[y_test == 1], bins, alpha=0.6, label="same digit")
ax.hist(energy[y_test == -1], bins, alpha=0.6, label="different digits")
ax.set(xlabel="energy ||G(x1) - G(x2)||_1", ylabel="pairs", title="SiameseCNN, 8x8 digits")
ax.legend()
fig.tight_layout()
plt.show()
