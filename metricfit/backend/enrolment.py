r"""N-vs-M (multi-enrolment) scoring: a claimed identity enrolled from several samples,
tested with one sample or a set.

Methods (``score_sets(learner, enrol, test, method)``):

- ``'plda'`` (:class:`metricfit.PLDA` only; the default for it): the closed-form LLR of the
  enrolment mean of n samples against the test mean of m samples (see
  :mod:`metricfit.backend.plda`), exact under the model.
- ``'mean-embedding'`` (default for every other learner): the learner's score of the mean
  of the enrolment vectors against the mean of the test vectors. For cosine learners
  the mean is taken of the *embeddings* ``learner.transform(x)`` after L2 normalisation,
  then scored by the cosine; otherwise of the input vectors, scored by ``pair_score``.
- ``'mean-score'`` / ``'max-score'``: the mean / max of the n x m pairwise scores.
- ``'gaussian'``: seed 000 section 4.1, the Gaussian model of the claimed subject fitted on
  the embeddings of the enrolment samples (:func:`metricfit.backend.gaussian.fit_gaussian`,
  shrinkage 0.5), each test sample scored by ``log p_genuine - log p_impostor``, where
  ``p_impostor`` of a model is, as in the paper, the mean density of the claims evaluated
  against it, here all the test samples given with that model in this call (the paper
  takes the impostor claims; without labels we take every claim). Test sets of several
  samples get the mean of their samples' scores. Needs ``n_i >= 2`` enrolment samples.
"""

import numpy as np
from scipy.special import logsumexp

from ..metrics.scorers import llr_response
from ..pairs import check_points
from ..pairs.checks import rescaled_together
from ..pairs.rows import unit_rows
from ..pairs.tags import before_final_step, final_step, score_kind
from .gaussian import fit_gaussian, gaussian_log_density
from .plda import plda_scorer

__all__ = ["score_sets", "METHODS"]

METHODS = ("plda", "mean-embedding", "mean-score", "max-score", "gaussian")


def _embed(learner, X):
    return np.asarray(learner.transform(X) if hasattr(learner, "transform") else X)


def _sets(sets, what, n_features):
    out = []
    for i, rows in enumerate(sets):
        out.append(check_points(np.atleast_2d(rows), n_features=n_features, what=f"{what}[{i}]"))
    return out


def score_sets(learner, enrol, test, method=None):
    """Score ``test[i]`` against the model enrolled from ``enrol[i]``, for each i.

    Parameters
    ----------
    learner : fitted learner or Pipeline ending in one
    enrol, test : sequences of array-like of shape (n_i, d) / (m_i, d) (a 1-D row is one
        sample)
    method : str or None
        One of :data:`METHODS`; None: 'plda' for PLDA, else 'mean-embedding'.

    Returns
    -------
    scores : ndarray of shape (len(enrol),)

    Examples
    --------
    A PLDA fitted on identities 0-29; identity 30 is enrolled from three samples and tested
    with its fourth sample (a target trial) and with a sample of identity 31 (non-target):

    >>> import numpy as np
    >>> from metricfit import PLDA
    >>> from metricfit.backend import score_sets
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat(np.arange(40), 4)
    >>> X = 3 * rng.normal(size=(40, 5))[labels] + rng.normal(size=(160, 5))
    >>> plda = PLDA().fit(X[:120], labels[:120])
    >>> enrol, test = [X[120:123], X[120:123]], [X[123], X[124]]
    >>> for method in ("plda", "mean-embedding", "mean-score", "max-score"):
    ...     print(method, np.round(score_sets(plda, enrol, test, method=method), 2))
    plda [  4.49 -22.04]
    mean-embedding [  3.83 -13.34]
    mean-score [  3.47 -13.7 ]
    max-score [  4.5  -11.84]

    A test set of several samples (N-vs-M), and 1-vs-1, which is ``pair_score``:

    >>> np.round(score_sets(plda, enrol, [X[123], X[124:128]]), 2)
    array([  4.49, -61.89])
    >>> one = score_sets(plda, [X[120]], [X[123]])
    >>> bool(np.allclose(one, plda.pair_score(np.stack([X[[120]], X[[123]]], axis=1))))
    True
    """
    last = final_step(learner)
    is_plda = plda_scorer(last) is not None
    method = method or ("plda" if is_plda else "mean-embedding")
    if method not in METHODS:
        raise ValueError(f"unknown enrolment method {method!r}; choose from {METHODS}.")
    if len(enrol) != len(test):
        raise ValueError(f"enrol and test hold {len(enrol)} and {len(test)} sets: one test set "
                         "per enrolment model.")
    if len(enrol) == 0:
        raise ValueError("no trials: enrol and test are empty.")
    n_features = np.atleast_2d(enrol[0]).shape[1]
    enrol, test = _sets(enrol, "enrol", n_features), _sets(test, "test", n_features)
    if method == "plda":
        if not is_plda:
            raise ValueError(f"method 'plda' needs a PLDA learner, got {type(last).__name__}.")
        return last.score_sets([before_final_step(learner, e) for e in enrol],
                               [before_final_step(learner, t) for t in test])
    if method == "mean-embedding":
        if score_kind(learner) == "cosine":
            means = [[unit_rows(_embed(learner, x)).mean(axis=0) for x in sets]
                     for sets in (enrol, test)]
            return _cosine(np.asarray(means[0]), np.asarray(means[1]))
        pairs = np.stack([np.asarray([e.mean(axis=0) for e in enrol]),
                          np.asarray([t.mean(axis=0) for t in test])], axis=1)
        return np.asarray(llr_response(learner, pairs), dtype=np.float64)
    if method in ("mean-score", "max-score"):
        reduce = np.mean if method == "mean-score" else np.max
        out = []
        for e, t in zip(enrol, test, strict=True):
            pairs = np.stack([np.repeat(e, t.shape[0], axis=0), np.tile(t, (e.shape[0], 1))],
                             axis=1)
            out.append(reduce(llr_response(learner, pairs)))
        return np.asarray(out, dtype=np.float64)
    return _gaussian(learner, enrol, test)


def _cosine(A, B):
    return np.sum(unit_rows(A) * unit_rows(B), axis=1)


def _gaussian(learner, enrol, test):
    """Seed 000 4.1 per enrolment model: log p_genuine - log mean_claims p_genuine."""
    if any(e.shape[0] < 2 for e in enrol):
        raise ValueError("method 'gaussian' needs at least 2 enrolment samples per model.")
    # log p_genuine - log p_impostor does not depend on a common scale of the embeddings:
    # beyond ~1e+-77 one power of two for all keeps the covariances from over- or underflow
    embedded = rescaled_together(*(_embed(learner, x) for x in (*enrol, *test)))
    enrol_z, test_z = embedded[:len(enrol)], embedded[len(enrol):]
    log_p = []
    models = {}
    for e, ze, zt in zip(enrol, enrol_z, test_z, strict=True):
        key = e.tobytes()
        if key not in models:
            models[key] = fit_gaussian(ze)
        log_p.append(gaussian_log_density(zt, *models[key]))
    out = np.empty(len(enrol))
    keys = [e.tobytes() for e in enrol]
    for key in dict.fromkeys(keys):  # first-seen order: the same error every run
        rows = [i for i, k in enumerate(keys) if k == key]
        claims = np.concatenate([log_p[i] for i in rows])
        if claims.size < 2:
            raise ValueError(
                f"method 'gaussian' scores a model against the mean density of all its claims "
                f"in the call: enrolment set {rows[0]} has a single test sample, so its score "
                "would be 0 whatever the sample. Score each model's claims together (several "
                "trials with the same enrolment set in one call), or use another method.")
        impostor = logsumexp(claims) - np.log(claims.size)
        for i in rows:
            out[i] = np.mean(log_p[i] - impostor)
    return out
