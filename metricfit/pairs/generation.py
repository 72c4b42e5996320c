"""Pair generation: sample pairs from identity labels, within folds or among training samples.

Restricted and unrestricted settings (seed 004, section 5.2.2): in the *restricted* setting
only fixed pairs of each fold are used (:func:`fold_pairs` makes such folds of pairs from
labelled samples); in the *unrestricted* setting any pair of the training samples may be used
(:func:`unrestricted_pairs`). Pairs are row indices into the samples, ``i < j``, similar pairs
first, labels in {-1, +1}.
"""

from numbers import Integral

import numpy as np
from sklearn.utils import check_random_state

from .._validation import check_count
from .checks import check_identity_labels

__all__ = ["ENUMERATE_LIMIT", "sample_pairs", "fold_pairs", "unrestricted_pairs"]

ENUMERATE_LIMIT = 2_000_000  # candidate pairs listed outright below this; sampled above it


def sample_pairs(labels, n_similar, n_dissimilar, random_state=None, balance="pairs"):
    """Draw pairs of sample indices from class labels, without repeating a pair.

    Similar pairs are drawn from the within-class pairs (listed class by class); dissimilar
    pairs from all pairs of different classes (listed when there are few samples, otherwise
    by rejection sampling), so memory stays O(within-class pairs + requested pairs).

    Parameters
    ----------
    labels : array-like of shape (n_samples,)
        Class (identity) label of each sample.
    n_similar, n_dissimilar : int
        How many pairs of each kind to draw; capped at the number that exist.
    random_state : int, RandomState or None
    balance : {'pairs', 'identity'}, default='pairs'
        'pairs' draws uniformly among all candidate pairs, so an identity with m samples
        weighs m (m - 1) / 2: on LFW five people then supply 60-85 % of the similar pairs.
        'identity' draws like the official LFW pairs: a similar pair is a uniformly drawn
        identity (among those with unused pairs) and two of its samples; a dissimilar pair
        two uniformly drawn distinct identities and one sample of each. On LFW unrestricted
        training this was worth 2-6 points of test maxDA (benchmarks/lfw_tables_004.py).

    Returns
    -------
    index_pairs : ndarray of shape (n_pairs, 2), int64
        Row indices into the samples (i < j in each pair); similar pairs first.
    y : ndarray of shape (n_pairs,), int8 in {-1, +1}

    Examples
    --------
    >>> from metricfit.pairs import sample_pairs
    >>> index, y = sample_pairs([0, 0, 1, 1, 2], n_similar=5, n_dissimilar=2, random_state=0)
    >>> index[y == 1]          # capped: only two within-identity pairs exist
    array([[0, 1],
           [2, 3]])
    >>> y
    array([ 1,  1, -1, -1], dtype=int8)
    """
    labels = check_identity_labels(labels, "labels")
    n_similar = check_count(n_similar, "n_similar")
    n_dissimilar = check_count(n_dissimilar, "n_dissimilar")
    rng = check_random_state(random_state)
    if balance not in ("pairs", "identity"):
        raise ValueError(f"balance must be 'pairs' or 'identity', got {balance!r}.")
    if balance == "identity":
        similar = _identity_balanced_similar(labels, n_similar, rng)
        dissimilar = _identity_balanced_dissimilar(labels, n_dissimilar, rng)
    else:
        similar = _within_class_pairs(labels)
        take = rng.choice(similar.shape[0], size=min(n_similar, similar.shape[0]),
                          replace=False)
        similar = similar[np.sort(take)]
        dissimilar = _dissimilar_pairs(labels, n_dissimilar, rng)
    index_pairs = np.concatenate([similar, dissimilar]).astype(np.int64)
    y = np.concatenate([np.ones(len(similar), np.int8), -np.ones(len(dissimilar), np.int8)])
    return index_pairs, y


def _identity_groups(labels):
    """(members of each identity as sorted row indices, number of identities)."""
    order = np.argsort(labels, kind="stable")
    _, starts, sizes = np.unique(labels[order], return_index=True, return_counts=True)
    return [np.sort(order[a:a + m]) for a, m in zip(starts, sizes, strict=True)]


def _identity_balanced_similar(labels, count, rng):
    groups = _identity_groups(labels)
    live = [c for c, members in enumerate(groups) if members.size > 1]
    pools, used, out = {}, {}, []
    while len(out) < count and live:
        slot = rng.randint(len(live))
        c = live[slot]
        if c not in pools:  # this identity's pairs in random order, built on first use
            i, j = np.triu_indices(groups[c].size, k=1)
            perm = rng.permutation(i.size)
            pools[c], used[c] = (groups[c][i[perm]], groups[c][j[perm]]), 0
        first, second = pools[c]
        out.append((first[used[c]], second[used[c]]))
        used[c] += 1
        if used[c] == first.size:  # exhausted: swap-remove from the live identities
            live[slot] = live[-1]
            live.pop()
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _identity_balanced_dissimilar(labels, count, rng):
    groups = _identity_groups(labels)
    sizes = np.array([g.size for g in groups])
    n = sizes.sum()
    count = min(count, int((n * n - np.sum(sizes * sizes)) // 2))
    if len(groups) < 2 or count == 0:
        return np.empty((0, 2), np.int64)
    seen, out = set(), []
    while len(out) < count:
        m = 2 * (count - len(out)) + 16
        c1 = rng.randint(len(groups), size=m)
        c2 = rng.randint(len(groups) - 1, size=m)
        c2 += c2 >= c1  # two distinct identities
        for a, b in zip(c1, c2, strict=True):
            i = groups[a][rng.randint(sizes[a])]
            j = groups[b][rng.randint(sizes[b])]
            pair = (min(i, j), max(i, j))
            if pair not in seen and len(out) < count:
                seen.add(pair)
                out.append(pair)
    return np.array(out, dtype=np.int64)


def _within_class_pairs(labels):
    """All (i, j), i < j, with labels[i] == labels[j], class by class, sorted."""
    order = np.argsort(labels, kind="stable")
    _, starts, counts = np.unique(labels[order], return_index=True, return_counts=True)
    blocks = [np.empty((0, 2), np.int64)]
    for start, count in zip(starts, counts, strict=True):
        if count > 1:
            i, j = np.triu_indices(count, k=1)
            members = np.sort(order[start:start + count])
            blocks.append(np.stack([members[i], members[j]], axis=1))
    pairs = np.concatenate(blocks)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def _dissimilar_pairs(labels, count, rng):
    n = labels.shape[0]
    if n * (n - 1) // 2 <= ENUMERATE_LIMIT:
        i, j = np.triu_indices(n, k=1)
        different = np.flatnonzero(labels[i] != labels[j])
        take = np.sort(rng.choice(different, size=min(count, different.size), replace=False))
        return np.stack([i[take], j[take]], axis=1)
    _, class_sizes = np.unique(labels, return_counts=True)
    available = n * (n - 1) // 2 - int(np.sum(class_sizes * (class_sizes - 1) // 2))
    count = min(count, available)
    found = np.empty((0, 2), np.int64)
    while found.shape[0] < count:
        draw = rng.randint(0, n, size=(2 * (count - found.shape[0]) + 16, 2))
        draw = draw[labels[draw[:, 0]] != labels[draw[:, 1]]]
        draw = np.sort(draw, axis=1)
        found = np.unique(np.concatenate([found, draw]), axis=0)
    keep = np.sort(rng.choice(found.shape[0], size=count, replace=False))
    return found[keep]


def _as_1d(values, what, n_samples=None):
    """``values`` as a 1-D array (of ``n_samples`` entries when given), else ValueError."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"{what} must be 1-D of shape (n_samples,), got shape {values.shape}.")
    if n_samples is not None and values.shape[0] != n_samples:
        raise ValueError(f"{what} has {values.shape[0]} entries for {n_samples} samples.")
    return values


def _check_count(value, what, allow_all=False):
    if allow_all and isinstance(value, str) and value == "all":
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral) or value < 0:
        expected = "a non-negative integer" + (" or 'all'" if allow_all else "")
        raise ValueError(f"{what} must be {expected}, got {value!r}.")
    return int(value)


def _draw(codes, n_similar, n_dissimilar, rng, balance="pairs"):
    """:func:`sample_pairs` on integer identity codes, with ``'all'`` similar pairs and
    ``n_dissimilar=None`` meaning as many dissimilar pairs as similar pairs were drawn."""
    _, sizes = np.unique(codes, return_counts=True)
    available = int(np.sum(sizes * (sizes - 1) // 2))
    n_sim = available if n_similar == "all" else min(n_similar, available)
    n_dis = n_sim if n_dissimilar is None else n_dissimilar
    return sample_pairs(codes, n_sim, n_dis, random_state=rng, balance=balance)


def fold_pairs(identities, folds, n_similar, n_dissimilar=None, random_state=None,
               balance="pairs"):
    """Generate labelled pairs within each fold, so that no pair spans two folds.

    With identity-disjoint folds (:func:`~metricfit.pairs.identity_folds`, or the people
    folds of LFW View 2) the pairs of different folds share no identity: the folds of pairs
    can then serve as the fixed folds of the restricted setting (seed 004, 5.2.2), e.g. with
    :class:`~metricfit.pairs.PredefinedPairFolds` or :class:`~metricfit.pairs.FoldRotation`.

    Parameters
    ----------
    identities : array-like of shape (n_samples,)
        Identity (class) label of each sample.
    folds : array-like of shape (n_samples,)
        Fold of each sample; pairs are drawn fold by fold, in sorted fold order.
    n_similar : int or 'all'
        Similar pairs per fold (capped at what exists); ``'all'`` takes every within-identity
        pair of the fold.
    n_dissimilar : int, default=None
        Dissimilar pairs per fold (capped at what exists); None draws as many as the similar
        pairs obtained in that fold.
    random_state : int, RandomState instance or None, default=None
    balance : {'pairs', 'identity'}, default='pairs'
        See :func:`sample_pairs`.
        One generator is used for all folds in turn, so an int gives reproducible pairs.

    Returns
    -------
    index_pairs : ndarray of shape (n_pairs, 2), int64
        Row indices into the samples (``i < j``), fold by fold, similar pairs first.
    y : ndarray of shape (n_pairs,), int8
        +1 for a similar pair, -1 for a dissimilar one.
    pair_fold : ndarray of shape (n_pairs,)
        The fold of each pair (values of ``folds``).

    Raises
    ------
    ValueError
        On arrays that are not 1-D or differ in length, or bad pair counts.

    References
    ----------
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """
    identities = _as_1d(identities, "identities")
    folds = _as_1d(folds, "folds", identities.shape[0])
    n_similar = _check_count(n_similar, "n_similar", allow_all=True)
    if n_dissimilar is not None:
        n_dissimilar = _check_count(n_dissimilar, "n_dissimilar")
    codes = np.unique(identities, return_inverse=True)[1].reshape(-1)
    rng = check_random_state(random_state)
    index_pairs, y, pair_fold = [np.empty((0, 2), np.int64)], [np.empty(0, np.int8)], []
    for fold in np.unique(folds):
        rows = np.flatnonzero(folds == fold)
        pairs, labels = _draw(codes[rows], n_similar, n_dissimilar, rng, balance)
        index_pairs.append(rows[pairs])
        y.append(labels)
        pair_fold.append(np.full(labels.shape[0], fold, dtype=folds.dtype))
    pair_fold = np.concatenate(pair_fold) if pair_fold else np.empty(0, folds.dtype)
    return np.concatenate(index_pairs).astype(np.int64), np.concatenate(y), pair_fold


def unrestricted_pairs(identities, train_mask, n_similar, n_dissimilar=None,
                       random_state=None, balance="pairs"):
    """Generate labelled pairs among the samples allowed for training (unrestricted setting).

    The unrestricted setting (seed 004, 5.2.2) draws training pairs freely from the identity
    labels of the training samples, e.g. all images of the people of the training folds,
    while the test pairs stay the fixed pairs of the test fold. Pairs are drawn only among
    ``train_mask`` samples, so they share no identity with identity-disjoint held-out folds.

    Parameters
    ----------
    identities : array-like of shape (n_samples,)
        Identity (class) label of each sample.
    train_mask : array-like of bool, shape (n_samples,), or array-like of int
        The samples allowed for training: a boolean mask or row indices.
    n_similar : int or 'all'
        Number of similar pairs (capped at what exists); ``'all'`` takes every
        within-identity pair of the training samples.
    n_dissimilar : int, default=None
        Number of dissimilar pairs (capped); None draws as many as the similar pairs.
    random_state : int, RandomState instance or None, default=None
    balance : {'pairs', 'identity'}, default='pairs'
        See :func:`sample_pairs`; 'identity' is what LFW-like data needs.

    Returns
    -------
    index_pairs : ndarray of shape (n_pairs, 2), int64
        Row indices into all the samples (``i < j``), similar pairs first.
    y : ndarray of shape (n_pairs,), int8
        +1 for a similar pair, -1 for a dissimilar one.

    Raises
    ------
    ValueError
        On a mask of the wrong length, indices out of range, or bad pair counts.

    References
    ----------
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """
    identities = _as_1d(identities, "identities")
    n_samples = identities.shape[0]
    train_mask = _as_1d(train_mask, "train_mask")
    if train_mask.dtype == bool:
        rows = np.flatnonzero(_as_1d(train_mask, "train_mask", n_samples))
    elif train_mask.dtype.kind in "iu" or train_mask.size == 0:
        rows = np.unique(train_mask.astype(np.int64))
        if rows.size and (rows[0] < 0 or rows[-1] >= n_samples):
            raise ValueError(f"train_mask indices must be in [0, {n_samples - 1}].")
    else:
        raise ValueError(f"train_mask must be boolean or integer, got dtype {train_mask.dtype}.")
    n_similar = _check_count(n_similar, "n_similar", allow_all=True)
    if n_dissimilar is not None:
        n_dissimilar = _check_count(n_dissimilar, "n_dissimilar")
    codes = np.unique(identities, return_inverse=True)[1].reshape(-1)
    pairs, y = _draw(codes[rows], n_similar, n_dissimilar, check_random_state(random_state),
                     balance)
    return rows[pairs].astype(np.int64), y
