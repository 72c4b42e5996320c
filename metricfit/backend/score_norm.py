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
LLR is a quadratic form in the PLDA basis, ``c + q.(a^2) + q.(b^2) + (r a).b``).
"""

import numpy as np

from ..metrics import _llr_response
from ..pairs import check_points

__all__ = ["cohort_scores", "normalise_scores", "ScoreNormalizer", "METHODS"]

METHODS = ("z-norm", "t-norm", "s-norm", "as-norm")


def _split(learner):
    steps = getattr(learner, "steps", None)
    if not steps:
        return (lambda X: X), learner
    front = learner[:-1]
    return front.transform, steps[-1][1]


def _fast_cross_scores(learner, X, cohort):
    """The (n, K) score matrix by GEMM for cosine learners and PLDA; None for others."""
    front, last = _split(learner)
    kind = getattr(last, "_score_kind", None)
    if kind == "cosine" and hasattr(last, "transform"):
        A, B = (np.asarray(last.transform(front(Z)), dtype=np.float64) for Z in (X, cohort))
        A, B = (np.divide(Z, n, out=np.zeros_like(Z), where=n > 0)
                for Z, n in ((A, np.linalg.norm(A, axis=1, keepdims=True)),
                             (B, np.linalg.norm(B, axis=1, keepdims=True))))
        return A @ B.T
    if kind == "llr" and hasattr(last, "psi_"):
        A, B = (np.asarray(last.transform(front(Z)), dtype=np.float64) for Z in (X, cohort))
        p = last.psi_
        s = p + 1.0
        D = s * s - p * p
        q, r = -0.5 * (s / D - 1.0 / s), p / D
        const = -0.5 * np.sum(np.log(D / (s * s)))
        return const + (A * A) @ q[:, None] + ((B * B) @ q)[None, :] + (A * r) @ B.T
    return None


def cohort_scores(learner, X, cohort, chunk=256):
    """``(n, K)`` scores of every row of X against every cohort point (X first in the pair)."""
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
        out[start:start + chunk] = np.asarray(_llr_response(learner, pairs)).reshape(-1, K)
    return out


def _stats(S, top_n):
    if top_n is not None:
        S = -np.sort(-S, axis=1)[:, :top_n]
    sd = S.std(axis=1)
    return S.mean(axis=1), np.where(sd > 0, sd, 1.0)


def normalise_scores(scores, enrol_cohort, test_cohort, method="s-norm", top_n=None):
    """Normalise raw trial scores (n,) given the (n, K) cohort scores of each side."""
    if method not in METHODS:
        raise ValueError(f"unknown score normalisation {method!r}; choose from {METHODS}.")
    if method == "as-norm" and top_n is None:
        top_n = 200
    if method != "as-norm":
        top_n = None
    if top_n is not None and top_n < 1:
        raise ValueError(f"top_n must be >= 1, got {top_n}.")
    z = (scores - (m := _stats(enrol_cohort, top_n))[0]) / m[1]
    t = (scores - (m := _stats(test_cohort, top_n))[0]) / m[1]
    return {"z-norm": z, "t-norm": t}.get(method, 0.5 * (z + t))


class ScoreNormalizer:
    """A fitted learner's pair scores, normalised with a cohort of points.

    Parameters
    ----------
    estimator : fitted learner (or Pipeline ending in one)
    cohort : array-like of shape (K, n_features)
        Points of identities outside the trials (e.g. the training images).
    method : {'z-norm', 't-norm', 's-norm', 'as-norm'}, default='s-norm'
    top_n : int or None, default=None
        The cohort size of as-norm (None: 200, capped at K).
    """

    def __init__(self, estimator, cohort, method="s-norm", top_n=None):
        if method not in METHODS:
            raise ValueError(f"unknown score normalisation {method!r}; choose from {METHODS}.")
        self.estimator, self.method = estimator, method
        self.cohort = check_points(cohort, what="cohort")
        self.top_n = None if top_n is None else min(int(top_n), self.cohort.shape[0])

    def pair_score(self, pairs):
        pairs = np.asarray(pairs)
        raw = np.asarray(_llr_response(self.estimator, pairs), dtype=np.float64)
        enrol = cohort_scores(self.estimator, pairs[:, 0], self.cohort)
        test = cohort_scores(self.estimator, self.cohort, pairs[:, 1]).T  # cohort first
        top_n = self.top_n if self.top_n is not None else min(200, self.cohort.shape[0])
        return normalise_scores(raw, enrol, test, self.method, top_n)

    decision_function = pair_score
