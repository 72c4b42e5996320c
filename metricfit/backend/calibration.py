r"""Score calibration: any learner's scores to log-likelihood ratios.

Linear calibration (Brümmer's BOSARIS ``train_linear_calibration``): ``llr = a s + b``, with
(a, b) minimising the prior-weighted cross-entropy on labelled validation trials, at a
target prior P (``logit P = log P / (1 - P)``)::

    C(a, b) = P / N_tar sum_tar log(1 + e^-(a s + b + logit P))
              + (1 - P) / N_non sum_non log(1 + e^(a s + b + logit P))

(the Cllr at prior P, up to a factor). Convex in (a, b); solved by L-BFGS with its gradient.

PAV calibration: the isotonic (pool-adjacent-violators) map of scores to LLRs, the optimum
over every monotone map on the trials it is fitted on (:func:`metricfit.metrics.pav_llr`);
its Cllr there is minCllr. Fitted on validation trials and interpolated, it is a
non-parametric calibration, prone to overfit with few trials.
"""

from numbers import Real

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .. import metrics
from .._validation import Interval, validate_params
from ..metrics import _check_labels_and_scores, _llr_response, _require_both

__all__ = ["LinearCalibration", "PAVCalibration", "CalibratedScorer"]


def _scores_column(scores):
    scores = np.asarray(scores)
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    return scores


def _check_scores(scores):
    """Finite 1-D float64 scores (labels not needed)."""
    scores = _scores_column(scores)
    return _check_labels_and_scores(np.r_[1, -np.ones(max(len(scores) - 1, 0))][:len(scores)],
                                    scores)[1]


def calibration_objective(params, scores, s, prior):
    """C(a, b) above and its gradient."""
    a, b = params
    z = a * scores + b + np.log(prior / (1 - prior))
    tar, non = s == 1, s != 1
    w_tar, w_non = prior / tar.sum(), (1 - prior) / non.sum()
    cost = w_tar * np.logaddexp(0, -z[tar]).sum() + w_non * np.logaddexp(0, z[non]).sum()
    dz = np.where(tar, -w_tar * expit(-z), w_non * expit(z))
    return cost, np.array([dz @ scores, dz.sum()])


class LinearCalibration(TransformerMixin, BaseEstimator):
    """Affine map of scores to LLRs by prior-weighted logistic regression (BOSARIS).

    Parameters
    ----------
    prior : float in (0, 1), default=0.5
        The target prior the cross-entropy is weighted at (0.5: Cllr itself).

    Attributes
    ----------
    slope_, offset_ : float
        ``llr = slope_ * score + offset_``.
    """

    _parameter_constraints = {"prior": [Interval(Real, 0, 1, closed="neither")]}

    def __init__(self, prior=0.5):
        self.prior = prior

    def fit(self, scores, y):
        """Fit on scores (n,) or (n, 1) with trial labels (+1 / 1 target, -1 / 0 non)."""
        validate_params(self)
        s, scores = _check_labels_and_scores(y, _scores_column(scores))
        _require_both(s)
        scale = max(scores.std(), np.finfo(float).tiny)
        result = minimize(calibration_objective, np.array([1.0 / scale, 0.0]), jac=True,
                          args=(scores, s, self.prior), method="L-BFGS-B")
        self.slope_, self.offset_ = (float(v) for v in result.x)
        self.n_features_in_ = 1
        return self

    def transform(self, scores):
        """LLRs of the scores, shape (n,)."""
        check_is_fitted(self, "slope_")
        scores = _check_scores(scores)
        return self.slope_ * scores + self.offset_

    predict = transform


class PAVCalibration(TransformerMixin, BaseEstimator):
    """Monotone (PAV / isotonic) map of scores to LLRs, linearly interpolated between the
    fitted scores and clipped beyond; LLRs are clipped to +-``max_llr`` (pure bins would be
    +-inf)."""

    def __init__(self, max_llr=20.0):
        self.max_llr = max_llr

    def fit(self, scores, y):
        s, scores = _check_labels_and_scores(y, _scores_column(scores))
        llr = np.clip(metrics.pav_llr(s, scores), -self.max_llr, self.max_llr)
        order = np.argsort(scores)
        self.x_, self.llr_ = scores[order], llr[order]
        return self

    def transform(self, scores):
        check_is_fitted(self, "x_")
        scores = _check_scores(scores)
        return np.interp(scores, self.x_, self.llr_)

    predict = transform


class CalibratedScorer(BaseEstimator):
    """A fitted learner whose ``pair_score`` is calibrated into an LLR on labelled pairs.

    The learner is used as given (never refitted): fit the learner on training pairs, this
    wrapper on *validation* pairs. ``decision_function = pair_score - threshold_`` with
    ``threshold_`` the Bayes threshold at ``decision_prior`` (0 at 0.5).

    Parameters
    ----------
    estimator : fitted learner or Pipeline ending in one
    method : {'linear', 'pav'}, default='linear'
    prior : float, default=0.5
        Prior of the linear calibration's cost.
    decision_prior : float, default=0.5
    """

    def __init__(self, estimator, method="linear", prior=0.5, decision_prior=0.5):
        self.estimator = estimator
        self.method = method
        self.prior = prior
        self.decision_prior = decision_prior

    def fit(self, pairs, y):
        if self.method not in ("linear", "pav"):
            raise ValueError(f"method must be 'linear' or 'pav', got {self.method!r}.")
        scores = _llr_response(self.estimator, pairs)
        self.calibration_ = (LinearCalibration(self.prior) if self.method == "linear"
                             else PAVCalibration()).fit(scores, y)
        self.threshold_ = metrics.bayes_threshold(self.decision_prior)
        self.classes_ = np.array([-1, 1])
        return self

    def pair_score(self, pairs):
        """Calibrated LLRs of the pairs."""
        check_is_fitted(self, "calibration_")
        return self.calibration_.transform(_llr_response(self.estimator, pairs))

    def decision_function(self, pairs):
        return self.pair_score(pairs) - self.threshold_

    def predict(self, pairs):
        return np.where(self.decision_function(pairs) >= 0, 1, -1)
