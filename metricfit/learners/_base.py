"""The pair API every learner shares (pair_score, thresholds, decision_function, predict,
score), built on a learner's ``transform`` and ``threshold_``.

Pairs are vectors (n_pairs, 2, d) or, when the learner's ``preprocessor`` holds the points
(n_points, d), index pairs (n_pairs, 2) into them (metric-learn's convention): those are
scored by transforming the points once and gathering their embeddings chunk by chunk.
"""

import numpy as np
from sklearn.base import ClassifierMixin, TransformerMixin, clone
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_is_fitted

from .. import metrics
from ..pairs import check_pair_labels
from ..pairs.index import (
    CHUNK_SIZE, IndexPairs, check_pair_input, is_dask, pair_blocks, read_rows, row_blocks,
)


def validation_split(s, validation_fraction, random_state):
    """Boolean mask of the training pairs after holding out a stratified validation share
    (for early stopping); the held-out pairs are ``~mask``."""
    train = np.ones(s.shape[0], dtype=bool)
    held_out = train_test_split(np.arange(s.shape[0]), test_size=validation_fraction,
                                stratify=s, random_state=random_state)[1]
    train[held_out] = False
    return train


def validation_accuracy(s, scores):
    """maxDA of ``scores`` on labelled pairs; 0 (the worst) when a diverged model gives
    non-finite scores, so early stopping passes it over instead of failing."""
    if not np.isfinite(scores).all():
        return 0.0
    return metrics.max_decision_accuracy(s, scores)[0]


def cosine_rows(P1, P2):
    """Row-wise cosine similarity of (n, k) arrays; 0 where an embedding is zero."""
    dots = np.einsum("ij,ij->i", P1, P2)
    norms = np.linalg.norm(P1, axis=1) * np.linalg.norm(P2, axis=1)
    out = np.zeros_like(dots)
    np.divide(dots, norms, out=out, where=norms > 0)
    return out


def embed_points(transform, points):
    """``transform`` of every point (n_points, k), a block of rows at a time."""
    n, d = points.shape
    blocks = row_blocks(n, d, np.dtype(points.dtype).itemsize)
    if type(points) is np.ndarray:
        blocks = [slice(0, n)]  # in memory: one product, no concatenation
    embedded = [np.asarray(transform(read_rows(points, rows, points.dtype))) for rows in blocks]
    return embedded[0] if len(embedded) == 1 else np.concatenate(embedded)


def score_index_pairs(transform, score, pairs, chunk_size=CHUNK_SIZE):
    """``score(E[p_i], E[q_i])`` for :class:`IndexPairs`, with ``E = transform(points)``.

    The points are embedded once (only those the pairs use when there are fewer pairs than
    points); pairs are gathered ``chunk_size`` at a time, so memory is O(n_points k).
    """
    points, index = pairs.points, pairs.index
    if is_dask(index):
        index = np.asarray(index)  # one compute, not one per chunk
    if 2 * index.shape[0] < points.shape[0]:
        used, local = np.unique(np.asarray(index), return_inverse=True)
        points, index = read_rows(points, used, points.dtype), local.reshape(-1, 2)
    E = embed_points(transform, points)  # (n_points, k)
    scores = [score(E[np.asarray(index[rows, 0])], E[np.asarray(index[rows, 1])])
              for rows in pair_blocks(index.shape[0], chunk_size)]
    return np.concatenate(scores)


class PairLearnerMixin(ClassifierMixin, TransformerMixin):
    """The pair API every learner shares, built on ``transform`` and ``threshold_``.

    ``pair_score`` is higher-is-more-similar; ``decision_function = pair_score - threshold_``;
    ``predict`` gives +1 (similar) where the decision is >= 0, else -1. Learners whose
    natural output is a distance set ``_score_kind = "distance"``: they score by minus the
    squared Euclidean distance of the embeddings and also offer ``pair_distance``.
    """

    _score_kind = "cosine"

    def __sklearn_clone__(self):
        """``clone`` deep-copies parameters: a memmap, streamed or Dask ``preprocessor``
        (read-only points) is shared by the clone instead, so GridSearchCV never loads it."""
        points = getattr(self, "preprocessor", None)
        if points is None or type(points) is np.ndarray:
            return super().__sklearn_clone__()
        try:
            copy = clone(self.set_params(preprocessor=None))
        finally:
            self.set_params(preprocessor=points)
        return copy.set_params(preprocessor=points)

    def _check_pairs(self, pairs, reject_zero=True):
        """Fitted check; vector pairs (n, 2, d) or :class:`IndexPairs` into the preprocessor."""
        check_is_fitted(self)
        return check_pair_input(pairs, getattr(self, "preprocessor", None),
                                n_features=self.n_features_in_, reject_zero=reject_zero)

    def pair_score(self, pairs):
        """Similarity of each pair in the learned space (higher = more similar): the cosine
        (in [-1, 1]) or, for distance learners, minus the squared distance.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2)
            Vector pairs, or integer index pairs into the points of ``preprocessor``.

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        pairs = self._check_pairs(pairs)
        if isinstance(pairs, IndexPairs):
            return score_index_pairs(self.transform, self._score_embedded, pairs)
        embedded = self.transform(pairs)  # (n, 2, k)
        return self._score_embedded(embedded[:, 0], embedded[:, 1])

    def _score_embedded(self, a, b):
        if self._score_kind == "cosine":
            return cosine_rows(a, b)
        return -np.sum((a - b) ** 2, axis=1)

    def decision_function(self, pairs):
        """``pair_score(pairs) - threshold_``: positive means similar."""
        return self.pair_score(pairs) - self.threshold_

    def predict(self, pairs):
        """+1 (similar) where ``pair_score >= threshold_``, else -1."""
        return np.where(self.decision_function(pairs) >= 0, 1, -1)

    def score(self, pairs, y, sample_weight=None):
        """Accuracy of :meth:`predict` at ``threshold_`` (y in {-1, +1} or {0, 1})."""
        s = check_pair_labels(y, len(pairs), require_both=False)
        correct = self.predict(pairs) == s
        return float(np.average(correct, weights=sample_weight))

    def calibrate_threshold(self, pairs, y, strategy="accuracy"):
        """Set ``threshold_`` (in score units) from labelled pairs.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features) or (n_pairs, 2) index pairs
        y : array-like of shape (n_pairs,), both classes present
        strategy : {'accuracy', 'eer'}, default='accuracy'
            'accuracy' maximises the decision accuracy on these pairs (maxDA, seed 004
            eq. 14); 'eer' puts the threshold where false accepts equal false rejects.

        Returns
        -------
        self
        """
        s = check_pair_labels(y, len(pairs), require_both=True)
        self.threshold_ = float(metrics.calibrate_threshold(s, self.pair_score(pairs), strategy))
        return self
