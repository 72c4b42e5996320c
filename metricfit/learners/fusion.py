"""Score-level fusion of several fitted pair scorers (seed 002 section IV.D, seed 001 section 5.3).

Seed 002 IV.D: "For each pair of vectors, all the corresponding similarity scores compose a new
short vector which can be used to predict the final decision [...] employ a linear support
vector machine (SVM) [...] we train an SVM model on the validation set and make prediction on
the test set." Seed 001 5.3: "The linear combinations are learnt using a logistic discriminant
model for each fold independently."

.. warning::
   Fit :class:`ScoreFusion` on pairs the base estimators were NOT trained on -- the
   validation fold of the 8/1/1 rotation (seed 002 IV.D). On their own training pairs the base
   scores are optimistically separated (each learner overfits them to a different degree), so
   the fusion weights learnt there trust the most overfitted scorer and generalise badly.
"""

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted

from ..pairs import check_pair_labels, check_pairs
from ._base import PairClassifierMixin

__all__ = ["ScoreFusion", "fusion_model", "stack_scores"]

METHODS = ("svm", "logistic", "llr")
RESPONSE_METHODS = ("pair_score", "decision_function")  # first one found is used


def _check_estimators(estimators):
    """``[(name, estimator, selector)]`` from ``(name, estimator[, selector])`` entries."""
    if isinstance(estimators, (str, bytes)) or not hasattr(estimators, "__iter__"):
        raise ValueError(f"estimators must be a list of (name, estimator[, selector]) tuples, "
                         f"got {estimators!r}.")
    checked = []
    for entry in estimators:
        if not isinstance(entry, (tuple, list)) or len(entry) not in (2, 3):
            raise ValueError(f"each estimator must be (name, estimator) or (name, estimator, "
                             f"selector), got {entry!r}.")
        name, est, selector = (*entry, None) if len(entry) == 2 else entry
        if not isinstance(name, str):
            raise ValueError(f"estimator names must be strings, got {name!r}.")
        if not any(callable(getattr(est, m, None)) for m in RESPONSE_METHODS):
            raise ValueError(f"estimator {name!r} ({type(est).__name__}) has neither "
                             "pair_score nor decision_function.")
        try:
            check_is_fitted(est)
        except NotFittedError as exc:
            raise ValueError(f"estimator {name!r} ({type(est).__name__}) is not fitted: "
                             "ScoreFusion uses the base estimators as given (never fits them); "
                             "fit them on the training fold first.") from exc
        except TypeError:
            pass  # a plain scorer without fit: nothing to check
        checked.append((name, est, selector))
    if not checked:
        raise ValueError("estimators is empty: give at least one (name, estimator) pair.")
    names = [name for name, _, _ in checked]
    if len(set(names)) != len(names):
        raise ValueError(f"estimator names must be unique, got {names}.")
    return checked


def _route(checked, inputs):
    """One input per estimator: a list/tuple (in order), a dict by name, or one shared array."""
    names = [name for name, _, _ in checked]
    if isinstance(inputs, dict):
        if set(inputs) != set(names):
            raise ValueError(f"inputs keys {sorted(map(str, inputs))} must be exactly the "
                             f"estimator names {sorted(names)}.")
        return [inputs[name] for name in names]
    if isinstance(inputs, (list, tuple)):
        if len(inputs) != len(names):
            raise ValueError(f"inputs holds {len(inputs)} pair arrays for {len(names)} "
                             "estimators: give one per estimator, in order (or a dict).")
        return list(inputs)
    return [inputs] * len(names)


def _takes_images(est):
    """Whether the estimator's tags say it takes image pairs (a plain scorer without tags
    takes vectors)."""
    if not hasattr(est, "__sklearn_tags__"):
        return False
    return getattr(get_tags(est).input_tags, "pair_input", "vectors") == "images"


def _select(pairs, selector, name, est):
    """The estimator's input pairs: image pairs as given to an estimator whose tags say it
    takes images (``input_tags.pair_input == 'images'``, e.g. SiameseCNN: it checks them
    itself, no selector), else vector pairs, checked, then cut by the selector."""
    if _takes_images(est):
        if selector is not None:
            raise ValueError(f"estimator {name!r} takes image pairs: a feature selector does "
                             "not apply to it.")
        return np.asarray(pairs)
    pairs = check_pairs(pairs, what=f"inputs of estimator {name!r}")
    if selector is None:
        return pairs
    if callable(selector):
        return selector(pairs)
    return pairs[:, :, selector]


def stack_scores(estimators, inputs):
    """Similarity scores of the same pairs under several fitted estimators, one column each.

    Parameters
    ----------
    estimators : list of (name, estimator) or (name, estimator, selector)
        Fitted estimators with ``pair_score`` (used if present) or ``decision_function``,
        higher = more similar. ``selector`` (optional) picks the estimator's features from
        its input pairs: feature indices, a boolean mask or a slice along the feature axis
        (``pairs[:, :, selector]``), or a callable ``selector(pairs) -> pairs``.
    inputs : list of arrays, dict name -> array, or array of shape (n_pairs, 2, n_features)
        The SAME pairs as seen by each estimator (one descriptor each): a list in the order
        of ``estimators``, a dict by name, or one array shared by all (then usually split
        by the selectors; the only form scikit-learn's cross-validation can slice). An
        estimator of image pairs (``SiameseCNN``) gets its image pairs (n_pairs, 2, H, W).

    Returns
    -------
    scores : ndarray of shape (n_pairs, n_estimators)

    Raises
    ------
    ValueError
        Unfitted or unusable estimators, inputs not matching the estimators, inputs with
        different numbers of pairs, or non-finite scores.
    """
    checked = _check_estimators(estimators)
    columns, n_pairs = [], None
    for (name, est, selector), pairs in zip(checked, _route(checked, inputs), strict=True):
        pairs = _select(pairs, selector, name, est)
        if n_pairs is None:
            n_pairs = len(pairs)
        elif len(pairs) != n_pairs:
            raise ValueError(f"inputs of estimator {name!r} hold {len(pairs)} pairs, those of "
                             f"{checked[0][0]!r} {n_pairs}: all must describe the same pairs.")
        method = next(m for m in RESPONSE_METHODS if callable(getattr(est, m, None)))
        score = np.asarray(getattr(est, method)(pairs), dtype=np.float64)
        if score.shape != (n_pairs,) or not np.isfinite(score).all():
            raise ValueError(f"estimator {name!r}.{method} must return {n_pairs} finite "
                             f"scores, got shape {score.shape}.")
        columns.append(score)
    return np.column_stack(columns)


def fusion_model(method="svm", C=1.0):
    """The unfitted fusion classifier on a matrix of scores (n_pairs, n_scores):
    ``StandardScaler`` then ``LinearSVC`` (``method='svm'``, seed 002 IV.D) or
    ``LogisticRegression`` (``'logistic'``, seed 001 5.3), or (``'llr'``) the prior-weighted
    logistic regression of BOSARIS linear fusion: classes weighted to a target prior of 0.5
    (``class_weight='balanced'``) and ``C`` scaled by 1e4 (nearly unregularised), so that
    the decision value is a calibrated log-likelihood ratio."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    if not isinstance(C, Real) or isinstance(C, bool) or not 0 < C < np.inf:
        raise ValueError(f"C must be a positive finite number, got {C!r}.")
    if method == "llr":
        return make_pipeline(StandardScaler(),
                             LogisticRegression(C=1e4 * C, class_weight="balanced"))
    classifier = LinearSVC(C=C, random_state=0) if method == "svm" else LogisticRegression(C=C)
    return make_pipeline(StandardScaler(), classifier)


class ScoreFusion(PairClassifierMixin, BaseEstimator):
    """Linear fusion of the scores of several fitted pair scorers, trained on held-out pairs.

    Each pair becomes the short vector of its base scores (:func:`stack_scores`), standardised
    (``StandardScaler``), and a linear classifier decides similar / dissimilar: a linear SVM as
    in seed 002 section IV.D (TSML-fusion of 12 scores) or a logistic discriminant as in seed
    001 section 5.3 (LDML / LDML+MkNN combinations).

    .. warning::
       ``fit`` on the VALIDATION fold only (seed 002 IV.D: "we train an SVM model on the
       validation set and make prediction on the test set"), never on the pairs the base
       estimators were trained on: their training scores are over-optimistic, so fusion
       weights fitted there overfit. The base estimators are used as given, never refitted
       (``clone`` shares them, so ``cross_val_score`` refits only the fusion).

    Parameters
    ----------
    estimators : list of (name, estimator) or (name, estimator, selector)
        Fitted scorers with ``pair_score`` or ``decision_function``; see :func:`stack_scores`.
    method : {'svm', 'logistic', 'llr'}, default='svm'
        ``LinearSVC`` (seed 002) or ``LogisticRegression`` (seed 001) on the scores; 'llr':
        prior-weighted logistic regression whose :meth:`pair_score` is a calibrated
        log-likelihood ratio (BOSARIS linear fusion; see :func:`fusion_model`).
    C : float > 0, default=1.0
        Inverse regularisation strength of the fusion classifier.

    Attributes
    ----------
    model_ : Pipeline
        ``StandardScaler`` then the fitted linear classifier.
    coef_ : ndarray of shape (n_estimators,)
        Weights of the standardised scores; ``intercept_`` (float) the bias.
    score_scale_ : ndarray of shape (n_estimators,)
        Largest absolute score of each base estimator at fit: scores are divided by it before
        standardising, so scores up to the float range cannot overflow a variance.
    threshold_ : float
        Threshold on :meth:`pair_score`; 0 (the classifier's own rule) after ``fit``.
    classes_ : ndarray of shape (2,)
        The coding of the pair labels given to ``fit`` ({-1, +1}, {0, 1} or {False, True});
        ``predict`` answers in it.
    n_estimators_ : int

    Examples
    --------
    Two descriptors of the same pairs (features 0-2 and 3-5 of one array); a cosine scorer
    fitted on each with the first 20 pairs, their fusion on the next 20, all three tested
    on the last 20:

    >>> import numpy as np
    >>> from metricfit.learners import CosineSimilarity, ScoreFusion
    >>> rng = np.random.default_rng(0)
    >>> pairs = rng.normal(size=(60, 2, 6))
    >>> pairs[::2, 1] = pairs[::2, 0] + rng.normal(size=(30, 6))  # even pairs: similar
    >>> y = np.tile([1, -1], 30)
    >>> train, val, test = slice(0, 20), slice(20, 40), slice(40, 60)
    >>> first = CosineSimilarity().fit(pairs[train, :, :3], y[train])
    >>> second = CosineSimilarity().fit(pairs[train, :, 3:], y[train])
    >>> fusion = ScoreFusion([("first", first, slice(0, 3)), ("second", second, slice(3, 6))])
    >>> fusion = fusion.fit(pairs[val], y[val])
    >>> fusion.n_estimators_, bool(np.all(fusion.coef_ > 0))  # both scores count
    (2, True)
    >>> first.score(pairs[test, :, :3], y[test]), second.score(pairs[test, :, 3:], y[test])
    (0.8, 0.9)
    >>> fusion.score(pairs[test], y[test])
    0.95

    References
    ----------
    - Guillaumin, Verbeek and Schmid, "Is that you? Metric Learning Approaches for Face
      Identification", ICCV 2009 (seed 001).
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """

    _pair_input = "scores"

    def __init__(self, estimators, method="svm", C=1.0):
        self.estimators = estimators
        self.method = method
        self.C = C

    def __sklearn_clone__(self):
        return type(self)(**self.get_params(deep=False))  # base estimators shared, not refitted

    def fit(self, inputs, y):
        """Fit the fusion classifier on labelled pairs (held-out: the validation fold).

        Parameters
        ----------
        inputs : list, dict or array of pairs; see :func:`stack_scores`
        y : array-like of shape (n_pairs,), +1 similar, -1 dissimilar ({0, 1} accepted)

        Returns
        -------
        self
        """
        model = fusion_model(self.method, self.C)
        Z = stack_scores(self.estimators, inputs)
        s = check_pair_labels(y, Z.shape[0], require_both=True)
        top = np.max(np.abs(Z), axis=0)
        self.score_scale_ = np.where(top > 0, top, 1.0)  # StandardScaler squares the scores
        self.model_ = model.fit(Z / self.score_scale_, s)
        classifier = self.model_[-1]
        self.coef_ = classifier.coef_.ravel().copy()
        self.intercept_ = float(np.ravel(classifier.intercept_)[0])
        self.n_estimators_ = Z.shape[1]
        self.threshold_ = 0.0
        return self._adopt_coding(y)

    def pair_score(self, inputs):
        """The fused score of each pair (the classifier's decision value, higher = more
        similar), shape (n_pairs,)."""
        check_is_fitted(self)
        Z = stack_scores(self.estimators, inputs) / self.score_scale_
        return self.model_.decision_function(Z)

    def __metricfit_tags__(self):
        """The score kind: 'llr' for ``method='llr'``, else the classifier's 'decision'."""
        tags = super().__metricfit_tags__()
        tags.score_kind = "llr" if self.method == "llr" else "decision"
        return tags
