r"""Score normalisation with a cohort: z-norm, t-norm, s-norm and adaptive s-norm.

For a trial (e, t) with raw score ``s(e, t)`` and a cohort of points c_1..c_K (other
identities, never in the trials), let ``mu_e, sd_e`` be the mean and standard deviation of
``s(e, c_k)`` over the cohort and ``mu_t, sd_t`` those of ``s(c_k, t)``:

- z-norm: ``(s - mu_e) / sd_e``   (enrolment side);
- t-norm: ``(s - mu_t) / sd_t``   (test side);
- s-norm: the mean of the two (symmetric);
- adaptive s-norm (as-norm; Matejka et al. 2017, Cumani et al. 2011): as s-norm, with each
  side's statistics over its ``top_n`` highest cohort scores only.

Any learner works: the cross scores are the learner's ``pair_score`` (through a Pipeline's
transformers) of every trial side against every cohort point, ``chunk`` sides at a time
(memory O(chunk K d)). Cosine learners and PLDA take a fast path: both sides are embedded
once and the (n, K) score matrix is one GEMM (the cosine of unit embeddings; for PLDA the
LLR is a quadratic form in the PLDA basis, :meth:`metricfit.backend.plda.PLDAScorer.cross_llr`).
The fast path is chosen from the learner's declared score kind
(:func:`metricfit.pairs.tags.score_kind`).

:func:`normalize_scores` also takes torch, CuPy or array_api_strict arrays with array-API
dispatch on (:func:`metricfit.array_api_dispatch`) and computes in their namespace and on their
device (the learners' cross scores, :func:`cohort_scores`, stay NumPy).
"""

from numbers import Integral

import numpy as np

from .._array_api import get_namespace, to_numpy
from .._deprecation import deprecated_aliases
from ..metrics.scorers import llr_response
from ..pairs import check_points
from ..pairs.checks import check_scores
from ..pairs.rows import unit_rows
from ..pairs.tags import before_final_step, final_step, score_kind
from .plda import plda_scorer

__all__ = ["cohort_scores", "normalize_scores", "ScoreNormalizer", "METHODS"]

METHODS = ("z-norm", "t-norm", "s-norm", "as-norm")


def _fast_cross_scores(learner, X, cohort):
    """The (n, K) score matrix by GEMM for cosine learners and PLDA; None for others."""
    last, kind = final_step(learner), score_kind(learner)
    if kind == "cosine" and hasattr(last, "transform"):
        A, B = (unit_rows(last.transform(before_final_step(learner, Z))) for Z in (X, cohort))
        return A @ B.T
    scorer = plda_scorer(last)
    if kind == "llr" and scorer is not None:
        A, B = (last.transform(before_final_step(learner, Z)) for Z in (X, cohort))
        return scorer.cross_llr(A, B)
    return None


def cohort_scores(learner, X, cohort, chunk=256):
    """``(n, K)`` scores of every row of X against every cohort point (X first in the pair).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit import PLDA
    >>> from metricfit.backend.score_norm import cohort_scores
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(np.arange(40), 4)
    >>> X = 3 * rng.normal(size=(40, 5))[labels] + rng.normal(size=(160, 5))
    >>> plda = PLDA().fit(X[:120], labels[:120])
    >>> S = cohort_scores(plda, X[120:125], X[:100])
    >>> S.shape
    (5, 100)
    >>> pairs = np.stack([np.repeat(X[120:125], 100, axis=0), np.tile(X[:100], (5, 1))], axis=1)
    >>> bool(np.allclose(S.ravel(), plda.pair_score(pairs)))
    True
    """
    X, cohort = check_points(X), check_points(cohort, what="cohort")
    if X.shape[1] != cohort.shape[1]:
        raise ValueError(f"cohort has {cohort.shape[1]} features, the trials {X.shape[1]}.")
    fast = _fast_cross_scores(learner, X, cohort)
    if fast is not None:
        return fast
    K = cohort.shape[0]
    out = np.empty((X.shape[0], K))
    for start in range(0, X.shape[0], chunk):
        rows = X[start:start + chunk]
        pairs = np.stack([np.repeat(rows, K, axis=0), np.tile(cohort, (rows.shape[0], 1))],
                         axis=1)
        out[start:start + chunk] = np.asarray(llr_response(learner, pairs)).reshape(-1, K)
    return out


def _check_cohort_scores(cohort, n, side):
    """The (n, K) cohort scores of one side as float64; NaN, infinity or a wrong shape is a
    ValueError naming the side."""
    name = f"{side}_cohort"
    cohort = np.asarray(cohort)
    if cohort.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numeric scores, got dtype {cohort.dtype}.")
    if cohort.ndim != 2 or cohort.shape[0] != n:
        raise ValueError(f"{name} must have shape (n_trials, n_cohort) = ({n}, K), "
                         f"got {cohort.shape}.")
    cohort = cohort.astype(np.float64)
    bad = ~np.isfinite(cohort)
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        kind = "NaN" if np.isnan(cohort).any() else "infinity"
        raise ValueError(f"{name} contains {kind} (first in trial {row}): every cohort score "
                         "must be finite.")
    return cohort


def _normalise_side(scores, cohort, top_n, side):
    """``(scores - mu) / sd`` over each trial's cohort scores (its ``top_n`` highest if set).

    Scale-invariant for every finite input: each row is first scaled by the power of two
    ``2**-e`` that brings its largest cohort magnitude into [0.5, 1) (exact), so the mean and
    the standard deviation neither overflow (scores near 1e300) nor underflow (near 1e-300);
    scaling all scores by a power of two gives the same result bit for bit. A row whose
    cohort scores are all equal has no spread to divide by: a ValueError.
    """
    if top_n is not None:
        cohort = -np.sort(-cohort, axis=1)[:, :top_n]
    exponent = np.frexp(np.abs(cohort).max(axis=1))[1]
    v = np.ldexp(cohort, -exponent[:, None])
    mean, sd = v.mean(axis=1), v.std(axis=1)
    flat = np.flatnonzero(~(sd > 0))
    if flat.size:
        raise ValueError(f"the {side} cohort scores of trial {int(flat[0])} are all equal "
                         f"({cohort[flat[0], 0]!r}): their standard deviation is 0 and the "
                         f"{side}-side normalisation is undefined (use a larger or more varied "
                         "cohort, or a larger top_n).")
    with np.errstate(over="ignore"):
        return (np.ldexp(scores, -exponent) - mean) / sd


def _check_top_n(top_n):
    if top_n is not None and (isinstance(top_n, bool) or not isinstance(top_n, Integral)
                              or top_n < 2):
        raise ValueError(f"top_n must be an integer >= 2 (a standard deviation needs two "
                         f"scores), got {top_n!r}.")


def normalize_scores(scores, enrol_cohort, test_cohort, method="s-norm", top_n=None):
    """Normalise raw trial scores (n,) given the (n, K) cohort scores of each side.

    Parameters
    ----------
    scores : array-like of shape (n_trials,)
        Finite raw scores.
    enrol_cohort, test_cohort : array-like of shape (n_trials, K)
        Finite scores of each trial's enrolment side and test side against the cohort.
    method : {'z-norm', 't-norm', 's-norm', 'as-norm'}, default='s-norm'
    top_n : int >= 2 or None, default=None
        as-norm's cohort size per side (None: 200); ignored by the other methods.

    Returns
    -------
    ndarray of shape (n_trials,)
        Invariant to scaling all the scores by any c > 0 and to adding any constant (up to
        rounding; exactly for a power-of-two scale). A result that cannot be represented
        (a raw score 1e300 times the cohort's spread) or a cohort without spread is a
        ValueError.

    Examples
    --------
    A raw score 2 whose enrolment side scores 0 and 2 against the cohort (mean 1, standard
    deviation 1) and whose test side scores 1 and 3 (mean 2, standard deviation 1):

    >>> from metricfit.backend import normalize_scores
    >>> for method in ("z-norm", "t-norm", "s-norm"):
    ...     print(method, normalize_scores([2.0], [[0.0, 2.0]], [[1.0, 3.0]], method))
    z-norm [1.]
    t-norm [0.]
    s-norm [0.5]

    as-norm keeps each side's ``top_n`` highest cohort scores (enrolment: 12 and 10, mean
    11; test: 3 and 1, mean 2):

    >>> normalize_scores([2.0], [[0.0, 2.0, 10.0, 12.0]], [[1.0, 3.0, 0.0, 0.0]], "as-norm",
    ...                  top_n=2)
    array([-4.5])
    """
    if method not in METHODS:
        raise ValueError(f"unknown score normalisation {method!r}; choose from {METHODS}.")
    if method == "as-norm" and top_n is None:
        top_n = 200
    if method != "as-norm":
        top_n = None
    _check_top_n(top_n)
    xp, dispatched = get_namespace(scores, enrol_cohort if method != "t-norm" else None,
                                   test_cohort if method != "z-norm" else None,
                                   names=["scores", "enrol_cohort", "test_cohort"])
    if dispatched:
        return _normalize_scores_xp(xp, scores, enrol_cohort, test_cohort, method, top_n)
    scores = check_scores(scores)
    n = scores.size
    z = t = None
    if method != "t-norm":
        z = _normalise_side(scores, _check_cohort_scores(enrol_cohort, n, "enrol"), top_n,
                            "enrol")
    if method != "z-norm":
        t = _normalise_side(scores, _check_cohort_scores(test_cohort, n, "test"), top_n,
                            "test")
    out = z if t is None else t if z is None else 0.5 * z + 0.5 * t
    if not np.isfinite(out).all():
        row = int(np.flatnonzero(~np.isfinite(out))[0])
        raise ValueError(f"the normalised score of trial {row} overflows: its raw score "
                         f"{scores[row]!r} is too far from its cohort scores.")
    return out


def _first_row(xp, bad):
    """The index of the first True of a boolean vector (on the host)."""
    return int(xp.argmax(xp.astype(bad, xp.int8)))


def _xp_side(xp, scores, cohort, top_n, side):
    """:func:`_check_cohort_scores` and :func:`_normalise_side` in namespace ``xp``.

    The power-of-two rescaling of each row by its largest cohort magnitude uses
    ``2**-e`` with ``e = floor(log2(max |c|)) + 1`` (the array API has no ``frexp``), applied
    in two halves so that neither factor overflows; any power of two is exact, so the result
    is NumPy's up to the order of the reductions.
    """
    name = f"{side}_cohort"
    cohort = xp.asarray(cohort)
    if not xp.isdtype(cohort.dtype, ("real floating", "integral")):
        raise ValueError(f"{name} must hold numeric scores, got dtype {cohort.dtype}.")
    n = scores.shape[0]
    if cohort.ndim != 2 or cohort.shape[0] != n:
        raise ValueError(f"{name} must have shape (n_trials, n_cohort) = ({n}, K), "
                         f"got {tuple(cohort.shape)}.")
    cohort = xp.astype(cohort, xp.float64)
    bad = ~xp.all(xp.isfinite(cohort), axis=1)
    if bool(xp.any(bad)):
        kind = "NaN" if bool(xp.any(xp.isnan(cohort))) else "infinity"
        raise ValueError(f"{name} contains {kind} (first in trial {_first_row(xp, bad)}): "
                         "every cohort score must be finite.")
    if top_n is not None:
        cohort = xp.sort(cohort, axis=1, descending=True)[:, :top_n]
    largest = xp.max(xp.abs(cohort), axis=1)
    positive = largest > 0
    e = xp.where(positive, xp.floor(xp.log2(xp.where(positive, largest, 1.0))) + 1, 0.0)
    half = xp.floor(e / 2)
    first, second = xp.pow(2.0, -half), xp.pow(2.0, -(e - half))
    v = (cohort * first[:, None]) * second[:, None]
    mean, sd = xp.mean(v, axis=1), xp.std(v, axis=1)
    flat = ~(sd > 0)
    if bool(xp.any(flat)):
        row = _first_row(xp, flat)
        raise ValueError(f"the {side} cohort scores of trial {row} are all equal "
                         f"({float(cohort[row, 0])!r}): their standard deviation is 0 and the "
                         f"{side}-side normalisation is undefined (use a larger or more varied "
                         "cohort, or a larger top_n).")
    return ((scores * first) * second - mean) / sd


def _normalize_scores_xp(xp, scores, enrol_cohort, test_cohort, method, top_n):
    """:func:`normalize_scores` on arrays of namespace ``xp`` (same checks and errors)."""
    scores = xp.asarray(scores)
    if not xp.isdtype(scores.dtype, ("real floating", "integral")) or scores.ndim != 1 \
            or scores.shape[0] == 0:
        raise ValueError(f"scores must be a non-empty numeric 1-D array, got dtype "
                         f"{scores.dtype} and shape {tuple(scores.shape)}.")
    scores = xp.astype(scores, xp.float64)
    if bool(xp.any(xp.isnan(scores))):
        raise ValueError("scores contains NaN: every score must be a number.")
    if not bool(xp.all(xp.isfinite(scores))):
        raise ValueError("scores contains infinity: every score must be finite.")
    z = t = None
    if method != "t-norm":
        z = _xp_side(xp, scores, enrol_cohort, top_n, "enrol")
    if method != "z-norm":
        t = _xp_side(xp, scores, test_cohort, top_n, "test")
    out = z if t is None else t if z is None else 0.5 * z + 0.5 * t
    bad = ~xp.isfinite(out)
    if bool(xp.any(bad)):
        row = _first_row(xp, bad)
        raise ValueError(f"the normalised score of trial {row} overflows: its raw score "
                         f"{float(to_numpy(scores[row:row + 1])[0])!r} is too far from its "
                         "cohort scores.")
    return out


class ScoreNormalizer:
    """A fitted learner's pair scores, normalised with a cohort of points.

    Parameters
    ----------
    estimator : fitted learner (or Pipeline ending in one)
    cohort : array-like of shape (K, n_features)
        Points of identities outside the trials (e.g. the training images).
    method : {'z-norm', 't-norm', 's-norm', 'as-norm'}, default='s-norm'
    top_n : int >= 2 or None, default=None
        The cohort size of as-norm (None: 200, capped at K).

    Examples
    --------
    A PLDA fitted on identities 0-29, a cohort of their samples, trials among identities
    30-39; z-norm is ``(raw - mean) / std`` of the enrolment side's cohort scores:

    >>> import numpy as np
    >>> from metricfit import PLDA
    >>> from metricfit.backend import ScoreNormalizer
    >>> from metricfit.backend.score_norm import cohort_scores
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(np.arange(40), 4)
    >>> X = 3 * rng.normal(size=(40, 5))[labels] + rng.normal(size=(160, 5))
    >>> plda = PLDA().fit(X[:120], labels[:120])
    >>> pairs = np.stack([X[120:160:2], X[121:160:2]], axis=1)  # 20 target trials
    >>> znorm = ScoreNormalizer(plda, X[:120], "z-norm").pair_score(pairs)
    >>> enrol = cohort_scores(plda, pairs[:, 0], X[:120])
    >>> by_hand = (plda.pair_score(pairs) - enrol.mean(axis=1)) / enrol.std(axis=1)
    >>> bool(np.allclose(znorm, by_hand))
    True
    >>> snorm = ScoreNormalizer(plda, X[:120]).pair_score(pairs)
    >>> snorm.shape, bool(np.all(snorm > 0))
    ((20,), True)
    """

    def __init__(self, estimator, cohort, method="s-norm", top_n=None):
        if method not in METHODS:
            raise ValueError(f"unknown score normalisation {method!r}; choose from {METHODS}.")
        _check_top_n(top_n)
        self.estimator, self.method = estimator, method
        self.cohort = check_points(cohort, what="cohort")
        if self.cohort.shape[0] < 2:
            raise ValueError(f"cohort needs at least 2 points (a standard deviation of their "
                             f"scores), got {self.cohort.shape[0]}.")
        self.top_n = None if top_n is None else min(top_n, self.cohort.shape[0])

    def pair_score(self, pairs):
        pairs = np.asarray(pairs)
        raw = np.asarray(llr_response(self.estimator, pairs), dtype=np.float64)
        enrol = cohort_scores(self.estimator, pairs[:, 0], self.cohort)
        test = cohort_scores(self.estimator, self.cohort, pairs[:, 1]).T  # cohort first
        top_n = self.top_n if self.top_n is not None else min(200, self.cohort.shape[0])
        return normalize_scores(raw, enrol, test, self.method, top_n)

    decision_function = pair_score


__getattr__ = deprecated_aliases(__name__, {"normalise_scores": ("normalize_scores",
                                                                 normalize_scores)})
