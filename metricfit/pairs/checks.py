"""Validators of the pair data model: pairs, points and pair labels, shared by every learner.

Conventions
-----------
pairs : ndarray of shape (n_pairs, 2, n_features)
    ``pairs[i, 0]`` and ``pairs[i, 1]`` are the two vectors ``x_i`` and ``y_i`` of pair i.
y : ndarray of shape (n_pairs,)
    The pair labels. The toolkit's coding is ``s_i = +1`` for a similar pair (same identity)
    and ``s_i = -1`` for a dissimilar one. Also accepted: ``{0, 1}`` and booleans, with
    1 / True = similar (the coding of the LFW protocol files). Anything else is an error.
    Learners keep the coding of the labels they were fitted (or calibrated) on:
    ``classes_`` holds its two labels, the larger one the "same identity" class, and
    ``predict`` answers in it (:func:`pair_classes`).
"""

import numpy as np
from scipy import sparse

from .._validation import check_feature_names

__all__ = ["check_pairs", "check_points", "check_pair_labels", "pair_classes"]

FLOAT_DTYPES = (np.float64, np.float32)


def _as_float_array(X, what, dtype=None):
    if sparse.issparse(X):
        raise TypeError(f"{what} is a sparse matrix: metricfit needs dense arrays; use "
                        f"{what}.toarray().")
    try:
        X = np.asarray(X)
    except Exception as exc:  # ragged nested lists, objects that refuse conversion
        raise ValueError(f"{what} could not be converted to a numeric array: {exc}") from exc
    if X.dtype.kind == "O":
        try:
            X = X.astype(np.float64)  # numbers stored as objects
        except TypeError as exc:
            raise TypeError(f"{what} must hold numbers: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{what} must hold numbers: {exc}") from None
    if X.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {what} must hold real numbers.")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{what} must be numeric, got an array of dtype {X.dtype}.")
    target = float_dtype(X) if dtype is None else dtype
    check_dtype_range(X, target, what)
    return np.ascontiguousarray(X, dtype=target)


def check_dtype_range(X, dtype, what="X"):
    """Raise ValueError when finite entries of X would overflow ``dtype`` (float32's range
    ends near 3.4e38), naming the input and its largest entry instead of an infinity later."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f" or X.dtype.kind != "f" or X.dtype.itemsize <= dtype.itemsize:
        return
    finite = np.abs(X[np.isfinite(X)]) if X.size else X
    top = float(finite.max()) if finite.size else 0.0
    if top > np.finfo(dtype).max:
        raise ValueError(f"{what} has entries up to {top:.3g}, beyond the {dtype.name} range "
                         f"(max {np.finfo(dtype).max:.3g}): rescale them, or compute in "
                         "float64.")


def _check_finite(X, what):
    if not np.isfinite(X).all():
        kind = "NaN" if np.isnan(X).any() else "infinity"
        raise ValueError(f"{what} contains {kind}: remove or impute non-finite values first.")


def _check_nonzero_rows(X2d, what):
    zero = ~np.any(X2d != 0, axis=1)
    if zero.any():
        rows = np.flatnonzero(zero)
        raise ValueError(
            f"{what} contains {rows.size} all-zero vector(s) (first at flat index {rows[0]}): "
            "the cosine similarity of a zero vector is undefined."
        )


def check_pairs(pairs, *, n_features=None, dtype=None, reject_zero=False, what="pairs"):
    """Validate pairs of vectors and return them as a C-contiguous float array.

    Parameters
    ----------
    pairs : array-like of shape (n_pairs, 2, n_features)
    n_features : int, default=None
        If given, the expected number of features (the fitted ``n_features_in_``).
    dtype : {np.float64, np.float32}, default=None
        Target dtype; None keeps float32/float64 and turns other numbers into float64.
    reject_zero : bool, default=False
        Raise on all-zero vectors (for scores built on the cosine).

    Returns
    -------
    pairs : ndarray of shape (n_pairs, 2, n_features), float32 or float64

    Raises
    ------
    ValueError
        On a wrong number of dimensions, a pair axis of length other than 2, no pairs,
        NaN/inf, a feature-count mismatch or (with ``reject_zero``) zero vectors.
    """
    pairs = _as_float_array(pairs, what, dtype)
    if pairs.ndim != 3:
        raise ValueError(
            f"{what} must be a 3-D array of shape (n_pairs, 2, n_features), got an array with "
            f"{pairs.ndim} dimension(s) of shape {pairs.shape}."
        )
    if pairs.shape[1] != 2:
        hint = ""
        if pairs.shape[2] == 2:
            hint = " It looks transposed: use np.swapaxes(pairs, 1, 2)."
        raise ValueError(
            f"{what} must have the pair axis (of length 2) at axis 1, got shape "
            f"{pairs.shape}.{hint}"
        )
    if pairs.shape[0] == 0 or pairs.shape[2] == 0:
        raise ValueError(f"{what} is empty: got shape {pairs.shape}.")
    if n_features is not None and pairs.shape[2] != n_features:
        raise ValueError(
            f"{what} has {pairs.shape[2]} features, but the estimator was fitted with "
            f"{n_features} features."
        )
    _check_finite(pairs, what)
    if reject_zero:
        _check_nonzero_rows(pairs.reshape(-1, pairs.shape[2]), what)
    return pairs


def check_points(X, *, n_features=None, dtype=None, reject_zero=False, what="X"):
    """Validate points (n_samples, n_features); the 2-D twin of :func:`check_pairs`."""
    X = _as_float_array(X, what, dtype)
    if X.ndim != 2:
        raise ValueError(
            f"{what} must be a 2-D array of shape (n_samples, n_features), got an array with "
            f"{X.ndim} dimension(s) of shape {X.shape}."
        )
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{what} is empty: got shape {X.shape}.")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(
            f"{what} has {X.shape[1]} features, but the estimator was fitted with "
            f"{n_features} features."
        )
    _check_finite(X, what)
    if reject_zero:
        _check_nonzero_rows(X, what)
    return X


def check_points_or_pairs(X, *, n_features=None):
    """Points (n, d) or pairs (n, 2, d) for a ``transform`` that maps both: pairs when X is
    3-D, points otherwise (each with its own checks and messages)."""
    X = np.asarray(X)
    if X.ndim == 3:
        return check_pairs(X, n_features=n_features)
    return check_points(X, n_features=n_features)


def check_pair_labels(y, n_pairs, *, require_both=True, what="y"):
    """Map pair labels to the toolkit's coding ``s in {-1, +1}`` (int8).

    Accepted codings: {-1, +1}; {0, 1} and booleans with 1 = similar. A label set mixing
    codings (e.g. {-1, 0, 1}) or any other value is an error.

    Parameters
    ----------
    y : array-like of shape (n_pairs,)
    n_pairs : int
        The number of pairs the labels must match.
    require_both : bool, default=True
        Raise unless both similar and dissimilar pairs are present.

    Returns
    -------
    s : ndarray of shape (n_pairs,), int8, values in {-1, +1}

    Examples
    --------
    >>> from metricfit.pairs import check_pair_labels
    >>> check_pair_labels([0, 1, 1, 0], 4)
    array([-1,  1,  1, -1], dtype=int8)
    """
    if y is None:
        raise ValueError(f"{what} (the pair labels) is required: +1 similar, -1 dissimilar.")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{what} must be 1-D of shape (n_pairs,), got shape {y.shape}"
                         + (": use np.ravel(y)." if y.ndim == 2 and 1 in y.shape else "."))
    if y.shape[0] == 0:
        raise ValueError(f"{what} is empty: got no pair labels.")
    if y.shape[0] != n_pairs:
        raise ValueError(f"{what} has {y.shape[0]} labels for {n_pairs} pairs.")
    if y.dtype.kind not in "biuf":
        raise ValueError(f"{what} must hold numeric or boolean pair labels ({{-1, +1}}, "
                         f"{{0, 1}} or {{False, True}}), got dtype {y.dtype}.")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"{what} contains NaN or infinity: pair labels must be -1/+1 or 0/1.")
    values = set(np.unique(y).tolist())
    if values <= {-1, 1}:
        s = np.where(y == 1, 1, -1).astype(np.int8)
    elif values <= {0, 1}:
        s = np.where(y == 1, 1, -1).astype(np.int8)
    else:
        raise ValueError(
            f"{what}: pair labels must be in {{-1, +1}} (or {{0, 1}} / booleans, 1 = "
            f"similar), got values {sorted(values)[:10]}."
        )
    if require_both and np.unique(s).size < 2:
        kind = "similar" if s[0] == 1 else "dissimilar"
        raise ValueError(
            f"{what} has a single class (only {kind} pairs): both similar (+1) and "
            "dissimilar (-1) "
            "pairs are needed."
        )
    return s


def require_both_classes(s, what="y_true"):
    """A ValueError unless the validated labels ``s`` hold both similar (target) and
    dissimilar (non-target) pairs (Cllr, PAV and calibration need both)."""
    if np.unique(s).size < 2:
        raise ValueError(f"{what} needs both similar (target) and dissimilar (non-target) "
                         "pairs.")


def check_scores(scores, *, allow_infinite=False, what="scores"):
    """Validate scores alone (no labels): a numeric 1-D array, as float64.

    One score is valid (a verifier scores one trial at a time). NaN is always an error;
    +-inf only where ``allow_infinite`` (log-likelihood ratios of pure PAV bins are +-inf).

    Examples
    --------
    >>> from metricfit.pairs.checks import check_scores
    >>> check_scores([1, 2])
    array([1., 2.])
    """
    scores = np.asarray(scores)
    if scores.dtype.kind not in "biuf":
        raise ValueError(f"{what} must be numeric, got an array of dtype {scores.dtype}.")
    if scores.ndim != 1:
        raise ValueError(f"{what} must be 1-D of shape (n_pairs,), got shape {scores.shape}.")
    if scores.size == 0:
        raise ValueError(f"{what} is empty: at least one score is needed.")
    scores = scores.astype(np.float64)  # exact for float32 and for integers below 2**53
    if np.isnan(scores).any():
        raise ValueError(f"{what} contains NaN: every score must be a number.")
    if not allow_infinite and not np.isfinite(scores).all():
        raise ValueError(f"{what} contains infinity: every score must be finite.")
    return scores


def check_labels_and_scores(y_true, scores, *, allow_infinite=False, what="scores"):
    """Validate and return ``(s, scores)``: int8 labels in {-1, +1} (:func:`check_pair_labels`,
    one class is enough) and float64 1-D scores (:func:`check_scores`) of the same length."""
    scores = check_scores(scores, allow_infinite=allow_infinite, what=what)
    if np.ndim(y_true) == 1 and len(y_true) != scores.size:
        raise ValueError(
            f"y_true and {what} have different lengths: {len(y_true)} != {scores.size}."
        )
    return check_pair_labels(y_true, scores.size), scores


def check_transformer_input(estimator, X, reset):
    """Validate points (n, d) or pairs (n, 2, d) for a transformer's ``fit`` (``reset=True``:
    records ``n_features_in_`` and the DataFrame's ``feature_names_in_``) or ``transform``
    (checks them); return a float array. Dense real numbers only."""
    if sparse.issparse(X):
        raise TypeError(f"{type(estimator).__name__} does not accept sparse input: use .toarray().")
    if reset:
        estimator.__dict__.pop("feature_names_in_", None)  # set again below for a DataFrame
    check_feature_names(estimator, X, reset=reset)
    X = np.asarray(X)
    if X.dtype == object:
        X = X.astype(np.float64)  # numbers stored as objects; anything else raises TypeError
    if X.dtype.kind == "c":
        raise ValueError("Complex data not supported: X must hold real numbers.")
    if X.ndim not in (2, 3):
        raise ValueError(
            "X must be points of shape (n_samples, n_features) or pairs of shape "
            f"(n_pairs, 2, n_features), got an array of shape {X.shape}. Reshape your data."
        )
    if X.shape[0] == 0 or X.shape[-1] == 0:
        what = "sample" if X.shape[0] == 0 else "feature"
        raise ValueError(
            f"Found array with 0 {what}(s) (shape={X.shape}) while a minimum of 1 is required."
        )
    X = check_points(X) if X.ndim == 2 else check_pairs(X, what="X (pairs)")
    if not reset and X.shape[-1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[-1]} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input."
        )
    if reset:
        estimator.n_features_in_ = X.shape[-1]
    return X


def pair_classes(y):
    """The two labels of ``y``'s coding, sorted: ``classes_`` of an estimator fitted on y.

    ``y`` holds validated pair labels (:func:`check_pair_labels`). The coding is kept as given
    ({-1, +1}, {0, 1} or {False, True}, in y's dtype), so that ``predict`` answers in the
    user's coding and scikit-learn's scorers (``pos_label=1``) see the labels they were
    given. The larger label (+1, 1 or True) is the "same identity" class, ``classes_[1]``.
    """
    y = np.asarray(y)
    values = np.unique(y)
    if y.dtype.kind == "b":
        return np.array([False, True])
    low = -1 if values.min() < 0 else 0
    return np.array([low, 1], dtype=y.dtype)


# -- exact power-of-two rescaling ------------------------------------------------------------
# Exact power-of-two rescaling of data whose magnitude would overflow or underflow the
# squares formed from it (covariances, squared distances), and the check that what is stored
# back in the data's units is representable in its dtype.
#
# Multiplying by ``2**-e`` is exact (no rounding) for normal numbers, so results computed on
# rescaled data are the results of the data itself, up to the round-off of the computation.
# Data within ``2**-SAFE_EXPONENT .. 2**SAFE_EXPONENT`` (about 1e-77 .. 1e77) is left as it is:
# fits on ordinary data stay bit-identical.

#: Squares of |x| <= 2**256 (and sums of up to 2**250 of them) stay below the float64
#: maximum; squares of |x| >= 2**-256 stay far above its smallest normal number.
SAFE_EXPONENT = 256


def largest_magnitude(X):
    """The largest |entry| of an array (0.0 when empty), as a Python float."""
    X = np.asarray(X)
    return float(np.max(np.abs(X))) if X.size else 0.0


def scale_exponent(largest):
    """The exponent e to rescale data by ``2**-e``: 0 when its ``largest`` |entry| is 0 or
    within ``2**+-SAFE_EXPONENT``, else the e with ``largest * 2**-e`` in [0.5, 1)."""
    if not np.isfinite(largest) or largest == 0:
        return 0
    e = int(np.frexp(largest)[1])
    return 0 if abs(e) <= SAFE_EXPONENT else e


def rescaled_together(*arrays):
    """The arrays (as float64) rescaled by one common power of two, ``2**-e`` with ``e =
    scale_exponent(largest |entry| of them all)``: unchanged (bit-identical results) for
    data within ``2**+-SAFE_EXPONENT``, exactly rescaled beyond, so that a computation
    invariant to a common scale (a Gaussian log-density ratio) neither overflows nor
    underflows."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    e = scale_exponent(max((largest_magnitude(a) for a in arrays), default=0.0))
    return [np.ldexp(a, -e) if e else a for a in arrays]


def check_representable(values, dtype, what, largest, name="X", exponent=0):
    """``values * 2**exponent`` (values in float64, e.g. of data rescaled by
    :func:`scale_exponent`) cast to ``dtype``; a ValueError naming the input ``name`` when
    they overflow it or the largest |value| underflows to 0 (the data's scale cannot be
    stored; smaller values flushing to 0 beside the largest are round-off and kept)."""
    dtype = np.dtype(dtype)
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(np.asarray(values, dtype=np.float64), exponent).astype(dtype)
    if np.isfinite(out).all() and (largest_magnitude(values) == 0 or largest_magnitude(out) > 0):
        return out
    info = np.finfo(dtype)
    raise ValueError(
        f"{name} {'have' if name.endswith('s') else 'has'} entries up to {largest:.3g}: "
        f"{what} lie beyond the {dtype} range "
        f"(up to {info.max:.3g}, down to {info.smallest_subnormal:.3g}) in its units. Rescale "
        f"{name} (e.g. divide by {largest:.3g}, or StandardScaler) before fitting.")


# -- the float dtype of a computation, and identity (class) labels ---------------------------
# One home for two rules every room applies to its input: in which float dtype to compute,
# and what a class (identity) label of a point may be.

def float_dtype(*arrays):
    """The float dtype to compute in for ``arrays`` (arrays or dtypes): their common dtype
    (``np.result_type``) when it is float32 or float64, else float64 (integers, booleans,
    float16, or float32 mixed with float64 or int64 give float64).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.pairs.checks import float_dtype
    >>> float_dtype(np.ones(2, np.float32)), float_dtype(np.ones(2, np.int32))
    (dtype('float32'), dtype('float64'))
    >>> float_dtype(np.float32, np.float64)
    dtype('float64')
    """
    dtype = np.result_type(*arrays)
    return dtype if dtype in FLOAT_DTYPES else np.dtype(np.float64)


def check_identity_labels(labels, name="labels", n_samples=None):
    """Class (identity) labels: 1-D, non-empty, numbers or strings, no NaN; as an ndarray.

    Raises
    ------
    ValueError
        Naming the argument: 2-D labels, empty labels, NaN / None labels, a length that
        does not match ``n_samples``.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one class label per sample), got shape "
                         f"{labels.shape}" + (": use np.ravel." if labels.ndim == 2
                                              and 1 in labels.shape else "."))
    if labels.size == 0:
        raise ValueError(f"{name} is empty: one class label per sample is needed.")
    if n_samples is not None and labels.shape[0] != n_samples:
        raise ValueError(f"{name} has {labels.shape[0]} labels for {n_samples} samples: "
                         f"expected shape ({n_samples},), got {labels.shape}.")
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        raise ValueError(f"{name} contains NaN or infinity: every sample needs a class label.")
    if labels.dtype.kind == "O":
        bad = [v for v in labels if v is None or (isinstance(v, float) and not np.isfinite(v))]
        if bad:
            raise ValueError(f"{name} contains {bad[0]!r}: every sample needs a class label.")
    if labels.dtype.kind not in "biufUSO":
        raise ValueError(f"{name} must hold numbers or strings, got dtype {labels.dtype}.")
    return labels


def identity_codes(labels, name="labels", n_samples=None, *, min_identities=1):
    """The identities (sorted) and each sample's code into them, from checked class labels
    (:func:`check_identity_labels`): ``np.unique(labels, return_inverse=True)``.

    Parameters
    ----------
    labels : array-like of shape (n_samples,)
    name : str, default="labels"
        The argument's name in error messages.
    n_samples : int, default=None
        If given, the number of labels expected.
    min_identities : int, default=1
        Raise ValueError with fewer distinct identities (2 for a between-class statistic).

    Returns
    -------
    identities : ndarray of shape (n_identities,)
    codes : ndarray of shape (n_samples,), intp

    Examples
    --------
    >>> from metricfit.pairs.checks import identity_codes
    >>> identity_codes(["b", "a", "b"])
    (array(['a', 'b'], dtype='<U1'), array([1, 0, 1]))
    """
    labels = check_identity_labels(labels, name, n_samples)
    identities, codes = np.unique(labels, return_inverse=True)
    if identities.size < min_identities:
        kind = "1 identity (1 class)" if identities.size == 1 else (
            f"{identities.size} identities ({identities.size} classes)")
        raise ValueError(f"{name} holds {kind}: at least {min_identities} are needed.")
    return identities, codes
