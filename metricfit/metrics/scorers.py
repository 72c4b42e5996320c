"""Scorers for model selection (``scoring=`` of GridSearchCV, cross_val_score): maxDA and
EER of ``decision_function``; minDCF, actDCF, Cllr, minCllr and FNMR at FMR of the pair scores
(:func:`llr_response`)."""

from sklearn.metrics import make_scorer

from ..pairs.tags import before_final_step, final_step
from .cost import act_dcf, cllr, min_cllr, min_dcf
from .rates import equal_error_rate, fnmr_at_fmr, max_decision_accuracy

__all__ = ["max_accuracy_scorer", "neg_eer_scorer", "get_scorer", "neg_min_dcf_scorer",
           "neg_act_dcf_scorer", "neg_cllr_scorer", "neg_min_cllr_scorer", "neg_fmr100_scorer",
           "neg_fmr1000_scorer"]


def _max_accuracy_value(y_true, scores):
    return max_decision_accuracy(y_true, scores)[0]


def _eer_value(y_true, scores):
    return equal_error_rate(y_true, scores)[0]


#: maxDA of ``estimator.decision_function(X)``; greater is better.
max_accuracy_scorer = make_scorer(_max_accuracy_value, response_method="decision_function")

#: Negated EER of ``estimator.decision_function(X)`` (like scikit-learn's ``neg_*`` scorers,
#: so that greater is better); the EER itself is ``-neg_eer_scorer(estimator, X, y)``.
neg_eer_scorer = make_scorer(
    _eer_value, response_method="decision_function", greater_is_better=False
)

_SCORERS = {"max_accuracy": max_accuracy_scorer, "neg_eer": neg_eer_scorer}


def get_scorer(name):
    """The scorer named 'max_accuracy', 'neg_eer', 'neg_min_dcf', 'neg_act_dcf', 'neg_cllr',
    'neg_min_cllr', 'neg_fmr100' or 'neg_fmr1000', for ``scoring=`` in model selection."""
    try:
        return _SCORERS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown scorer {name!r}; choose one of {sorted(_SCORERS)}.") from None


def llr_response(estimator, X):
    """The scores of pairs X: ``pair_score`` (an LLR for PLDA and calibrated learners) of the
    estimator or of a Pipeline's last step (X through the steps before it);
    ``decision_function`` for estimators without ``pair_score``.

    Shared by the scorers below and the back-end (calibration, score normalisation,
    multi-enrolment); not in ``__all__``.
    """
    last = final_step(estimator)
    if last is not estimator and hasattr(last, "pair_score"):
        return last.pair_score(before_final_step(estimator, X))
    if hasattr(estimator, "pair_score"):
        return estimator.pair_score(X)
    return estimator.decision_function(X)


def _scorer(function, sign=-1.0):
    def scorer(estimator, X, y):
        return sign * function(y, llr_response(estimator, X))
    scorer.__name__ = f"neg_{function.__name__}_scorer" if sign < 0 else function.__name__
    return scorer


#: minDCF at P_target 0.01, negated (greater is better) for GridSearchCV.
neg_min_dcf_scorer = _scorer(lambda y, s: min_dcf(y, s, preset="p01")[0])
#: actDCF at P_target 0.01 of ``pair_score`` (an LLR), negated.
neg_act_dcf_scorer = _scorer(lambda y, s: act_dcf(y, s, preset="p01"))
#: Cllr of ``pair_score`` (an LLR), negated.
neg_cllr_scorer = _scorer(cllr)
#: minCllr, negated.
neg_min_cllr_scorer = _scorer(min_cllr)
#: FNMR at FMR = 1 % (FMR100), negated.
neg_fmr100_scorer = _scorer(lambda y, s: float(fnmr_at_fmr(y, s, 0.01)))
#: FNMR at FMR = 0.1 % (FMR1000), negated.
neg_fmr1000_scorer = _scorer(lambda y, s: float(fnmr_at_fmr(y, s, 0.001)))

_SCORERS.update({"neg_min_dcf": neg_min_dcf_scorer, "neg_act_dcf": neg_act_dcf_scorer,
                 "neg_cllr": neg_cllr_scorer, "neg_min_cllr": neg_min_cllr_scorer,
                 "neg_fmr100": neg_fmr100_scorer, "neg_fmr1000": neg_fmr1000_scorer})
