"""The pair API every learner shares (pair_score, thresholds, decision_function, predict,
score), built on a learner's ``transform`` and ``threshold_``.

Pairs are vectors (n_pairs, 2, d) or, when the learner's ``preprocessor`` holds the points
(n_points, d), index pairs (n_pairs, 2) into them (metric-learn's convention): those are
scored by transforming the points once and gathering their embeddings chunk by chunk.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.base import ClassifierMixin, TransformerMixin, clone
from sklearn.model_selection import train_test_split
from sklearn.utils import InputTags, check_random_state
from sklearn.utils.validation import check_is_fitted

from .. import metrics
from ..pairs import check_pair_labels, sample_pairs
from ..pairs.checks import pair_classes
from ..pairs.index import check_pair_input, largest_entry, score_pairs
from ..pairs.rows import cosine_rows, squared_distances
from ..pairs.tags import PairTags, score_kind
from ._xp import finite_device_scores, host_copies, predict_on_device, scores_namespace


def validation_split(s, validation_fraction, random_state, advice=""):
    """Boolean mask of the training pairs after holding out a stratified validation share
    (for early stopping); the held-out pairs are ``~mask``.

    Raises
    ------
    ValueError
        When training or validation would lack a similar or a dissimilar pair: saying how
        many pairs there are, what the split needs, then ``advice`` (the parameters to
        change).
    """
    n, n_similar = s.shape[0], int(np.sum(s == 1))
    n_val = int(np.ceil(validation_fraction * n))  # train_test_split's rounding
    if min(n_val, n - n_val, n_similar, n - n_similar) >= 2:
        train = np.ones(n, dtype=bool)
        held_out = train_test_split(np.arange(n), test_size=validation_fraction,
                                    stratify=s, random_state=random_state)[1]
        train[held_out] = False
        if all(np.unique(s[mask]).size == 2 for mask in (train, ~train)):
            return train
    raise ValueError(
        f"the validation split holds out validation_fraction={validation_fraction:g} of the "
        f"{n} pairs ({n_similar} similar, {n - n_similar} dissimilar): {n_val} for "
        f"validation, {n - n_val} for training. Each side needs at least one similar and one "
        f"dissimilar pair (at least 2 pairs per side and 2 of each kind, "
        f"stratified). {advice}".rstrip())


N_CALIBRATION_PAIRS = 2000  # similar and as many dissimilar training pairs for threshold_
CALIBRATION_SEED = 0  # threshold_ is drawn the same way on every fit: a fixed seed


def calibration_pairs(codes, n_pairs=N_CALIBRATION_PAIRS, random_state=CALIBRATION_SEED, *,
                      replace=True, max_points=None, what="the learner"):
    """The labelled pairs of training points on which a learner calibrates ``threshold_``:
    ``n_pairs`` similar then ``n_pairs`` dissimilar index pairs (n, 2) into the training
    points, and their labels in {-1, +1}.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,), int
        Identity codes ``0..n_identities - 1`` of the training points.
    n_pairs : int, default=N_CALIBRATION_PAIRS
    random_state : int or RandomState, default=CALIBRATION_SEED
    replace : bool, default=True
        True: pairs drawn with replacement in O(n + n_pairs), no enumeration of the n^2
        pairs (:func:`draw_pairs_with_replacement`). False: distinct pairs
        (:func:`metricfit.pairs.sample_pairs`, capped at the number that exist) among at most
        ``max_points`` points drawn without replacement first (``sample_pairs`` lists the
        within-identity pairs of its points).
    max_points : int or None, default=None
        Only with ``replace=False``; None: all points.
    what : str
        Who calibrates, for the error message.

    Raises
    ------
    ValueError
        When there is no similar or no dissimilar pair to draw: fewer than two identities,
        or none with two points or more.
    """
    counts = np.bincount(codes)
    if counts.size < 2 or counts.max() < 2:
        raise ValueError(f"{what} needs at least two identities, one of them with two samples "
                         "or more, to calibrate threshold_ on training pairs.")
    rng = check_random_state(random_state)
    if replace:
        return draw_pairs_with_replacement(codes, n_pairs, rng)
    subset = np.arange(codes.size)
    if max_points is not None and codes.size > max_points:
        subset = np.sort(rng.choice(codes.size, max_points, replace=False))
    index_pairs, s = sample_pairs(codes[subset], n_pairs, n_pairs, random_state=rng)
    if np.unique(s).size < 2:  # the subset lost every repeated identity
        raise ValueError(f"{what} needs at least two identities, one of them with two samples "
                         "or more, to calibrate threshold_ on training pairs.")
    return subset[index_pairs], s


def draw_pairs_with_replacement(codes, n_pairs, rng):
    """``n_pairs`` similar and ``n_pairs`` dissimilar index pairs (n, 2) drawn with
    replacement in O(n + n_pairs) (no enumeration of the n^2 pairs), and their labels.

    A similar pair is a point of an identity with two points or more and another point of
    its identity; a dissimilar pair two uniform points of different identities.
    """
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    first = order[rng.choice(np.flatnonzero(counts[codes[order]] >= 2), n_pairs)]
    c = codes[first]
    position = np.empty(codes.size, dtype=np.int64)
    position[order] = np.arange(codes.size) - starts[codes[order]]  # rank within identity
    shift = rng.randint(1, counts[c])  # another member: a cyclic shift of 1..count-1
    second = order[starts[c] + (position[first] + shift) % counts[c]]
    dissimilar = np.empty((0, 2), dtype=np.int64)
    while dissimilar.shape[0] < n_pairs:
        draw = rng.randint(0, codes.size, size=(2 * n_pairs, 2))
        dissimilar = np.concatenate([dissimilar, draw[codes[draw[:, 0]] != codes[draw[:, 1]]]])
    pairs = np.concatenate([np.column_stack([first, second]), dissimilar[:n_pairs]])
    return pairs, np.repeat([1, -1], n_pairs)


def validation_accuracy(s, scores):
    """maxDA of ``scores`` on labelled pairs; 0 (the worst) when a diverged model gives
    non-finite scores, so early stopping passes it over instead of failing."""
    if not np.isfinite(scores).all():
        return 0.0
    return metrics.max_decision_accuracy(s, scores)[0]


def finite_scores(scores, pairs, what="pairs", points=None):
    """``scores``, or a ValueError naming the input when a score is NaN or infinite: finite
    inputs whose scores lie beyond the float range (squared distances of entries ~1e155
    and up, learned maps of huge entries) must be rescaled, never silently scored."""
    scores = np.asarray(scores)
    if np.isfinite(scores).all():
        return scores
    top = largest_entry(pairs, points)
    raise ValueError(
        f"{what} have entries up to {top:.3g}: their scores are beyond the "
        f"{np.asarray(scores).dtype} range (not finite). Rescale them (e.g. divide by "
        f"{top:.3g}, or StandardScaler) before scoring or fitting.")


@dataclass(slots=True)
class PairInputTags(InputTags):
    """scikit-learn's input tags plus what a pair estimator takes.

    ``pairs``: X is pairs, an (n_pairs, 2, ...) array (``three_d_array``); ``index_pairs``:
    X may also be (n_pairs, 2) integer rows into the ``preprocessor`` points (then
    ``two_d_array`` is True); ``pair_input``: 'vectors', 'images', 'points' (fit takes
    labelled points, scores pairs) or 'scores' (several estimators' inputs).
    """

    pairs: bool = True
    index_pairs: bool = False
    pair_input: str = "vectors"


class PairClassifierMixin(ClassifierMixin):
    """A binary classifier of pairs in the user's label coding (scikit-learn's rules).

    Built on ``pair_score`` (higher = more similar) and ``threshold_``.
    ``classes_`` is the coding of the labels last given to ``fit`` or
    :meth:`calibrate_threshold` ({-1, +1}, {0, 1} or {False, True}); ``classes_[1]``, the
    larger label, is "same identity". ``decision_function = pair_score - threshold_`` (> 0:
    same); ``predict`` answers ``classes_[1]`` where it is >= 0, else ``classes_[0]``, so
    scikit-learn's scorers (accuracy, f1, roc_auc, ...) see the labels they were given.

    Every pair estimator declares what its scores are in ``__metricfit_tags__`` (its
    ``score_kind``, read by :func:`metricfit.pairs.tags.score_kind`); this mixin declares
    none, so a learner that forgets gets a TypeError wherever the kind is read.
    """

    _pair_input = "vectors"

    def __metricfit_tags__(self):
        """metricfit's tags (:class:`~metricfit.pairs.tags.PairTags`): a subclass sets
        ``score_kind``."""
        return PairTags()

    # Array-API input (dispatch on, a learner whose pair_score answers in the input's
    # namespace: TSML, CSML, DDML, Siamese linear, LDML, PLDA): decision_function and predict
    # answer in that namespace and on its device; score and calibrate_threshold copy n values
    # to the host, where the labels are checked (:mod:`metricfit.learners._xp`).

    def decision_function(self, pairs):
        """``pair_score(pairs) - threshold_``: positive means similar."""
        points = getattr(self, "preprocessor", None)
        scores = self.pair_score(pairs)
        xp = scores_namespace(scores)
        if xp is not None:
            return finite_device_scores(xp, scores, pairs, points) - self.threshold_
        return finite_scores(scores, pairs, points=points) - self.threshold_

    def predict(self, pairs):
        """``classes_[1]`` (similar) where ``pair_score >= threshold_``, else ``classes_[0]``."""
        decision = self.decision_function(pairs)
        xp = scores_namespace(decision)
        if xp is not None:
            return predict_on_device(xp, decision, self.classes_)
        same = decision >= 0
        return self.classes_[same.astype(np.intp)]

    def score(self, pairs, y, sample_weight=None):
        """Accuracy of :meth:`predict` at ``threshold_`` (y in any accepted coding)."""
        decision = self.decision_function(pairs)
        same = decision >= 0
        if scores_namespace(decision) is not None:  # n booleans (and device labels) to the host
            same, y, sample_weight = host_copies(same, y, sample_weight)
        s = check_pair_labels(y, same.shape[0], require_both=False)
        return float(np.average(same == (s == 1), weights=sample_weight))

    def calibrate_threshold(self, pairs, y, strategy="accuracy"):
        """Set ``threshold_`` (in score units) from labelled pairs, and ``classes_`` to y's
        coding.

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
        points = getattr(self, "preprocessor", None)
        scores = self.pair_score(pairs)
        xp = scores_namespace(scores)
        if xp is None:
            scores = finite_scores(scores, pairs, points=points)
        else:  # n scores (and device labels) to the host
            scores, y = host_copies(finite_device_scores(xp, scores, pairs, points), y)
        s = check_pair_labels(y, scores.shape[0], require_both=True)
        self.threshold_ = float(metrics.calibrate_threshold(s, scores, strategy))
        self.classes_ = pair_classes(y)
        return self

    def _adopt_coding(self, y):
        """Set ``classes_`` to the coding of the (validated) labels ``y``; return self."""
        self.classes_ = pair_classes(y)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        preprocessor = getattr(self, "preprocessor", None) is not None
        tags.input_tags = PairInputTags(
            two_d_array=preprocessor or self._pair_input == "points", three_d_array=True,
            index_pairs=preprocessor, pair_input=self._pair_input)
        tags.target_tags.required = True
        tags.classifier_tags.multi_class = False
        return tags


class PairLearnerMixin(PairClassifierMixin, TransformerMixin):
    """The pair API every learner shares, built on ``transform`` and ``threshold_``.

    ``pair_score`` is higher-is-more-similar; ``decision_function = pair_score - threshold_``;
    ``predict`` gives ``classes_[1]`` (similar) where the decision is >= 0, else
    ``classes_[0]`` (:class:`PairClassifierMixin`). The scores of the embeddings follow the
    declared score kind: the cosine for 'cosine', else minus the squared Euclidean distance
    (a learner scoring otherwise overrides ``_score_embedded``).
    """

    _preserves_dtype = ("float64", "float32")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        fixed = getattr(self, "dtype", None)  # an estimator computing in one dtype (SiameseCNN)
        tags.transformer_tags.preserves_dtype = (
            [np.dtype(fixed).name] if fixed is not None else list(self._preserves_dtype))
        return tags

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

    def _check_pairs(self, pairs, reject_zero=True):  # noqa: D102
        """Fitted check; vector pairs (n, 2, d) or index pairs into the preprocessor
        (:class:`~metricfit.pairs.IndexPairs`)."""
        check_is_fitted(self)
        distance = score_kind(self) == "distance" and not getattr(self, "normalize", False)
        reject_zero = reject_zero and not distance  # a zero vector has a distance
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
        with np.errstate(over="ignore", invalid="ignore"):  # reported by finite_scores
            scores = score_pairs(self._embed, self._score_embedded, pairs)
        return finite_scores(scores, pairs)

    def _embed(self, X):
        """The embedding of points or pairs as an ndarray, whatever ``set_output`` says
        (what the pair scores are computed from): ``transform`` unless overridden."""
        return self.transform(X)

    def _score_embedded(self, a, b):
        if score_kind(self) == "cosine":
            return cosine_rows(a, b)
        return -squared_distances(a, b)


def rowwise(mapping, theta):
    """``X -> f(X, theta)`` for points (n, d) -> (n, k) or vector pairs (n, 2, d) ->
    (n, 2, k): the mapping on the flattened rows."""
    def transform(X):
        return mapping.transform(theta, X.reshape(-1, X.shape[-1])).reshape(*X.shape[:-1], -1)
    return transform


class FittedMappingMixin:
    """A learner whose fitted map is a :class:`metricfit.mappings.Mapping`: ``mapping_``,
    and its parameters in the attribute the mapping names (``mapping.fitted_attribute``:
    ``components_`` for ``Linear``, the flat ``params_`` otherwise)."""

    def _map(self, X):
        """The fitted mapping of validated points (n, d) or pairs (n, 2, d)."""
        return rowwise(self.mapping_, self._theta())(X)

    def _unpack(self, mapping, theta):
        self.mapping_ = mapping
        for name in {"components_", "params_"} - {mapping.fitted_attribute}:
            self.__dict__.pop(name, None)
        setattr(self, mapping.fitted_attribute, mapping.as_attribute(theta))

    def _theta(self):
        return np.ravel(getattr(self, self.mapping_.fitted_attribute))
