"""The pairs of the evaluation protocols, drawn from labelled samples.

- :func:`labelled_folds`: identity-disjoint folds of fixed pairs (the restricted setting of
  ``metricfit verify --data att|yale|PATH.npz``), for the fold rotation of seed 002 III.A;
- :func:`unrestricted_train_pairs`: the training pairs of the unrestricted setting (seed 004
  5.2.2), drawn among the images of the training folds;
- :func:`digits_split`: image-disjoint train / validation / test pairs on shared classes
  (``metricfit verify --data digits``).

Pairs are row indices into the samples, labels in {-1, +1}.
"""

import numpy as np
from sklearn.utils import check_random_state

from .generation import fold_pairs, sample_pairs, unrestricted_pairs
from .identity import identity_folds

__all__ = ["labelled_folds", "unrestricted_train_pairs", "digits_split"]


def labelled_folds(labels, random_state=0):
    """Identity-disjoint folds of fixed pairs from labelled images (restricted setting): the
    identities go to ``min(10, n_identities // 3)`` folds (:func:`identity_folds`, balancing
    images), then every same-identity pair of each fold and as many different-identity pairs
    of that fold (:func:`fold_pairs`). Returns ``(index_pairs, y, pair_fold, image_fold)``.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.pairs.splits import labelled_folds
    >>> labels = np.repeat(np.arange(9), 2)  # 9 identities of 2 images: 3 folds
    >>> index_pairs, y, pair_fold, image_fold = labelled_folds(labels)
    >>> np.unique(image_fold).tolist(), index_pairs.shape[1]
    ([0, 1, 2], 2)
    >>> bool(np.all(image_fold[index_pairs[:, 0]] == image_fold[index_pairs[:, 1]]))
    True
    """
    labels = np.asarray(labels)
    n_identities = np.unique(labels).size
    n_folds = min(10, n_identities // 3)
    if n_folds < 3:
        raise ValueError(f"{n_identities} identities are too few: the identity-disjoint "
                         "protocol needs at least 9 (3 folds: train, validation, test).")
    image_fold = identity_folds(labels, n_folds, random_state=random_state)
    index_pairs, y, pair_fold = fold_pairs(labels, image_fold, "all", random_state=random_state)
    for f in range(n_folds):
        if np.unique(y[pair_fold == f]).size < 2:
            raise ValueError(f"identity fold {f} lacks same- or different-identity pairs: each "
                             "fold needs two identities or more, some with 2+ images.")
    return index_pairs, y, pair_fold, image_fold


def unrestricted_train_pairs(identities, image_fold, n_pairs):
    """``train_pairs`` for :func:`metricfit.experiments.runs.run_folds` (seed 004 5.2.2,
    unrestricted): up to ``n_pairs`` same-identity pairs and as many different-identity pairs
    drawn among all images of the training folds (seeded by the experiment number), identity
    by identity like the official LFW pairs (``balance='identity'``: drawn uniformly over all
    within-identity pairs, five LFW people would supply most similar pairs; see
    ``benchmarks/lfw_tables_004.py``).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.pairs.splits import unrestricted_train_pairs
    >>> identities = np.repeat(np.arange(6), 3)
    >>> image_fold = identities % 3  # identities 0, 3 in fold 0; 1, 4 in fold 1; ...
    >>> draw = unrestricted_train_pairs(identities, image_fold, n_pairs=4)
    >>> index_pairs, y = draw([0, 1], 0)  # experiment 0 trains on folds 0 and 1
    >>> bool(np.isin(image_fold[index_pairs], [0, 1]).all()), int((y == 1).sum())
    (True, 4)
    """
    def draw(train_folds, e):
        allowed = np.isin(image_fold, train_folds)
        return unrestricted_pairs(identities, allowed, n_pairs, None, random_state=e,
                                  balance="identity")
    return draw


def digits_split(labels, n_pairs=1000, random_state=0):
    """Image-disjoint pairs on a labelled set: half of the images for training pairs, a
    quarter each for validation and test pairs (classes are shared, images are not).
    Returns ``{split: (index_pairs, y)}`` with ``n_pairs`` similar and dissimilar pairs each.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.pairs.splits import digits_split
    >>> split = digits_split(np.arange(80) % 4, n_pairs=10)
    >>> {name: len(y) for name, (index_pairs, y) in split.items()}
    {'train': 20, 'val': 20, 'test': 20}
    >>> rows = [np.unique(split[name][0]) for name in ("train", "val", "test")]
    >>> bool(np.intersect1d(rows[0], rows[1]).size == np.intersect1d(rows[1], rows[2]).size == 0)
    True
    """
    rng = check_random_state(random_state)
    labels = np.asarray(labels)
    order = rng.permutation(labels.shape[0])
    quarter = labels.shape[0] // 4
    parts = {"train": order[2 * quarter:], "val": order[:quarter],
             "test": order[quarter:2 * quarter]}
    out = {}
    for split, rows in parts.items():
        index_pairs, y = sample_pairs(labels[rows], n_pairs, n_pairs, random_state=rng)
        out[split] = (rows[index_pairs], y)
    return out
