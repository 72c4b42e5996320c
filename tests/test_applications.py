"""Seed 001 section 6: labelling cost of complete-linkage clusterings, one-exemplar recognition
with precision at equal error rate, and pairwise scores of learners."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist, pdist, squareform

from metricfit import DDML, TSML, CosineSimilarity, MkNN
from metricfit.experiments.applications import (
    complete_linkage_cost_curve,
    labelling_cost,
    one_exemplar_recognition,
    pairwise_scores,
)
from metricfit.pairs import sample_pairs

# -- labelling cost ------------------------------------------------------------------------


def test_labelling_cost_paper_numbers():
    """Seed 001: 17 people, 411 faces, 71 of the most frequent one: the optimal clustering
    costs 17, one cluster per face 411, a single cluster 341."""
    sizes = [71] + [22] * 4 + [21] * 12
    labels = np.repeat(np.arange(17), sizes)
    assert labels.size == 411
    assert labelling_cost(labels, labels) == 17
    assert labelling_cost(labels, np.arange(411)) == 411
    assert labelling_cost(labels, np.zeros(411)) == 341


def test_labelling_cost_hand_computed():
    labels = ["ann", "ann", "ann", "bob", "bob", "cy"]
    # {ann, ann}: 1 click; {ann, bob, bob}: 1 + 3 - 2 = 2; {cy}: 1
    assert labelling_cost(labels, [0, 0, 1, 1, 1, 2]) == 4
    assert labelling_cost(labels, ["x", "x", "y", "y", "y", "z"]) == 4  # any cluster ids
    assert labelling_cost(labels, [5, 5, 5, 7, 7, 9]) == 3  # perfect: one click per person
    assert labelling_cost(labels, np.zeros(6)) == 1 + 6 - 3
    assert labelling_cost(labels, np.arange(6)) == 6
    # a cluster whose majority is tied: still 1 + N - max
    assert labelling_cost(["a", "b", "a", "b"], [0, 0, 0, 0]) == 3


@pytest.mark.parametrize("labels, clusters, match", [
    ([0, 1, 2], [0, 1], "labels for"), ([[0, 1]], [0, 1], "1-D"), ([], [], "is empty"),
    ([0.0, np.nan], [0, 1], "NaN")])
def test_labelling_cost_bad_input(labels, clusters, match):
    with pytest.raises(ValueError, match=match):
        labelling_cost(labels, clusters)


# -- complete linkage ----------------------------------------------------------------------


def brute_force_complete_linkage(D, labels):
    """Textbook agglomeration: merge the two clusters whose farthest members are closest;
    returns (cost, threshold) indexed by n_clusters - 1."""
    clusters = [[i] for i in range(len(D))]
    cost = {len(D): labelling_cost(labels, np.arange(len(D)))}
    threshold = {len(D): -np.inf}
    while len(clusters) > 1:
        _, a, b = min((D[np.ix_(p, q)].max(), i, j) for i, p in enumerate(clusters)
                      for j, q in enumerate(clusters) if i < j)
        height = D[np.ix_(clusters[a], clusters[b])].max()
        clusters = [c for k, c in enumerate(clusters) if k not in (a, b)] + [
            clusters[a] + clusters[b]]
        assignment = np.empty(len(D), int)
        for k, members in enumerate(clusters):
            assignment[members] = k
        cost[len(clusters)] = labelling_cost(labels, assignment)
        threshold[len(clusters)] = height
    n = len(D)
    return (np.array([cost[k] for k in range(1, n + 1)]),
            np.array([threshold[k] for k in range(1, n + 1)]))


@pytest.mark.parametrize("seed", range(4))
def test_complete_linkage_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    X, labels = rng.normal(size=(14, 3)), rng.integers(0, 4, size=14)
    cost, threshold = brute_force_complete_linkage(squareform(pdist(X)), labels)
    curve = complete_linkage_cost_curve(X, labels)
    np.testing.assert_array_equal(curve.n_clusters, np.arange(1, 15))
    np.testing.assert_array_equal(curve.cost, cost)
    np.testing.assert_allclose(curve.threshold, threshold)
    assert curve.best_cost == cost.min() and curve.cost[curve.best_n_clusters - 1] == cost.min()
    assert curve.mean_cost == pytest.approx(cost.mean())
    precomputed = complete_linkage_cost_curve(squareform(pdist(X)), labels, "precomputed")
    np.testing.assert_array_equal(precomputed.cost, cost)


def test_cost_curve_ends_bounds_and_accuracy():
    rng = np.random.default_rng(5)
    labels = np.repeat([0, 1, 2, 3], [6, 3, 2, 2])
    X = rng.normal(size=(13, 2)) + 10 * labels[:, None]  # well separated: 4 pure clusters
    curve = complete_linkage_cost_curve(X, labels)
    assert curve.cost[0] == 1 + 13 - 6 and curve.cost[-1] == 13
    assert curve.best_cost == 4 and curve.best_n_clusters == 4 and curve.best_accuracy == 1.0
    np.testing.assert_array_equal(curve.min_cost[:5], [8, 6, 5, 4, 5])  # k + n - top-k sizes
    # a singleton person: merging it costs one correction and saves one click -> a tie,
    # resolved towards the fewest clusters
    tied = complete_linkage_cost_curve(X[:12], np.repeat([0, 1, 2, 3], [6, 3, 2, 1]))
    assert tied.cost[2] == tied.cost[3] == 4 and tied.best_n_clusters == 3
    assert (curve.cost >= curve.min_cost).all()
    labels_shuffled = rng.permutation(labels)
    worse = complete_linkage_cost_curve(X, labels_shuffled)
    assert (worse.cost >= worse.min_cost).all() and worse.best_accuracy < 1.0


@pytest.mark.parametrize("data, labels, metric, match", [
    (np.zeros((1, 2)), [0], "euclidean", "at least 2"),
    (np.ones((3, 2)), [0, 1], "euclidean", "labels for"),
    (np.ones((3, 2)), [0, 1, 1], "precomputed", "square"),
    (np.array([[0, 1.0], [2.0, 0]]), [0, 1], "precomputed", "symmetric"),
    (np.array([[0.0, np.nan], [1.0, 2.0]]), [0, 1], "euclidean", "NaN"),
    (np.ones((3, 2)), [0, 1, 1], "no-such-metric", "metric"),
    (np.ones(3), [0, 1, 1], "euclidean", "2-D")])
def test_complete_linkage_bad_input(data, labels, metric, match):
    with pytest.raises(ValueError, match=match):
        complete_linkage_cost_curve(data, labels, metric)


# -- one-exemplar recognition --------------------------------------------------------------


def test_one_exemplar_hand_computed():
    scores = np.array([[0.9, 0.1],    # 'a' -> a, correct
                       [0.2, 0.5],    # 'a' -> b, wrongly recognised
                       [0.1, 0.3],    # 'b' -> b, but lowest of the targets: rejected
                       [0.8, 0.0],    # 'c' (no exemplar) -> a, wrongly accepted
                       [0.1, 0.2]])   # 'c' rejected
    r = one_exemplar_recognition(scores, ["a", "b"], ["a", "a", "b", "c", "c"])
    assert r.threshold == 0.5  # 3 targets: the 3 best-scoring queries are accepted
    assert (r.correctly_recognised, r.wrongly_recognised, r.wrongly_rejected,
            r.correctly_rejected, r.wrongly_accepted) == (1, 1, 1, 1, 1)
    assert r.precision == pytest.approx(1 / 3)
    np.testing.assert_array_equal(r.assigned, ["a", "b", "b", "a", "b"])
    np.testing.assert_array_equal(r.accepted, [True, True, False, True, False])


def test_one_exemplar_table5_arithmetic():
    """Seed 001 Table 5 (L2): 55 correct, 107 wrongly recognised, 232 wrongly rejected, 726
    correctly rejected, 232 wrongly accepted; precision 55 / 394 = 14.0%. Rebuild a score
    matrix with those outcomes and check the counts and precision come back."""
    e = np.arange(17)
    q = np.r_[np.arange(394) % 17, np.full(958, -1)]  # 394 target faces, 958 others
    kind = np.repeat(np.arange(5), [55, 107, 232, 726, 232])  # Table 5's rows, in order
    rng = np.random.default_rng(0)
    best = np.where(np.isin(kind, [0, 1, 4]), 10, 0) + rng.random(q.size)  # 394 accepted
    exemplar = np.where(kind == 1, (q + 1) % 17, q % 17)  # wrongly recognised: next class
    scores = np.full((q.size, 17), -1.0)
    scores[np.arange(q.size), exemplar] = best
    r = one_exemplar_recognition(scores, e, q)
    assert (r.correctly_recognised, r.wrongly_recognised, r.wrongly_rejected,
            r.correctly_rejected, r.wrongly_accepted) == (55, 107, 232, 726, 232)
    assert r.precision == pytest.approx(0.140, abs=5e-4)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 30), st.integers(0, 2 ** 32 - 1))
def test_one_exemplar_equal_error_property(n_classes, n_queries, seed):
    rng = np.random.default_rng(seed)
    q = rng.integers(0, n_classes + 2, size=n_queries)  # labels >= n_classes: impostors
    if not (q < n_classes).any():
        q[0] = 0
    r = one_exemplar_recognition(rng.normal(size=(n_queries, n_classes)), np.arange(n_classes), q)
    target = q < n_classes
    assert r.wrongly_rejected == r.wrongly_accepted  # continuous scores: exact EER
    assert r.accepted.sum() == target.sum()
    assert (r.correctly_recognised + r.wrongly_recognised + r.wrongly_rejected == target.sum())
    assert r.correctly_rejected + r.wrongly_accepted == (~target).sum()
    accepted = r.correctly_recognised + r.wrongly_recognised + r.wrongly_accepted
    assert r.precision == pytest.approx(r.correctly_recognised / accepted)


def test_one_exemplar_ties_take_the_lowest_balanced_threshold():
    scores = np.ones((3, 1))  # all tied: accept all (|2 - 3| = 1) beats reject all (|2 - 0|)
    r = one_exemplar_recognition(scores, [0], [0, 0, 1])
    assert r.threshold == 1.0 and r.accepted.all()
    assert (r.correctly_recognised, r.wrongly_accepted, r.wrongly_rejected) == (2, 1, 0)
    r = one_exemplar_recognition(np.ones((3, 1)), [0], [0, 1, 1])  # now reject all is best
    assert r.threshold == np.inf and not r.accepted.any() and r.precision == 0.0


@pytest.mark.parametrize("scores, e, q, match", [
    (np.ones((2, 2)), [0, 0], [0, 1], "distinct"),
    (np.ones((2, 2)), [0, 1], [0, 1, 1], "labels for"),
    (np.ones((2, 2)), [0, 1, 2], [0, 1], "labels for"),
    (np.ones((2, 2)), [0, 1], [5, 6], "no query"),
    (np.ones(2), [0], [0, 1], "2-D"),
    (np.array([[np.nan], [1.0]]), [0], [0, 1], "NaN")])
def test_one_exemplar_bad_input(scores, e, q, match):
    with pytest.raises(ValueError, match=match):
        one_exemplar_recognition(scores, e, q)


# -- pairwise scores and learned metrics ---------------------------------------------------


def identities(rng, n_ids, per_id, d_signal=5, d_nuisance=15, nuisance=3.0):
    """Faces of n_ids people: identity in 5 dims, large identity-free nuisance in 15."""
    labels = np.repeat(np.arange(n_ids), per_id)
    signal = rng.normal(size=(n_ids, d_signal))[labels]
    signal += 0.3 * rng.normal(size=signal.shape)
    return np.hstack([signal, nuisance * rng.normal(size=(labels.size, d_nuisance))]), labels


@pytest.fixture(scope="module")
def learned():
    rng = np.random.default_rng(0)
    X_train, y_train = identities(rng, 30, 8)
    X_test, y_test = identities(rng, 12, 8)  # held-out identities
    index, s = sample_pairs(y_train, 300, 300, random_state=0)
    return TSML(n_components=5).fit(X_train[index], s), X_test, y_test, X_train[index], s


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_pairwise_scores_match_pair_score(learned):
    tsml, X, _, train_pairs, s = learned
    S = pairwise_scores(tsml, X[:7], X[7:12])
    pairs = np.stack(np.broadcast_arrays(X[:7, None], X[None, 7:12]), axis=2)
    np.testing.assert_allclose(S, tsml.pair_score(pairs.reshape(-1, 2, X.shape[1])).reshape(7, 5))
    np.testing.assert_allclose(pairwise_scores(tsml, X[:7], X[7:12], exact=True), S)
    full = pairwise_scores(tsml, X[:9])
    np.testing.assert_allclose(full, full.T, atol=1e-12)
    np.testing.assert_allclose(np.diag(full), 1.0)
    ddml = DDML(n_components=4, max_iter=30).fit(train_pairs, s)
    pairs = np.stack([X[:6], X[6:12]], axis=1)
    np.testing.assert_allclose(np.diag(pairwise_scores(ddml, X[:6], X[6:12])),
                               ddml.pair_score(pairs), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(pairwise_scores(None, X[:4], X[4:9]),
                               -cdist(X[:4], X[4:9], "sqeuclidean"), atol=1e-9)
    cos = CosineSimilarity().fit(train_pairs, s)
    np.testing.assert_allclose(pairwise_scores(cos, X[:3], X[3:6]),
                               1 - cdist(X[:3], X[3:6], "cosine"), atol=1e-12)


def test_pairwise_scores_of_a_probability_learner_go_through_pair_score(learned):
    _, X, y, _, _ = learned
    mknn = MkNN(n_neighbors=3).fit(X, y)
    S = pairwise_scores(mknn, X[:4], X[4:10])
    pairs = np.stack(np.broadcast_arrays(X[:4, None], X[None, 4:10]), axis=2).reshape(-1, 2, 20)
    np.testing.assert_allclose(S, mknn.pair_score(pairs).reshape(4, 6))
    curve = complete_linkage_cost_curve(X[:20], y[:20], metric=mknn)
    assert curve.cost[-1] == 20


def test_pairwise_scores_bad_input(learned):
    tsml, X, _, _, _ = learned
    with pytest.raises(ValueError, match="features"):
        pairwise_scores(tsml, X[:, :4])
    with pytest.raises(ValueError, match="2-D"):
        pairwise_scores(tsml, X[0])
    with pytest.raises(ValueError, match="exact"):
        pairwise_scores(None, X, exact=True)


def test_learned_metric_beats_l2_on_held_out_identities(learned):
    tsml, X, y, _, _ = learned
    l2 = complete_linkage_cost_curve(X, y)  # plain Euclidean distances
    metric = complete_linkage_cost_curve(X, y, metric=tsml)  # 1 - cos of the TSML embedding
    assert metric.best_cost < 0.7 * l2.best_cost
    assert metric.mean_cost < l2.mean_cost
    assert metric.best_accuracy > l2.best_accuracy
    # one random exemplar for 6 of the 12 people; the other 6 people must be rejected
    rng = np.random.default_rng(1)
    exemplars = np.array([rng.choice(np.flatnonzero(y == k)) for k in range(6)])
    queries = np.setdiff1d(np.arange(y.size), exemplars)
    results = [one_exemplar_recognition(pairwise_scores(m, X[queries], X[exemplars]),
                                        y[exemplars], y[queries]) for m in (None, tsml)]
    assert results[1].precision > results[0].precision + 0.2
    assert results[1].wrongly_accepted < results[0].wrongly_accepted


def test_seed_001_held_out_fold_is_lfw_view2_fold_1(lfw_dir):
    """Seed 001 section 6's test set is the people of View 2 fold 1 (``people.txt``): 1369
    faces of 601 people, the 17 most frequent with 411 faces, the first with 71 (cost 341 for
    one cluster). benchmarks/lfw_applications.py rests on this reading."""
    from metricfit.datasets import load_lfw

    data = load_lfw(lfw_dir.parent)
    faces = data.person[data.people_fold_view2[data.person] == 0]
    ids, counts = np.unique(faces, return_counts=True)
    top = np.sort(counts)[::-1][:17]
    assert (faces.size, ids.size, top.sum(), top[0]) == (1369, 601, 411, 71)
    assert labelling_cost(np.repeat(np.arange(17), top), np.zeros(411)) == 341
