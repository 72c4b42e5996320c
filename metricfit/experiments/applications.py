"""Uses of a learned face metric beyond verification (seed 001, section 6): unsupervised
complete-linkage clustering scored by the labelling cost, and multi-class recognition from a
single exemplar per class scored by the precision at equal error rate."""

from collections import namedtuple

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist, squareform

from ..learners import score_kind
from ..pairs.checks import check_identity_labels, identity_codes

__all__ = ["labelling_cost", "pairwise_scores", "complete_linkage_cost_curve", "CostCurve",
           "one_exemplar_recognition", "OneExemplarResult"]

CHUNK = 2 ** 22  # floats per block of pairs when scoring through pair_score


def _points(X, what):
    X = np.asarray(X)
    if X.ndim != 2 or X.size == 0 or X.dtype.kind not in "biuf":
        raise ValueError(f"{what} must be a non-empty numeric 2-D array (n_samples, "
                         f"n_features), got shape {X.shape} and dtype {X.dtype}.")
    if not np.isfinite(X).all():
        raise ValueError(f"{what} contains NaN or infinity.")
    return X.astype(np.float64)


def labelling_cost(labels_true, clusters):
    """Clicks a user needs to label every face of a clustering (seed 001, section 6).

    Seed 001: "one [button] to assign a single label to all faces in a cluster, and one to
    assign a label to a single face [...] For a cluster of N faces, the cost is ``1 + (N -
    max({n_i}))``, where n_i denotes the number of faces of person i in the cluster. The cost
    to label all faces is then the sum of the costs to label the faces in each cluster."
    Hence ``cost = n_clusters + n_faces - sum_clusters max_i n_i``: the number of persons for
    the optimal clustering, ``n_faces`` for all singletons, ``1 + n_faces - (faces of the most
    frequent person)`` for one cluster (17, 411 and 341 in the paper).

    Parameters
    ----------
    labels_true, clusters : array-like of shape (n_faces,)
        Identity and cluster of each face (any values).

    Returns
    -------
    cost : int

    References
    ----------
    - Guillaumin, Verbeek and Schmid, "Is that you? Metric Learning Approaches for Face
      Identification", ICCV 2009 (seed 001).
    """
    _, t = identity_codes(labels_true, "labels_true")
    _, c = identity_codes(clusters, "clusters", t.size)
    table = np.zeros((c.max() + 1, t.max() + 1), dtype=np.int64)
    np.add.at(table, (c, t), 1)
    return int(table.shape[0] + t.size - table.max(axis=1).sum())


def pairwise_scores(learner, X, Y=None, *, exact=False):
    """Similarity (higher = more similar) of every row of X to every row of Y under a learner.

    Built from the embeddings ``learner.transform`` in O(n m k): cosine similarity for cosine
    learners (:func:`~metricfit.learners.score_kind` 'cosine': TSML, CSML, CosineSimilarity),
    minus the squared Euclidean distance for distance learners (DDML, LDML: for LDML the
    distance of ``transform``, i.e. of the PSD part of M, without the bias b). Other learners
    (MkNN) or ``exact=True`` score each of the n m pairs with ``learner.pair_score`` (in
    blocks). A learner that declares no score kind is a TypeError.

    Parameters
    ----------
    learner : fitted metricfit learner (or Pipeline ending in one), or None
        None: plain L2 (minus the squared Euclidean distance of the inputs), the baseline
        of seed 001 section 6.
    X, Y : array-like of shape (n, d) and (m, d); Y=None (default) means Y = X
    exact : bool, default=False

    Returns
    -------
    S : ndarray of shape (n, m)

    References
    ----------
    - Guillaumin, Verbeek and Schmid, "Is that you? Metric Learning Approaches for Face
      Identification", ICCV 2009 (seed 001).
    """
    X = _points(X, "X")
    Y = X if Y is None else _points(Y, "Y")
    kind = "distance" if learner is None else score_kind(learner)
    if exact or kind not in ("cosine", "distance"):
        if learner is None:
            raise ValueError("exact=True needs a learner with pair_score.")
        rows, blocks = max(1, CHUNK // (2 * Y.size)), []
        for A in (X[i:i + rows] for i in range(0, len(X), rows)):
            pairs = np.empty((len(A), len(Y), 2, X.shape[1]))
            pairs[:, :, 0], pairs[:, :, 1] = A[:, None], Y[None]
            blocks.append(np.reshape(learner.pair_score(pairs.reshape(-1, 2, X.shape[1])),
                                     (len(A), len(Y))))
        return np.concatenate(blocks).astype(np.float64)
    E = X if learner is None else np.asarray(learner.transform(X), dtype=np.float64)
    F = E if Y is X else (Y if learner is None else np.asarray(learner.transform(Y), np.float64))
    if kind == "cosine":  # zero embeddings score 0, as cosine_rows
        E, F = (A / np.fmax(np.linalg.norm(A, axis=1, keepdims=True), 1e-300) for A in (E, F))
        return E @ F.T
    sq = np.sum(E ** 2, axis=1)[:, None] + np.sum(F ** 2, axis=1)[None, :] - 2 * E @ F.T
    return -np.clip(sq, 0, None)


def _condensed_distances(data, metric):
    """Condensed distance vector for scipy's linkage, from points or a distance matrix."""
    if isinstance(metric, str) and metric == "precomputed":
        D = _points(data, "distance matrix")
        if D.shape[0] != D.shape[1] or not np.allclose(D, D.T, rtol=1e-7, atol=1e-10):
            raise ValueError(f"a precomputed distance matrix must be square and symmetric, "
                             f"got shape {D.shape}.")
    elif isinstance(metric, str) or not hasattr(metric, "pair_score"):
        return pdist(_points(data, "data"), metric=metric)  # a name or a callable
    else:
        S, kind = pairwise_scores(metric, data), score_kind(metric)
        D = -S if kind == "distance" else (1 - S if kind in ("cosine", "probability")
                                           else S.max() - S)
    D = 0.5 * (D + D.T)
    np.fill_diagonal(D, 0)
    return squareform(D, checks=False)


CostCurve = namedtuple("CostCurve", "n_clusters cost threshold min_cost best_cost "
                       "best_n_clusters best_accuracy mean_cost")
CostCurve.__doc__ = """Labelling cost along a complete-linkage hierarchy (seed 001 sec. 6, Fig. 6).

    Arrays are indexed by ``n_clusters - 1``; ``threshold[k - 1]`` is the largest merge
    distance within the k-cluster level (-inf for singletons; tied merges follow scipy's
    order). ``min_cost[k - 1] = k + n - (sizes of the min(k, n_persons) largest persons)``, the
    lowest cost of any k clusters (Figure 6's "minimum"). ``best_*``: the cheapest level (the
    fewest clusters on a tie), as the paper reports it ("minimum cost of 109 [...] with only 25
    clusters [...] 75% of the faces are correctly classified", by cluster majority).
    ``mean_cost`` (area under the curve / n) is our addition, not the paper's.

    Examples
    --------
    Six faces of persons a, a, a, b, b, c on a line. Two clusters ({a, a, a}, {b, b, c})
    already cost the minimum of 3 clicks, with 5 of the 6 faces right by cluster majority:

    >>> import numpy as np
    >>> from metricfit.experiments.applications import complete_linkage_cost_curve
    >>> X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [9.0]])
    >>> curve = complete_linkage_cost_curve(X, ["a", "a", "a", "b", "b", "c"])
    >>> curve.cost.tolist(), curve.min_cost.tolist()
    ([4, 3, 3, 4, 5, 6], [4, 3, 3, 4, 5, 6])
    >>> curve.best_n_clusters, curve.best_cost, curve.best_accuracy
    (2, 3, 0.8333333333333334)
    >>> curve.threshold[:3].tolist()  # merge distances of the 1-, 2- and 3-cluster levels
    [9.0, 4.0, 0.2]
    """


def complete_linkage_cost_curve(data, labels, metric="euclidean"):
    """Labelling cost of complete-linkage clusterings at every number of clusters.

    Seed 001 section 6: "We cluster the faces using complete-linkage hierarchical clustering.
    This method yields a hierarchy of clusters by varying the maximum distance with which
    clusters can be merged." The hierarchy comes from ``scipy.cluster.hierarchy.linkage``
    (method='complete'); replaying its n - 1 merges gives the :func:`labelling_cost` of every
    level in O(n log n).

    Parameters
    ----------
    data : array-like of shape (n, d), or (n, n) distances if metric='precomputed'
    labels : array-like of shape (n,), the identity of each face
    metric : str or fitted metricfit learner, default='euclidean'
        A ``scipy.spatial.distance.pdist`` metric (name or callable); 'precomputed'; or a
        fitted learner (anything with ``pair_score``), whose :func:`pairwise_scores` S give
        ``1 - S`` (cosine; MkNN probability), ``-S`` (squared distance), else ``max S - S``.

    Returns
    -------
    curve : CostCurve
    """
    D = _condensed_distances(data, metric)
    n = int(round((1 + np.sqrt(1 + 8 * D.size)) / 2))
    _, t = identity_codes(labels, "labels", n)
    if n < 2:
        raise ValueError("clustering needs at least 2 faces.")
    Z = linkage(D, method="complete")
    members, top = [{c: 1} for c in t.tolist()], [1] * n
    correct = np.full(n, n, dtype=np.int64)  # faces right when labelling by cluster majority
    for step, (a, b) in enumerate(Z[:, :2].astype(np.int64).tolist()):
        A, B = members[a], members[b]
        if len(A) < len(B):
            A, B = B, A
        peak = max(top[a], top[b])
        for person, count in B.items():
            A[person] = A.get(person, 0) + count
            peak = max(peak, A[person])
        members.append(A)
        top.append(peak)
        members[a] = members[b] = None
        correct[n - step - 2] = correct[n - step - 1] - top[a] - top[b] + peak
    k = np.arange(1, n + 1)
    cost = k + n - correct  # labelling_cost of each level
    sizes = np.sort(np.bincount(t))[::-1]
    min_cost = k + n - np.cumsum(sizes)[np.minimum(k, sizes.size) - 1]
    best = int(np.argmin(cost))
    return CostCurve(k, cost, np.r_[Z[::-1, 2], -np.inf], min_cost, int(cost[best]), best + 1,
                     float(correct[best] / n), float(cost.mean()))


OneExemplarResult = namedtuple("OneExemplarResult", "precision threshold correctly_recognised "
                               "wrongly_recognised wrongly_rejected correctly_rejected "
                               "wrongly_accepted assigned accepted")
OneExemplarResult.__doc__ = """Outcome of :func:`one_exemplar_recognition`: the precision,
    the threshold on the best score (accept ``best >= threshold``), the five counts of seed 001
    Table 5, and per query its best exemplar's label (``assigned``) and ``accepted`` flag.

    Examples
    --------
    Exemplars of a and b; four queries: an a and a b recognised, an a taken for b, and a
    stranger z. Three queries are targets, so the equal error rate accepts the three best:

    >>> import numpy as np
    >>> from metricfit.experiments.applications import one_exemplar_recognition
    >>> scores = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.7], [0.3, 0.2]])
    >>> result = one_exemplar_recognition(scores, ["a", "b"], ["a", "b", "a", "z"])
    >>> round(result.precision, 4), result.threshold
    (0.6667, 0.7)
    >>> result.correctly_recognised, result.wrongly_recognised, result.correctly_rejected
    (2, 1, 1)
    >>> result.assigned.tolist(), result.accepted.tolist()
    (['a', 'b', 'b', 'a'], [True, True, True, False])
    """


def one_exemplar_recognition(scores, exemplar_labels, query_labels):
    """Multi-class recognition from one exemplar per class, precision at equal error rate.

    Seed 001 section 6: "A test face is assigned to the exemplar with the best score, or
    rejected if all scores are below a certain threshold. [...] We measure performance using
    precision at equal error rate, where the number of wrongly rejected faces equals the
    number of wrongly accepted faces." As in its Table 5: wrongly rejected = rejected faces
    of the exemplars' classes (targets), wrongly accepted = accepted faces of other people,
    precision = correctly recognised / accepted, where accepted = correctly + wrongly
    recognised (target assigned to another exemplar) + wrongly accepted (L2: 55 / (55 + 107
    + 232) = 14.0%). As #wrongly rejected - #wrongly accepted = #targets - #accepted, the EER
    accepts the #targets best-scoring queries; with tied best scores, the threshold
    minimising ``|#wrongly rejected - #wrongly accepted|`` (the lowest such one).

    Parameters
    ----------
    scores : array-like of shape (n_queries, n_exemplars)
        Similarities, higher = more similar: ``pairwise_scores(learner, queries, exemplars)``.
    exemplar_labels : array-like of shape (n_exemplars,), distinct (one exemplar per class)
    query_labels : array-like of shape (n_queries,); non-target identities must be rejected

    Returns
    -------
    result : OneExemplarResult (``precision`` is 0 when nothing is accepted)
    """
    S = _points(scores, "scores")
    e, q = np.asarray(exemplar_labels), np.asarray(query_labels)
    check_identity_labels(e, "exemplar_labels", S.shape[1])
    check_identity_labels(q, "query_labels", S.shape[0])
    if np.unique(e).size != e.size:
        raise ValueError("exemplar_labels must be distinct: one exemplar per class.")
    target = np.isin(q, e)
    if not target.any():
        raise ValueError("no query belongs to an exemplar's class.")
    best_index = np.argmax(S, axis=1)
    best, assigned = S[np.arange(S.shape[0]), best_index], e[best_index]
    unique, per_value = np.unique(best, return_counts=True)
    n_accepted = best.size - np.r_[0, np.cumsum(per_value)]  # cut c accepts best >= unique[c]
    cut = int(np.argmin(np.abs(target.sum() - n_accepted)))
    threshold = float(unique[cut]) if cut < unique.size else np.inf
    accepted = best >= threshold
    right = accepted & target & (assigned == q)
    counts = [int(m.sum()) for m in (right, accepted & target & ~right, ~accepted & target,
                                     ~accepted & ~target, accepted & ~target)]
    precision = counts[0] / accepted.sum() if accepted.any() else 0.0
    return OneExemplarResult(float(precision), threshold, *counts, assigned, accepted)
