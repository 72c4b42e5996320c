"""The pair API every learner shares (pair_score, thresholds, decision_function, predict,
score), built on a learner's ``transform`` and ``threshold_``."""

import numpy as np
from sklearn.base import ClassifierMixin, TransformerMixin
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_is_fitted

from .. import metrics
from ..pairs import check_pair_labels, check_pairs


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


class PairLearnerMixin(ClassifierMixin, TransformerMixin):
    """The pair API every learner shares, built on ``transform`` and ``threshold_``.

    ``pair_score`` is higher-is-more-similar; ``decision_function = pair_score - threshold_``;
    ``predict`` gives +1 (similar) where the decision is >= 0, else -1. Learners whose
    natural output is a distance set ``_score_kind = "distance"``: they score by minus the
    squared Euclidean distance of the embeddings and also offer ``pair_distance``.
    """

    _score_kind = "cosine"

    def _check_pairs(self, pairs):
        check_is_fitted(self)
        return check_pairs(pairs, n_features=self.n_features_in_, reject_zero=True)

    def pair_score(self, pairs):
        """Similarity of each pair in the learned space (higher = more similar): the cosine
        (in [-1, 1]) or, for distance learners, minus the squared distance.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        embedded = self.transform(self._check_pairs(pairs))  # (n, 2, k)
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
        pairs : array-like of shape (n_pairs, 2, n_features)
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
