"""Pairs: the pair data model, pair generation and identity-disjoint evaluation protocols.

Conventions
-----------
pairs : ndarray of shape (n_pairs, 2, n_features)
    ``pairs[i, 0]`` and ``pairs[i, 1]`` are the two vectors ``x_i`` and ``y_i`` of pair i.
    Protocols may also use index pairs, an int array of shape (n_pairs, 2) of sample rows.
y : ndarray of shape (n_pairs,)
    The pair labels. The toolkit's coding is ``s_i = +1`` for a similar pair (same identity)
    and ``s_i = -1`` for a dissimilar one. Also accepted: ``{0, 1}`` and booleans, with
    1 / True = similar (the coding of the LFW protocol files). Anything else is an error.
    Learners always predict in the {-1, +1} coding.

Modules
-------
checks
    :func:`check_pairs`, :func:`check_points`, :func:`check_pair_labels`.
index
    Index pairs (n_pairs, 2) into a points array (in memory, memmap or Dask):
    :func:`check_pair_input` (vector or index pairs, the learners' entry),
    :class:`IndexPairs`, and the three passes of an objective over them. It is also the one
    place that asks which kind of pairs it has: ``map_pair_vectors``, ``score_pairs``,
    ``pair_differences``, ``similar_pair_classes``, ``pairs_as_given`` work on either kind,
    so that no learner branches on it.
generation
    :func:`sample_pairs`; :func:`fold_pairs` (pairs within folds, the restricted setting)
    and :func:`unrestricted_pairs` (pairs among training samples, the unrestricted setting).
neighbourhood
    :func:`neighbourhood_pairs`: k-NN graph neighbours similar, sampled others dissimilar
    (DrLIM, seed 003).
identity, protocols
    :func:`identity_folds`; the CV splitters over pairs :class:`PredefinedPairFolds`,
    :class:`FoldRotation` (seed 002 III.A) and :class:`IdentityDisjointPairSplit`. The LFW
    View 2 splitter and unrestricted pairs read files: they are in :mod:`metricfit.datasets`.
splits
    The experiments' pair drawing: :func:`labelled_folds`, :func:`unrestricted_train_pairs`,
    :func:`digits_split`.
tuples
    Triplets, quadruplets and chunks: :func:`check_tuples`, :class:`IndexTuples`,
    :func:`sample_triplets`, :func:`sample_quadruplets`, :func:`sample_chunks`,
    :func:`check_chunks` (metric-learn's weak supervision).
rows, tags
    Scale-safe row normalisation (:func:`metricfit.pairs.rows.l2_normalize`); the score-kind
    tag every pair learner declares (:func:`metricfit.pairs.tags.score_kind`).
"""

from .checks import (  # noqa: F401
                     FLOAT_DTYPES,
                     check_pair_labels,
                     check_pairs,
                     check_points,
                     check_points_or_pairs,
)
from .generation import (  # noqa: F401
                     ENUMERATE_LIMIT,
                     fold_pairs,
                     sample_pairs,
                     unrestricted_pairs,
)
from .identity import IdentityDisjointPairSplit, identity_folds
from .index import IndexPairs, check_pair_input
from .neighbourhood import neighbourhood_pairs
from .protocols import FoldRotation, PredefinedPairFolds, ValidationSplit
from .splits import digits_split, labelled_folds, unrestricted_train_pairs
from .tuples import (  # noqa: I001 (issue 26)
    IndexTuples,
    check_chunks,
    check_tuples,
    sample_chunks,
    sample_quadruplets,
    sample_triplets,
)

__all__ = [
    "digits_split",
    "labelled_folds",
    "unrestricted_train_pairs",
    "neighbourhood_pairs",
    "check_pairs",
    "check_points",
    "check_points_or_pairs",
    "check_pair_labels",
    "check_pair_input",
    "IndexPairs",
    "sample_pairs",
    "fold_pairs",
    "unrestricted_pairs",
    "identity_folds",
    "PredefinedPairFolds",
    "FoldRotation",
    "ValidationSplit",
    "IdentityDisjointPairSplit",
    # issue 26: triplets, quadruplets, chunks
    "IndexTuples",
    "check_tuples",
    "check_chunks",
    "sample_triplets",
    "sample_quadruplets",
    "sample_chunks",
]
