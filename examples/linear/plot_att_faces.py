"""
Unseen faces: AT&T identity-disjoint folds
==========================================

The real task: verify pairs of faces of people never seen in training. The AT&T (ORL) faces,
40 subjects x 10 images, are split *by subject*: 24 subjects train, 8 choose the threshold,
8 test. Images are averaged 2x2 to 56x46 pixels and whitened by WPCA (fitted on training
images only); the cosine baseline, WCCN and TSML started from WCCN are compared.

The images come from ``$METRICFIT_DATA`` (default: ``../shared/data`` beside the repository,
see :func:`metricfit.datasets.get_data_home`); without them this example says so and stops.
"""

import matplotlib.pyplot as plt
import numpy as np

from metricfit import TSML, WCCN, WPCA, CosineSimilarity
from metricfit.datasets import load_att_faces
from metricfit.metrics import (
    accuracy_at_threshold,
    calibrate_threshold,
    equal_error_rate,
    roc_curve,
)
from metricfit.pairs import identity_folds, sample_pairs

try:
    faces = load_att_faces()
except FileNotFoundError as missing:
    faces = None
    print(f"AT&T faces not found, example skipped: {missing}")

# %%
# Subjects to folds, pairs within each part (all same-subject pairs, as many others).
if faces is not None:
    images = faces.images.astype(np.float64) / 255.0
    small = images.reshape(-1, 56, 2, 46, 2).mean(axis=(2, 4)).reshape(len(images), -1)
    labels = faces.labels
    fold = identity_folds(labels, n_folds=5, random_state=0)
    rows = {name: np.flatnonzero(np.isin(fold, f))
            for name, f in [("train", [0, 1, 2]), ("val", [3]), ("test", [4])]}
    Z = WPCA(n_components=60).fit(small[rows["train"]]).transform(small)

    def pairs_of(part, seed):
        r = rows[part]
        index, y = sample_pairs(labels[r], 10**6, 10**6, random_state=seed)  # capped: all
        similar = np.flatnonzero(y == 1)
        dissimilar = np.random.default_rng(seed).choice(np.flatnonzero(y == -1),
                                                        similar.size, replace=False)
        keep = np.concatenate([similar, dissimilar])
        return Z[r][index[keep]], y[keep]

    train, y_train = pairs_of("train", 0)
    val, y_val = pairs_of("val", 1)
    test, y_test = pairs_of("test", 2)
    print("pairs: train", len(y_train), "validation", len(y_val), "test", len(y_test))

    wccn = WCCN().fit(train, y_train)  # similar pairs as classes
    cosine = CosineSimilarity().fit(train, y_train)
    scorers = {
        "cosine (WPCA)": lambda p: cosine.pair_score(p),
        "WCCN": lambda p: cosine.pair_score(wccn.transform(p)),
        "TSML-WCCN": TSML(lam=1e-2, init="wccn").fit(train, y_train).pair_score,
    }
    print(f"{'method':<14} {'accuracy %':>10} {'EER %':>6}")
    fig, ax = plt.subplots(figsize=(4.5, 4))
    for name, score in scorers.items():
        threshold = calibrate_threshold(y_val, score(val))
        s = score(test)
        print(f"{name:<14} {100 * accuracy_at_threshold(y_test, s, threshold):10.1f} "
              f"{100 * equal_error_rate(y_test, s)[0]:6.1f}")
        far, tar, _ = roc_curve(y_test, s)
        ax.plot(far, tar, label=name)
    ax.set(xlabel="false accept rate", ylabel="true accept rate",
           title="AT&T, 8 unseen subjects")
    ax.legend()
    fig.tight_layout()
    plt.show()
