"""The one registry of metricfit's estimators for the shared test suites.

One line per estimator: ``entry(KIND, lambda: Estimator(small, fast, settings))``.

KIND says what the estimator takes (and so which synthetic data the suites give it):

``VECTOR_PAIRS``
    ``fit(pairs, y)`` with pairs (n_pairs, 2, n_features) and pair labels; scores such pairs.
``INDEX_PAIRS``
    The same learner given its points as ``preprocessor`` (the suites set it with
    ``set_params(preprocessor=points)``): ``fit(index, y)`` with (n_pairs, 2) integer rows.
``POINTS``
    ``fit(X, identities)`` on labelled points (n_samples, n_features), e.g. MkNN; scores
    vector pairs of such points.
``IMAGE_PAIRS``
    ``fit(pairs, y)`` with image pairs (n_pairs, 2, height, width), e.g. SiameseCNN.

The factory takes no argument and returns an unfitted estimator, kept small (a few
iterations) so the whole suite stays fast; fix ``random_state`` where there is one. A new
estimator joins every suite driven by ``REGISTRY`` (tests/test_common.py,
tests/test_sklearn_labels.py, tests/test_scale.py) by adding its line below.
"""

from collections import namedtuple

import numpy as np

from metricfit import CSML, DDML, LDML, NCA, PLDA, TSML, CosineSimilarity, MkNN, Siamese, SiameseCNN
from metricfit.backend import LDA
from metricfit.learners import LFDA, LMNN, MLKR, RCA, Covariance, RCA_Supervised
from metricfit.learners.fusion import ScoreFusion
from metricfit.learners.itml import ITML, ITML_Supervised
from metricfit.learners.lsml import LSML_Supervised
from metricfit.learners.mmc import MMC, MMC_Supervised
from metricfit.learners.scml import SCML_Supervised
from metricfit.learners.sdml import SDML, SDML_Supervised

VECTOR_PAIRS, INDEX_PAIRS, POINTS, IMAGE_PAIRS = ("vector_pairs", "index_pairs", "points",
                                                   "image_pairs")

Entry = namedtuple("Entry", "kind factory")
N_FEATURES = 6


def entry(kind, factory):
    return Entry(kind, factory)


def identity_points(n_identities=12, per=6, d=N_FEATURES, seed=0, dtype=np.float64):
    """Points of ``n_identities`` well-separated identities (n, d) and their labels."""
    rng = np.random.default_rng(seed)
    centres = 3.0 * rng.normal(size=(n_identities, d)) + 1.0
    ids = np.repeat(np.arange(n_identities), per)
    X = centres[ids] + rng.normal(size=(ids.size, d))
    return X.astype(dtype), ids


def vector_pairs(n_pairs=120, d=N_FEATURES, seed=0, dtype=np.float64):
    """Pairs (n, 2, d) of identity points, half similar (label +1), half dissimilar (-1):
    separable but not perfectly, so every scorer takes a non-trivial value."""
    X, ids = identity_points(d=d, seed=seed)
    index, y = index_pairs_of(ids, n_pairs, seed)
    return X[index].astype(dtype), y


def index_pairs_of(ids, n_pairs, seed):
    rng = np.random.default_rng(seed + 1)
    same, diff = [], []
    while len(same) < n_pairs // 2 or len(diff) < n_pairs - n_pairs // 2:
        i, j = rng.integers(ids.size, size=2)
        if i == j:
            continue
        (same if ids[i] == ids[j] else diff).append((i, j))
    index = np.array(same[: n_pairs // 2] + diff[: n_pairs - n_pairs // 2])
    y = np.r_[np.ones(n_pairs // 2), -np.ones(n_pairs - n_pairs // 2)].astype(int)
    order = rng.permutation(n_pairs)
    return index[order], y[order]


def image_pairs(n_pairs=48, seed=0, shape=(12, 10), dtype=np.float64):
    """Image pairs (n, 2, H, W): noisy copies of 4 prototypes with a brightness offset."""
    rng = np.random.default_rng(seed)
    protos = np.random.default_rng(99).normal(size=(4,) + shape)
    first = rng.integers(4, size=n_pairs)
    other = (first + rng.integers(1, 4, size=n_pairs)) % 4
    y = np.where(np.arange(n_pairs) % 2 == 0, 1, -1)
    second = np.where(y == 1, first, other)
    pairs = np.stack([protos[first], protos[second]], axis=1)
    pairs = pairs + 0.5 * rng.normal(size=(n_pairs, 2, 1, 1)) + 0.6 * rng.normal(size=pairs.shape)
    return pairs.astype(dtype), y


def _fusion():
    """ScoreFusion over two base scorers fitted (once, here) on other pairs."""
    pairs, y = vector_pairs(seed=7)
    return ScoreFusion([("cos", CosineSimilarity().fit(pairs, y)),
                        ("ldml", LDML(max_iter=30).fit(pairs, y))], method="logistic")


REGISTRY = {
    "TSML": entry(VECTOR_PAIRS, lambda: TSML(n_components=4, max_iter=30)),
    "CSML": entry(VECTOR_PAIRS, lambda: CSML(max_iter=30)),
    "DDML": entry(VECTOR_PAIRS, lambda: DDML(max_iter=30)),
    "TSML-sgd": entry(VECTOR_PAIRS, lambda: TSML(solver="sgd", max_iter=200, random_state=0)),
    "LDML": entry(VECTOR_PAIRS, lambda: LDML(max_iter=30)),
    "LDML-psd": entry(VECTOR_PAIRS, lambda: LDML(constraint="psd", max_iter=30)),
    "CosineSimilarity": entry(VECTOR_PAIRS, lambda: CosineSimilarity()),
    "ScoreFusion": entry(VECTOR_PAIRS, _fusion),
    "TSML-index": entry(INDEX_PAIRS, lambda: TSML(n_components=4, max_iter=30)),
    "LDML-index": entry(INDEX_PAIRS, lambda: LDML(max_iter=30)),
    "CosineSimilarity-index": entry(INDEX_PAIRS, lambda: CosineSimilarity()),
    "MkNN": entry(POINTS, lambda: MkNN(n_neighbors=4)),
    "Siamese-contrastive-tanh": entry(VECTOR_PAIRS, lambda: Siamese(
        loss="contrastive", mapping="tanh", n_components=3, max_iter=20, random_state=0)),
    "PLDA": entry(VECTOR_PAIRS, lambda: PLDA()),
    "PLDA-index": entry(INDEX_PAIRS, lambda: PLDA()),
    "PLDA-tol-components": entry(VECTOR_PAIRS, lambda: PLDA(
        n_iter=200, tol=1e-3, identities="components")),
    "NCA": entry(POINTS, lambda: NCA(n_components=2, max_iter=20)),
    "NCA-mlp": entry(POINTS, lambda: NCA(n_components=2, mapping="mlp", n_hidden=8, max_iter=20,
                                         random_state=0)),
    "SiameseCNN": entry(IMAGE_PAIRS, lambda: SiameseCNN(
        n_components=4, n_maps=(3, 6, 8), batch_size=8, max_epochs=2, random_state=0)),
    "TSML-lda-init": entry(VECTOR_PAIRS, lambda: TSML(init=LDA(), max_iter=30)),
    # issue 26 (i26-base): the Mahalanobis learners fitted on labelled points
    "Covariance": entry(POINTS, lambda: Covariance()),
    "LMNN": entry(POINTS, lambda: LMNN(n_neighbors=2, max_iter=20)),
    "MLKR": entry(POINTS, lambda: MLKR(n_components=3, max_iter=20)),
    "LFDA": entry(POINTS, lambda: LFDA(n_components=3)),
    "RCA": entry(POINTS, lambda: RCA()),  # the identities stand for chunklets
    "RCA_Supervised": entry(POINTS, lambda: RCA_Supervised(n_chunks=20, random_state=0)),
}

# issue 26 (i26-catalogue): ITML, MMC, SDML (pairs and labelled points), LSML_Supervised and
# SCML_Supervised (labelled points); LSML and SCML take quadruplets / triplets: their own tests
REGISTRY.update({
    "ITML": entry(VECTOR_PAIRS, lambda: ITML(max_iter=50, random_state=0)),
    "ITML-index": entry(INDEX_PAIRS, lambda: ITML(max_iter=50, random_state=0)),
    "ITML_Supervised": entry(POINTS, lambda: ITML_Supervised(max_iter=50, random_state=0)),
    "MMC": entry(VECTOR_PAIRS, lambda: MMC(max_iter=30)),
    "MMC-diagonal": entry(VECTOR_PAIRS, lambda: MMC(diagonal=True, max_iter=30)),
    "MMC-index": entry(INDEX_PAIRS, lambda: MMC(max_iter=30)),
    "MMC_Supervised": entry(POINTS, lambda: MMC_Supervised(max_iter=30, random_state=0)),
    "SDML": entry(VECTOR_PAIRS, lambda: SDML(balance_param=1e-3)),
    "SDML-index": entry(INDEX_PAIRS, lambda: SDML(balance_param=1e-3)),
    "SDML_Supervised": entry(POINTS, lambda: SDML_Supervised(balance_param=1e-3,
                                                             random_state=0)),
    "LSML_Supervised": entry(POINTS, lambda: LSML_Supervised(max_iter=50, random_state=0)),
    "SCML_Supervised": entry(POINTS, lambda: SCML_Supervised(
        n_basis=12, max_iter=300, output_iter=100, random_state=0)),
})


class Case:
    """What a suite needs to exercise one registered estimator: fit arguments, pairs to
    score (vector or index pairs as the estimator takes them) with labels, and helpers to
    change the scale / dtype / feature count of the data."""

    def __init__(self, name, dtype=np.float64, scale=1.0):
        self.name = name
        self.kind, self.factory = REGISTRY[name]
        self.dtype, self.scale = dtype, scale

    def estimator(self):
        est = self.factory()
        if self.kind == INDEX_PAIRS:
            est.set_params(preprocessor=self.points)
        return est

    @property
    def points(self):
        X, _ = identity_points(dtype=np.float64)
        return (self.scale * X).astype(self.dtype)

    def fit_data(self):
        """(X, y) for ``fit``."""
        if self.kind == POINTS:
            X, ids = identity_points()
            return (self.scale * X).astype(self.dtype), ids
        return self.pairs(seed=0)

    def pairs(self, seed=1, n_pairs=120):
        """Labelled pairs (X, y) the estimator scores, in its input form."""
        if self.kind == IMAGE_PAIRS:
            P, y = image_pairs(n_pairs=min(n_pairs, 48), seed=seed)
        elif self.kind == INDEX_PAIRS:
            _, ids = identity_points()
            return index_pairs_of(ids, n_pairs, seed)
        else:
            P, y = vector_pairs(n_pairs=n_pairs, seed=seed)
        return (self.scale * P).astype(self.dtype), y

    def wrong_features(self, X):
        """X with one feature too many (one pixel column more for images); None where the
        input has no feature axis of its own (index pairs)."""
        if self.kind == INDEX_PAIRS:
            return None
        return np.concatenate([X, X[..., :1]], axis=-1)


NAMES = list(REGISTRY)
