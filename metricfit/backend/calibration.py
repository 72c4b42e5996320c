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
from scipy.special import expit
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .. import metrics
from .._validation import Interval, StrOptions, validate_params
from ..metrics.scorers import llr_response
from ..pairs.checks import check_labels_and_scores, check_scores, pair_classes, require_both_classes
from ..pairs.tags import PairTags

__all__ = ["LinearCalibration", "PAVCalibration", "CalibratedScorer"]

#: Newton's iterations stop when the decrement ``g' H^-1 g`` falls below this (the cost is
#: O(1) on standardised scores, so this is far below its float64 resolution).
NEWTON_DECREMENT = 1e-24
NEWTON_MAX_ITER = 100
#: Below this decrement the cost's decrease is lost in its rounding, and Newton's full step
#: is taken without a line search (the quadratic-convergence region of a smooth convex cost).
NEWTON_FULL_STEP = 1e-12


def _scores_column(scores, what="scores"):
    """Scores (n,) or (n, 1) as a 1-D array (a 2-D shape other than (n, 1) stays 2-D and is
    refused by the score checks)."""
    scores = np.asarray(scores)
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    return scores


def score_standardisation(scores):
    """``(exponent, mean, std)`` standardising ``scores`` without overflow or underflow.

    The scores are first scaled by the power of two ``2**-exponent`` that brings the largest
    magnitude into [0.5, 1) (exact in float64), then centred and scaled to unit standard
    deviation: ``u = (scores * 2**-exponent - mean) / std``. An affine change of the scores
    leaves ``u`` unchanged up to rounding (exactly for a power-of-two scale), for every
    finite input from the smallest subnormal to the largest float. ``std`` is 1 when all
    scores are equal (``u`` is then 0).
    """
    exponent = int(np.frexp(np.max(np.abs(scores)))[1])
    v = np.ldexp(scores, -exponent)
    mean = float(v.mean())
    std = float(v.std())
    return exponent, mean, std if std > 0 else 1.0


def _standardise(scores, exponent, mean, std):
    return (np.ldexp(scores, -exponent) - mean) / std


def _cost_gradient_hessian(params, u, s, prior):
    """C(a, b), its gradient and its Hessian (2 x 2).

    With ``z = a u + b + logit P``, ``dC/dz_i = -w_tar sigma(-z_i)`` (target) or
    ``w_non sigma(z_i)`` (non-target) and ``d2C/dz_i^2 = w_i sigma(z_i) sigma(-z_i)``; the
    chain rule through ``z_i = a u_i + b`` gives the gradient ``(sum dz u, sum dz)`` and the
    Hessian ``sum h_i [u_i, 1]' [u_i, 1]``.
    """
    a, b = params
    z = a * u + b + np.log(prior / (1 - prior))
    tar = s == 1
    w = np.where(tar, prior / tar.sum(), (1 - prior) / (~tar).sum())
    cost = np.sum(w * np.where(tar, np.logaddexp(0, -z), np.logaddexp(0, z)))
    dz = np.where(tar, -w * expit(-z), w * expit(z))
    h = w * expit(z) * expit(-z)
    gradient = np.array([dz @ u, dz.sum()])
    hessian = np.array([[h @ (u * u), h @ u], [h @ u, h.sum()]])
    return float(cost), gradient, hessian


def _newton(u, s, prior):
    """Minimise C(a, b) over standardised scores by Newton's method with a backtracking line
    search, to the limit of float64 (convex: the step is a descent direction). On trials that
    a threshold separates perfectly the optimum is at infinity; the iterations then stop at
    ``NEWTON_MAX_ITER`` or where the cost no longer decreases, with a large slope."""
    params = np.zeros(2)
    cost, gradient, hessian = _cost_gradient_hessian(params, u, s, prior)
    for _ in range(NEWTON_MAX_ITER):
        step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        decrement = float(gradient @ step)
        if not decrement > NEWTON_DECREMENT:
            break
        t = 1.0
        while True:  # backtracking (Armijo); full steps once the cost change is round-off
            trial = params - t * step
            new = _cost_gradient_hessian(trial, u, s, prior)
            if decrement < NEWTON_FULL_STEP or new[0] <= cost - 1e-4 * t * decrement:
                break
            t *= 0.5
            if t < 1e-12:
                return params
        params, (cost, gradient, hessian) = trial, new
    return params


class LinearCalibration(TransformerMixin, BaseEstimator):
    """Affine map of scores to LLRs by prior-weighted logistic regression (BOSARIS).

    Invariant to an affine change of the scores (``c s + d``, c > 0): the scores are
    standardised (:func:`score_standardisation`) and the two parameters fitted on them by
    Newton's method to convergence, so that scores of any magnitude (distances on raw
    features, PLDA LLRs of well-separated data) get the same calibrated LLRs.

    Parameters
    ----------
    prior : float in (0, 1), default=0.5
        The target prior the cross-entropy is weighted at (0.5: Cllr itself).

    Attributes
    ----------
    slope_, offset_ : float
        ``llr = slope_ * score + offset_`` (:meth:`transform` evaluates the same map through
        the standardised scores, which stays exact where the product would overflow).
    score_standardisation_ : tuple (exponent, mean, std)
        ``u = (score * 2**-exponent - mean) / std`` is what the fit saw.
    coef_ : ndarray of shape (2,)
        ``llr = coef_[0] * u + coef_[1]``.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.backend import LinearCalibration
    >>> scores = np.array([0.1, 0.4, 0.35, 0.8, 0.6, 0.9])
    >>> y = np.array([-1, -1, 1, -1, 1, 1])
    >>> small = LinearCalibration().fit(scores, y).transform([0.5])
    >>> large = LinearCalibration().fit(1e6 * scores - 3, y).transform([1e6 * 0.5 - 3])
    >>> bool(np.allclose(small, large, rtol=1e-9))
    True
    """

    _parameter_constraints = {"prior": [Interval(Real, 0, 1, closed="neither")]}

    def __init__(self, prior=0.5):
        self.prior = prior

    def fit(self, scores, y):
        """Fit on scores (n,) or (n, 1) with trial labels (+1 / 1 target, -1 / 0 non)."""
        validate_params(self)
        s, scores = check_labels_and_scores(y, _scores_column(scores))
        require_both_classes(s)
        self.score_standardisation_ = score_standardisation(scores)
        u = _standardise(scores, *self.score_standardisation_)
        self.coef_ = _newton(u, s, self.prior)
        exponent, mean, std = self.score_standardisation_
        a, b = self.coef_
        with np.errstate(over="ignore"):
            self.slope_ = float(np.ldexp(a / std, -exponent))
        self.offset_ = float(b - a * mean / std)
        self.n_features_in_ = 1
        return self

    def transform(self, scores):
        """LLRs of the scores (n,) or (n, 1), shape (n,); one score is fine."""
        check_is_fitted(self, "coef_")
        scores = check_scores(_scores_column(scores))
        u = _standardise(scores, *self.score_standardisation_)
        return self.coef_[0] * u + self.coef_[1]

    predict = transform


class PAVCalibration(TransformerMixin, BaseEstimator):
    """Monotone (PAV / isotonic) map of scores to LLRs, linearly interpolated between the
    fitted scores and clipped beyond; LLRs are clipped to +-``max_llr`` (pure bins would be
    +-inf). Invariant to an affine change of the scores (interpolation on the standardised
    scores, :func:`score_standardisation`).

    Parameters
    ----------
    max_llr : float > 0, default=20.0
        The largest LLR magnitude given.

    Attributes
    ----------
    x_ : ndarray
        The fitted scores, sorted, standardised as ``score_standardisation_`` says.
    llr_ : ndarray
        Their LLRs.
    score_standardisation_ : tuple (exponent, mean, std)

    Examples
    --------
    Trials that a threshold separates get the clipped LLRs +-``max_llr``; a score between
    the two bins is interpolated, and the map is monotone:

    >>> import numpy as np
    >>> from metricfit.backend import PAVCalibration
    >>> pav = PAVCalibration(max_llr=20.0).fit([1.0, 2.0, 3.0, 4.0], [-1, -1, 1, 1])
    >>> pav.transform([0.0, 2.5, 5.0])
    array([-20.,   0.,  20.])
    >>> scores = np.array([0.1, 0.4, 0.35, 0.8, 0.6, 0.9])
    >>> pav = PAVCalibration().fit(scores, [-1, -1, 1, -1, 1, 1])
    >>> llr = pav.transform(np.sort(scores))
    >>> llr
    array([-20.,   0.,   0.,   0.,   0.,  20.])
    >>> bool(np.all(np.diff(llr) >= 0))
    True
    """

    _parameter_constraints = {"max_llr": [Interval(Real, 0, None, closed="neither")]}

    def __init__(self, max_llr=20.0):
        self.max_llr = max_llr

    def fit(self, scores, y):
        """Fit on scores (n,) or (n, 1) with trial labels (+1 / 1 target, -1 / 0 non)."""
        validate_params(self)
        s, scores = check_labels_and_scores(y, _scores_column(scores))
        llr = np.clip(metrics.pav_llr(s, scores), -self.max_llr, self.max_llr)
        self.score_standardisation_ = score_standardisation(scores)
        order = np.argsort(scores, kind="stable")
        self.x_ = _standardise(scores[order], *self.score_standardisation_)
        self.llr_ = llr[order]
        self.n_features_in_ = 1
        return self

    def transform(self, scores):
        """LLRs of the scores (n,) or (n, 1), shape (n,); one score is fine."""
        check_is_fitted(self, "x_")
        scores = check_scores(_scores_column(scores))
        return np.interp(_standardise(scores, *self.score_standardisation_), self.x_, self.llr_)

    predict = transform


class CalibratedScorer(BaseEstimator):
    """A fitted learner whose ``pair_score`` is calibrated into an LLR on labelled pairs.

    The learner is used as given (never refitted): fit the learner on training pairs, this
    wrapper on *validation* pairs. ``decision_function = pair_score - threshold_`` with
    ``threshold_`` the Bayes threshold at ``decision_prior`` (0 at 0.5); ``predict``
    answers in the coding of the labels given to ``fit`` (``classes_``).

    Parameters
    ----------
    estimator : fitted learner or Pipeline ending in one
    method : {'linear', 'pav'}, default='linear'
    prior : float in (0, 1), default=0.5
        Prior of the linear calibration's cost.
    decision_prior : float in (0, 1), default=0.5

    Attributes
    ----------
    calibration_ : LinearCalibration or PAVCalibration
    threshold_ : float
    classes_ : ndarray of shape (2,)
        The two labels of ``y``'s coding ({-1, 1}, {0, 1} or {False, True}); ``classes_[1]``
        is "same identity".

    Examples
    --------
    A cosine learner fitted on training pairs, calibrated on other (validation) pairs; the
    calibrated LLRs of test pairs have a lower Cllr than the raw cosines read as LLRs:

    >>> import numpy as np
    >>> from metricfit.learners import CosineSimilarity
    >>> from metricfit.backend import CalibratedScorer
    >>> from metricfit.metrics import bayes_threshold, cllr
    >>> rng = np.random.default_rng(0)
    >>> def pairs(n):
    ...     a = rng.normal(size=(n, 3))
    ...     same = np.arange(n) % 2 == 0
    ...     b = np.where(same[:, None], a + 0.3 * rng.normal(size=(n, 3)),
    ...                  rng.normal(size=(n, 3)))
    ...     return np.stack([a, b], axis=1), np.where(same, 1, -1)
    >>> (train, y_train), (val, y_val), (test, y_test) = pairs(200), pairs(200), pairs(200)
    >>> cosine = CosineSimilarity().fit(train, y_train)
    >>> calibrated = CalibratedScorer(cosine).fit(val, y_val)
    >>> raw, llr = cosine.pair_score(test), calibrated.pair_score(test)
    >>> round(cllr(y_test, raw), 3), round(cllr(y_test, llr), 3)
    (0.77, 0.371)
    >>> bool(np.array_equal(calibrated.predict(test), np.where(llr >= 0, 1, -1)))
    True

    ``decision_prior`` moves the threshold to the Bayes decision at that prior:

    >>> cal01 = CalibratedScorer(cosine, decision_prior=0.01).fit(val, y_val)
    >>> round(cal01.threshold_, 3), bool(cal01.threshold_ == bayes_threshold(0.01))
    (4.595, True)
    """

    _parameter_constraints = {"method": [StrOptions({"linear", "pav"})],
                              "prior": [Interval(Real, 0, 1, closed="neither")],
                              "decision_prior": [Interval(Real, 0, 1, closed="neither")]}

    def __init__(self, estimator, method="linear", prior=0.5, decision_prior=0.5):
        self.estimator = estimator
        self.method = method
        self.prior = prior
        self.decision_prior = decision_prior

    def fit(self, pairs, y):
        """Calibrate the estimator's scores of labelled (validation) pairs."""
        validate_params(self)
        scores = llr_response(self.estimator, pairs)
        self.calibration_ = (LinearCalibration(self.prior) if self.method == "linear"
                             else PAVCalibration()).fit(scores, y)
        self.threshold_ = metrics.bayes_threshold(self.decision_prior)
        self.classes_ = pair_classes(y)
        return self

    def pair_score(self, pairs):
        """Calibrated LLRs of the pairs (one pair is fine)."""
        check_is_fitted(self, "calibration_")
        return self.calibration_.transform(llr_response(self.estimator, pairs))

    def decision_function(self, pairs):
        """``pair_score - threshold_``: >= 0 decides "same identity"."""
        return self.pair_score(pairs) - self.threshold_

    def predict(self, pairs):
        """``classes_[1]`` where the decision function is >= 0, else ``classes_[0]``."""
        return np.where(self.decision_function(pairs) >= 0, self.classes_[1], self.classes_[0])

    def __metricfit_tags__(self):
        return PairTags(score_kind="llr")
