"""What a pair estimator declares about its scores, and where a Pipeline's scores come from.

The score kind is a *declared* tag, read by one helper, :func:`score_kind`: the back-end (score
normalisation, multi-enrolment), MkNN and the applications choose their fast paths from it. A
pair estimator declares it in ``__metricfit_tags__``, a method that returns a :class:`PairTags`,
beside scikit-learn's ``__sklearn_tags__`` (whose :class:`sklearn.utils.Tags` is a fixed set of
dataclass fields: metricfit's tags live apart from it, so that no scikit-learn version can
break or drop them)::

    def __metricfit_tags__(self):
        tags = super().__metricfit_tags__()  # PairTags(score_kind=None) from the pair mixin
        tags.score_kind = "llr"
        return tags

An estimator that declares no kind gets a ``TypeError`` from :func:`score_kind`, never a guess:
a guessed kind silently picks a wrong fast path (a cosine GEMM for scores that are no cosines).

This module sits on the ground floor (``pairs``) so that every room may read the tags: the
back-end and the metrics as well as the learners and the experiments.
"""

from dataclasses import dataclass

__all__ = ["PairTags", "SCORE_KINDS", "final_step", "before_final_step", "score_kind"]

#: What ``pair_score`` returns (higher = more similar in every kind), by kind:
#: 'cosine': the cosine of the two embeddings, in [-1, 1] (TSML, CSML, CosineSimilarity);
#: 'distance': minus the squared Euclidean distance of the embeddings, plus a constant
#: (DDML, NCA, LDML's ``b - d_M``); 'energy': minus a siamese energy of the embeddings
#: (contrastive, square-exponential losses); 'llr': a log-likelihood ratio (PLDA, a calibrated
#: scorer, 'llr' fusion); 'probability': the probability of "same identity", in [0, 1]
#: (MkNN); 'decision': a classifier's decision value (SVM or logistic fusion).
SCORE_KINDS = ("cosine", "distance", "energy", "llr", "probability", "decision")


@dataclass(slots=True)
class PairTags:
    """metricfit's tags of a pair estimator, returned by its ``__metricfit_tags__()``.

    Parameters
    ----------
    score_kind : str or None, default=None
        One of :data:`SCORE_KINDS`: what ``pair_score`` returns. None: not declared
        (:func:`score_kind` raises).

    Examples
    --------
    >>> from metricfit.pairs.tags import PairTags, score_kind
    >>> class Scorer:
    ...     def __metricfit_tags__(self):
    ...         return PairTags(score_kind="llr")
    >>> score_kind(Scorer())
    'llr'
    """

    score_kind: str | None = None


def final_step(estimator):
    """The estimator that scores: a Pipeline's last step (a nested Pipeline's, recursively),
    else ``estimator`` itself.

    A Pipeline is anything with a non-empty ``steps`` list (also a
    :class:`~sklearn.frozen.FrozenEstimator` around one, which forwards ``steps``).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from metricfit.learners import CosineSimilarity
    >>> from metricfit.pairs.tags import final_step
    >>> cosine = CosineSimilarity()
    >>> final_step(make_pipeline(StandardScaler(), cosine)) is cosine, final_step(cosine) is cosine
    (True, True)
    """
    steps = getattr(estimator, "steps", None)
    return final_step(steps[-1][1]) if steps else estimator


def before_final_step(estimator, X):
    """``X`` through every step before the scoring one (skipping None and 'passthrough'), as
    ``pipeline[:-1].transform(X)``, into a nested last Pipeline likewise; ``X`` itself for an
    estimator that is not a Pipeline."""
    steps = getattr(estimator, "steps", None)
    if not steps:
        return X
    for _, step in steps[:-1]:
        if step is not None and step != "passthrough":
            X = step.transform(X)
    return before_final_step(steps[-1][1], X)


def score_kind(estimator):
    """The declared score kind of a pair estimator (or of a Pipeline's last step).

    Parameters
    ----------
    estimator : pair estimator or Pipeline ending in one

    Returns
    -------
    kind : str
        One of :data:`SCORE_KINDS`.

    Raises
    ------
    TypeError
        When the estimator declares no score kind (no ``__metricfit_tags__``, or one whose
        ``score_kind`` is None).
    ValueError
        When the declared kind is not one of :data:`SCORE_KINDS`.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from metricfit import PLDA, WPCA
    >>> from metricfit.learners import score_kind
    >>> score_kind(PLDA()), score_kind(make_pipeline(WPCA(), PLDA()))
    ('llr', 'llr')
    >>> score_kind(WPCA())
    Traceback (most recent call last):
    ...
    TypeError: WPCA declares no score kind: a pair estimator returns PairTags(score_kind=...) \
from __metricfit_tags__() (see metricfit.pairs.tags).
    """
    last = final_step(estimator)
    declare = getattr(last, "__metricfit_tags__", None)
    kind = declare().score_kind if callable(declare) else None
    if kind is None:
        raise TypeError(f"{type(last).__name__} declares no score kind: a pair estimator "
                        "returns PairTags(score_kind=...) from __metricfit_tags__() (see "
                        "metricfit.pairs.tags).")
    if kind not in SCORE_KINDS:
        raise ValueError(f"{type(last).__name__} declares the score kind {kind!r}; choose from "
                         f"{SCORE_KINDS}.")
    return kind
