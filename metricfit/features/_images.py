"""Validation of image stacks (n_images, H, W) and image pairs (n_pairs, 2, H, W), and the base
class of the image descriptors."""

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import PointOutputMixin, validate_params
from ..pairs import check_pairs, check_points
from ..pairs.checks import check_dtype_range

__all__ = ["check_images"]


def check_images(X, what="X", dtype=np.float64):
    """Validate images or pairs of images; return a C-contiguous float64 array.

    Parameters
    ----------
    X : array-like of shape (n_images, H, W) or (n_pairs, 2, H, W)
        Real numbers (any integer, boolean or float dtype).
    what : str, default="X"
        Name used in error messages.

    Returns
    -------
    X : ndarray, float64 (or ``dtype``), same shape

    Raises
    ------
    ValueError
        On another number of dimensions (the message names both accepted shapes), a pair axis
        of length other than 2, an empty array, non-numeric data, NaN or infinity.
    """
    try:
        X = np.asarray(X)
    except Exception as exc:  # ragged nested lists
        raise ValueError(f"{what} could not be converted to a numeric array: {exc}") from exc
    if X.ndim not in (3, 4):
        raise ValueError(
            f"{what} must be images of shape (n_images, height, width) or pairs of images of "
            f"shape (n_pairs, 2, height, width), got an array of shape {X.shape}."
        )
    if X.ndim == 4 and X.shape[1] != 2:
        raise ValueError(
            f"{what} (pairs of images) must have the pair axis (of length 2) at axis 1, got "
            f"shape {X.shape}."
        )
    if 0 in X.shape:
        raise ValueError(f"{what} is empty: got shape {X.shape}.")
    n = X.shape[0]
    if X.ndim == 3:
        flat = check_points(X.reshape(n, -1), dtype=np.float64, what=what)
    else:
        flat = check_pairs(X.reshape(n, 2, -1), dtype=np.float64, what=what)
    check_dtype_range(flat, dtype, what)
    return flat.reshape(X.shape).astype(dtype, copy=False)


def check_fitted_images(estimator, X):
    """``(X, images)``: X validated as images (n, H, W) or image pairs (n, 2, H, W) of the
    shape ``estimator`` was fitted on, and its images flattened to (n_images, H, W)."""
    X = check_images(X)
    if X.shape[-2:] != estimator.image_shape_:
        raise ValueError(
            f"X holds images of shape {X.shape[-2:]}, but {type(estimator).__name__} was "
            f"fitted on images of shape {estimator.image_shape_}."
        )
    return X, X.reshape((-1,) + estimator.image_shape_)


class _ImageDescriptor(PointOutputMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                       BaseEstimator):
    """fit (parameters, image size), transform (shape check, chunks, ``set_output``), feature
    names and tags: what the image descriptors (LBP, OCLBP, HOG, DenseSIFT, Gabor) share.

    Subclasses give ``_config()`` (checked parameters, kept as the attribute named by
    ``_config_attribute``), ``_check_size(h, w, config)`` (ValueError when the images are too
    small), ``_dimension(h, w, config)`` and ``_describe(images)`` (the kernel call on
    (n, h, w) float64, ``_chunk`` images at a time; None: all at once). ``transform``'s 2-D
    output follows ``set_output`` (pandas / polars, columns 'lbp0', 'hog0', ...)."""

    _config_attribute = "config_"
    _chunk = 256  # images per kernel call: bounds the transient memory of Gabor's responses

    def fit(self, X, y=None):
        """Check the parameters and the images; record the image shape.

        Parameters
        ----------
        X : array-like of shape (n_images, H, W) or (n_pairs, 2, H, W)
            Finite grey levels.
        y : ignored

        Returns
        -------
        self
        """
        validate_params(self)
        config = self._config()
        height, width = check_images(X).shape[-2:]
        self._check_size(height, width, config)
        setattr(self, self._config_attribute, config)
        self.image_shape_ = (height, width)
        self.n_features_out_ = self._dimension(height, width, config)
        return self

    @property
    def _n_features_out(self):
        """``get_feature_names_out`` gives '<class name>0', '<class name>1', ..."""
        return self.n_features_out_

    def transform(self, X):
        """Descriptor of each image.

        Parameters
        ----------
        X : array-like of shape (n_images, H, W) or (n_pairs, 2, H, W)
            Finite grey levels, images of the shape seen in ``fit``.

        Returns
        -------
        features : ndarray of shape (n_images, n_features_out) or
            (n_pairs, 2, n_features_out), float64 (a DataFrame for images under
            ``set_output(transform="pandas" | "polars")``)
        """
        check_is_fitted(self)
        X, images = check_fitted_images(self, X)
        n = images.shape[0]
        if self._chunk is None:
            out = self._describe(images)
        else:
            out = np.empty((n, self.n_features_out_))
            for start in range(0, n, self._chunk):
                out[start:start + self._chunk] = self._describe(images[start:start + self._chunk])
        return self._wrap_output(out.reshape(X.shape[:-2] + (self.n_features_out_,)), None)

    def _too_small(self, height, width, min_height, min_width, what):
        if height < min_height or width < min_width:
            raise ValueError(
                f"Images of {height}x{width} pixels are too small for {type(self).__name__}: "
                f"{what} needs at least {min_height}x{min_width}."
            )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.three_d_array = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
