"""neighbourhood_pairs (DrLIM, seed 003): the k-NN graph's edges are the similar pairs, the
dissimilar pairs are distinct non-edges; reproducible; the bad-input set."""

import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors

from metricfit import Siamese
from metricfit.pairs import neighbourhood_pairs


def test_similar_pairs_are_the_knn_graph_and_dissimilar_are_not():
    X = np.random.default_rng(0).normal(size=(60, 3))
    index, y = neighbourhood_pairs(X, n_neighbors=4, random_state=0)
    nn = NearestNeighbors(n_neighbors=5).fit(X).kneighbors(X, return_distance=False)
    edges = {tuple(sorted((i, int(j)))) for i, row in enumerate(nn) for j in row if j != i}
    similar = {tuple(p) for p in index[y == 1].tolist()}
    dissimilar = [tuple(p) for p in index[y == -1].tolist()]
    assert similar == edges
    assert len(dissimilar) == len(similar) == len(set(dissimilar))
    assert not set(dissimilar) & edges and all(a < b for a, b in dissimilar)
    assert index.dtype == np.int64 and set(np.unique(y)) == {-1, 1}


def test_counts_and_reproducibility():
    X = np.random.default_rng(1).normal(size=(30, 2))
    a = neighbourhood_pairs(X, 2, n_dissimilar=100, random_state=3)
    b = neighbourhood_pairs(X, 2, n_dissimilar=100, random_state=3)
    np.testing.assert_array_equal(a[0], b[0])
    assert (a[1] == -1).sum() == 100
    X = np.random.default_rng(1).normal(size=(5, 2))  # 10 pairs; k = 3 leaves few non-edges
    index, y = neighbourhood_pairs(X, 3, random_state=0)
    assert (y == 1).sum() + (y == -1).sum() <= 10


def test_bad_input():
    X = np.random.default_rng(0).normal(size=(10, 2))
    bad = X.copy()
    bad[2, 1] = np.nan
    cases = [((bad,), "NaN"), ((np.inf * X,), "infinity"), ((X[:, 0],), "2-D"),
             ((X[:2],), "at least 3 points"), ((X, 0), "n_neighbors must be"),
             ((X, 9), "n_neighbors must be"), ((X, 2.5), "n_neighbors must be"),
             ((X, True), "n_neighbors must be"), ((X, 2, -1), "n_dissimilar must be"),
             ((X, 2, 1000), "exceeds the")]
    for args, message in cases:
        with pytest.raises(ValueError, match=message):
            neighbourhood_pairs(*args)


def test_drlim_on_index_pairs_maps_new_points():
    """Two noisy circles' neighbourhoods: a learned 2-D map puts new points near their
    own circle."""
    rng = np.random.default_rng(0)
    t = rng.uniform(0, 2 * np.pi, 120)
    X = np.c_[np.cos(t), np.sin(t), np.zeros(120), np.zeros(120)]
    X[60:, 2] = 3.0  # second manifold
    X += 0.05 * rng.normal(size=X.shape)
    index, y = neighbourhood_pairs(X, 5, random_state=0)
    est = Siamese(loss="contrastive", mapping="tanh", n_components=2, lam=1e-4,
                  preprocessor=X, max_iter=100, random_state=0).fit(index, y)
    Z = est.transform(X)
    assert Z.shape == (120, 2) and np.all(np.isfinite(Z))
    new = X[::10] + 0.02 * rng.normal(size=X[::10].shape)  # 12 new points, 6 per manifold
    Zn = est.transform(new)
    nearest = np.argmin(((Zn[:, None] - Z[None]) ** 2).sum(-1), axis=1)
    assert np.mean((nearest >= 60) == (np.arange(0, 120, 10) >= 60)) >= 0.9
