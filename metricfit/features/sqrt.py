r"""The square root of non-negative features (seed 001, section 4; seed 002).

For L1-normalised histograms p and q the square roots turn the dot product into the
Bhattacharyya coefficient and the Euclidean distance into (:math:`\sqrt2` times) the
Hellinger distance,

.. math:: \sqrt{p}\cdot\sqrt{q} = \sum_k \sqrt{p_k q_k}, \qquad
          \|\sqrt{p} - \sqrt{q}\|^2 = 2 - 2\sum_k \sqrt{p_k q_k},

so linear methods downstream (WPCA, TSML) compare histograms with a distance suited to them,
and frequent bins no longer dominate rare ones.
"""

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin

from .._validation import PointOutputMixin, check_feature_names, validate_params
from ..pairs import check_points

__all__ = ["SquareRoot"]


def _check_non_negative(X):
    """Validate X of 2 to 4 dimensions, finite and >= 0; return it as float64."""
    if sparse.issparse(X):
        raise TypeError("SquareRoot does not accept sparse input: use .toarray().")
    X = np.asarray(X)
    if X.dtype == object:
        X = X.astype(np.float64)  # numbers stored as objects; anything else raises TypeError
    if X.dtype.kind == "c":
        raise ValueError("Complex data not supported: X must hold real numbers.")
    if X.ndim not in (2, 3, 4):
        raise ValueError(
            "X must be points (n_samples, n_features), pairs (n_pairs, 2, n_features), images "
            f"(n_images, H, W) or pairs of images (n_pairs, 2, H, W), got shape {X.shape}. "
            "Reshape your data."
        )
    if 0 in X.shape:
        what = "sample" if X.shape[0] == 0 else "feature"
        raise ValueError(
            f"Found array with 0 {what}(s) (shape={X.shape}) while a minimum of 1 is required."
        )
    flat = check_points(X.reshape(X.shape[0], -1), dtype=np.float64)
    if (flat < 0).any():
        raise ValueError(
            f"Negative values in data passed to SquareRoot (minimum {flat.min():g}): it needs "
            "non-negative features such as histograms; apply it before centring or whitening."
        )
    return flat.reshape(X.shape)


class SquareRoot(PointOutputMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Element-wise square root of non-negative features: the Hellinger map of histograms.

    Takes points (n, d), pairs (n, 2, d), images (n, H, W) or pairs of images
    (n, 2, H, W) and returns float64 of the same shape. Nothing is learned: ``transform``
    works unfitted; after ``fit`` it also checks the size of the last axis (``n_features_in_``).

    Raises ``ValueError`` on negative values, NaN or infinity. Fitted on a DataFrame it
    records ``feature_names_in_``; ``get_feature_names_out`` returns the input names, and
    ``set_output(transform="pandas")`` gives DataFrames for 2-D input.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from metricfit.features import LBP, SquareRoot
    >>> descriptor = make_pipeline(LBP(), SquareRoot())  # sqrt-LBP, seed 002

    References
    ----------
    - Zheng, Idrissi, Garcia, Duffner and Baskurt, "Triangular Similarity Metric Learning for Face
      Verification", FG 2015 (seed 002).
    """

    _parameter_constraints = {}

    def fit(self, X, y=None):
        """Validate X (finite, non-negative) and record the size of its last axis.

        Returns
        -------
        self
        """
        validate_params(self)
        self.__dict__.pop("feature_names_in_", None)  # set again below for a DataFrame
        check_feature_names(self, X, reset=True)
        self.n_features_in_ = _check_non_negative(X).shape[-1]
        return self

    def transform(self, X):
        """Return :math:`\\sqrt{X}` element-wise, float64, same shape as X."""
        given = X
        if hasattr(self, "n_features_in_"):
            check_feature_names(self, X, reset=False)
        X = _check_non_negative(X)
        expected = getattr(self, "n_features_in_", X.shape[-1])
        if X.shape[-1] != expected:
            raise ValueError(
                f"X has {X.shape[-1]} features, but SquareRoot is expecting {expected} features "
                "as input."
            )
        return self._wrap_output(np.sqrt(X), given)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.input_tags.three_d_array = True
        tags.input_tags.positive_only = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
