"""Validation pairs of held-out identities: early stopping that tracks unseen people.

A pair-data rule: given the identity of each image of each pair, hold out a share of the
identities; the pairs of two held-out identities validate, the pairs of two others train, and a
pair with one of each is left out (it would leak a training identity into validation).
"""

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["identity_held_out_split"]


def identity_held_out_split(groups, s, fraction, random_state=None):
    """Masks ``(train, validation)`` of the pairs, with ``fraction`` of the identities (at
    least 2) held out.

    Parameters
    ----------
    groups : array-like of shape (n_pairs, 2)
        The identity of each image of each pair (any hashable labels).
    s : ndarray of shape (n_pairs,)
        Pair labels in {-1, +1}; both parts must hold both.
    fraction : float in (0, 1)
        Share of the identities held out (rounded, at least 2).
    random_state : int, RandomState or None, default=None
        Draws the held-out identities.

    Returns
    -------
    train, validation : ndarray of bool, shape (n_pairs,)

    Raises
    ------
    ValueError
        ``groups`` of the wrong shape, too few identities, or a part without genuine or
        impostor pairs.

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.pairs.held_out import identity_held_out_split
    >>> groups = np.array([[0, 0], [0, 1], [1, 1], [2, 2], [2, 3], [3, 3], [0, 2]])
    >>> s = np.array([1, -1, 1, 1, -1, 1, -1])
    >>> train, validation = identity_held_out_split(groups, s, 0.5, random_state=0)
    >>> int(train.sum()), int(validation.sum())
    (3, 3)
    """
    groups = np.asarray(groups)
    if groups.shape != (s.shape[0], 2):
        raise ValueError(f"groups must have shape (n_pairs, 2) = ({s.shape[0]}, 2): the "
                         f"identity of each image of each pair; got {groups.shape}.")
    identities = np.unique(groups)
    n_held = max(2, int(round(fraction * identities.size)))
    if n_held >= identities.size:
        raise ValueError(f"groups name {identities.size} identities: too few to hold "
                         f"out {n_held} for validation and train on the others.")
    held = check_random_state(random_state).choice(identities, n_held, replace=False)
    inside = np.isin(groups, held)  # (n_pairs, 2)
    validation, train = inside.all(axis=1), ~inside.any(axis=1)
    for name, mask in (("validation", validation), ("training", train)):
        if len(np.unique(s[mask])) < 2:
            raise ValueError(f"the {name} pairs of the identity split (held out: "
                             f"{n_held} of {identities.size} identities) lack genuine or "
                             f"impostor pairs; pass validation_data instead.")
    return train, validation
