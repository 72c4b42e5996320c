"""Fit and test: one method on one experiment, at the threshold chosen on the validation pairs.

Every row of a table is made here. :func:`result_at_validation_threshold` owns the protocol's
one rule for the decision threshold (seed 002 III.A): the threshold of best accuracy on the
validation scores (the threshold of maxDA, seed 004 eq. 14), then the test accuracy at it,
with the threshold-free test maxDA, EER and the back-end's numbers (minDCF, Cllr).
:func:`fit_and_test` fits a method on the training pairs first; the selection, the image
methods, s-norm and the fusions all end in one of the two.
"""

from dataclasses import dataclass, field

import numpy as np

from ..backend import ScoreNormalizer
from ..backend.calibration import LinearCalibration
from ..metrics import (
    accuracy_at_threshold,
    act_dcf,
    cllr,
    equal_error_rate,
    max_decision_accuracy,
    min_dcf,
)

__all__ = ["Result", "validation_threshold", "result_at_validation_threshold", "fit_and_test",
           "validation_accuracy", "maxda_scorer", "snorm_result"]


def _extra():
    return field(default=None, repr=False, compare=False, metadata={"json": False})


@dataclass
class Result:
    """One method on one experiment: test accuracy at the validation-chosen threshold. Not in
    JSON: the test ``scores`` (decision values) and labels ``y``, the validation ones
    (``val_scores``, ``val_y``: what a later fusion trains on) and the fitted ``model``.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.experiments.evaluation import result_at_validation_threshold
    >>> val = (np.array([0.9, 0.8, 0.2, 0.1]), np.array([1, 1, -1, -1]))
    >>> test = (np.array([0.7, 0.4, 0.6, 0.0]), np.array([1, 1, -1, -1]))
    >>> result = result_at_validation_threshold("demo", val, test)
    >>> result.method, float(result.accuracy), float(result.val_maxda)
    ('demo', 0.5, 1.0)
    """

    method: str
    accuracy: float
    maxda: float
    eer: float
    lam: float
    threshold: float
    min_dcf: float = np.nan  # P_target 0.01 (or the run's prior, ExperimentConfig.prior)
    cllr_raw: float = np.nan  # of the decision values as they are
    cllr: float = np.nan  # after linear calibration on the validation fold
    act_dcf: float = np.nan  # at the same prior, calibrated at it on the validation fold
    n_components: int = None  # chosen WPCA dimension (with the selection of issue 15)
    normalize: bool = None  # L2 normalisation after WPCA chosen (same)
    choice: dict = None  # a selected fusion's choices (fuse_saved(select=True)); an image
    # method's epoch of early stopping and epochs run (image_method_and_test)
    descriptor: str = None  # the descriptor variant chosen on validation (choose_variant)
    val_maxda: float = np.nan  # validation accuracy at the best threshold (validation_accuracy)
    scores: np.ndarray = _extra()
    y: np.ndarray = _extra()
    model: object = _extra()
    val_scores: np.ndarray = _extra()
    val_y: np.ndarray = _extra()


def _back_end_metrics(scores, y, val, prior=0.01):
    """minDCF(``prior``) of the test scores; Cllr of the scores as they are (the decision
    values: for PLDA its LLR minus ``threshold_``, a plain score for the other methods);
    after linear calibration fitted on the validation scores (NaN without them): actDCF at
    ``prior`` with the calibration fitted at that prior (the operating point reported), and
    Cllr with the calibration fitted at 0.5 (Cllr's own, equal-weighted, cost)."""
    out = {"min_dcf": min_dcf(y, scores, prior)[0], "cllr_raw": cllr(y, scores),
           "cllr": np.nan, "act_dcf": np.nan}
    if val is not None and np.unique(val[1]).size == 2:
        at_half = LinearCalibration(prior=0.5).fit(val[0], val[1]).transform(scores)
        at_prior = at_half if prior == 0.5 else \
            LinearCalibration(prior=prior).fit(val[0], val[1]).transform(scores)
        out.update(cllr=cllr(y, at_half), act_dcf=act_dcf(y, at_prior, prior))
    return out


def validation_threshold(val_y, val_scores):
    """The decision threshold of the protocols: the one of best accuracy on the validation
    scores (the threshold of maxDA, seed 004 eq. 14)."""
    return max_decision_accuracy(val_y, val_scores)[1]


def result_at_validation_threshold(name, val, test, lam=np.nan, model=None,
                                   n_components=None, normalize=None):
    """The :class:`Result` of method ``name``: its test accuracy at
    :func:`validation_threshold`, the test maxDA, EER, minDCF and Cllr (raw, and calibrated
    on the validation scores), and the validation maxDA.

    ``val`` and ``test`` are ``(scores, y)``: the decision values of the validation and test
    pairs and their labels. ``lam``, ``model``, ``n_components``, ``normalize``: recorded."""
    val_scores, val_y = np.asarray(val[0]), np.asarray(val[1])
    scores, y = test
    threshold = validation_threshold(val_y, val_scores)
    result = Result(method=name, accuracy=accuracy_at_threshold(y, scores, threshold),
                    maxda=max_decision_accuracy(y, scores)[0], eer=equal_error_rate(y, scores)[0],
                    lam=float(lam), threshold=float(threshold), scores=scores, y=np.asarray(y),
                    model=model, val_scores=val_scores, val_y=val_y, n_components=n_components,
                    normalize=normalize,
                    **_back_end_metrics(np.asarray(scores), y, (val_scores, val_y)))
    result.val_maxda = validation_accuracy(result)
    return result


def fit_and_test(name, method, train, val, test, lam=np.nan, fit_params=None, score=None,
                 **recorded):
    """Fit ``method`` on the ``train`` pairs, score the ``val`` and ``test`` pairs, and
    :func:`result_at_validation_threshold`. Each of train/val/test is ``(pairs, y)``; ``train``
    None: ``method`` is fitted already. ``fit_params`` go to ``fit``; ``score``: the scoring
    function of the fitted method (default its ``decision_function``). ``lam`` and
    ``recorded`` (``n_components``, ``normalize``) are recorded in the Result."""
    if train is not None:
        method = method.fit(*train, **(fit_params or {}))
    score = method.decision_function if score is None else score
    val_scores = score(val[0])
    return result_at_validation_threshold(name, (val_scores, val[1]),
                                          (score(test[0]), test[1]), lam, method, **recorded)


def validation_accuracy(result):
    """The accuracy at the best threshold (maxDA) of a Result's validation scores: what the
    selection maximised, read back from the fitted model's validation fold."""
    if result.val_scores is None:
        raise ValueError(f"the Result of {result.method} has no validation scores.")
    return max_decision_accuracy(result.val_y, result.val_scores)[0]


def maxda_scorer(estimator, pairs, y):
    """The scorer of the selections: the accuracy at the best threshold (maxDA, seed 004 eq.
    14) of the decision values, so that the settings and the threshold are chosen together."""
    return max_decision_accuracy(y, estimator.decision_function(pairs))[0]


def snorm_result(result, cohort, val, test):
    """'METHOD+snorm': the fitted method's scores s-normalised with the cohort (points in the
    method's input space), threshold chosen on ``val`` for accuracy."""
    normaliser = ScoreNormalizer(result.model, cohort, "s-norm")
    return fit_and_test(result.method + "+snorm", normaliser, None, val, test, result.lam,
                        score=normaliser.pair_score)
