"""The base class of the image descriptors, and the check of images of the fitted shape (the
validation of image stacks and pairs is public, in :mod:`metricfit.features.images`)."""

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import PointOutputMixin, validate_params
from ..parallel import map_blocks
from .images import check_images

__all__ = []


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


def _plain_images(X, shape):
    """X itself when it is a NumPy array of images (n, H, W) or image pairs (n, 2, H, W) of
    ``shape``, of a real dtype that converts to float64 without overflow (bool, integers,
    float16/32/64), non-empty; else None. Such arrays skip the serial validation: each block
    of images is converted to float64 and checked for NaN / infinity on the threads
    (:meth:`_ImageDescriptor.transform`), the same conversion as
    :func:`~metricfit.features.images.check_images`'s."""
    if not isinstance(X, np.ndarray) or X.dtype.kind not in "biuf" or X.dtype.itemsize > 8:
        return None
    if X.ndim not in (3, 4) or (X.ndim == 4 and X.shape[1] != 2) or 0 in X.shape:
        return None
    return X if X.shape[-2:] == tuple(shape) else None


class _ImageDescriptor(PointOutputMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                       BaseEstimator):
    """fit (parameters, image size), transform (shape check, chunks, ``set_output``), feature
    names and tags: what the image descriptors (LBP, OCLBP, HOG, DenseSIFT, Gabor) share.

    Subclasses give ``_config()`` (checked parameters, kept as the attribute named by
    ``_config_attribute``), ``_check_size(h, w, config)`` (ValueError when the images are too
    small), ``_dimension(h, w, config)``, ``_describe(images)`` (the kernel call on
    (n, h, w) float64) and optionally ``_prepare()`` (shared read-only state built once
    before the threads start). ``transform``'s 2-D output follows ``set_output`` (pandas /
    polars, columns 'lbp0', 'hog0', ...).

    Threads: ``transform`` describes fixed blocks of ``_block`` images on the package's
    threads (:func:`metricfit.parallel.map_blocks`; the kernels are ``nogil`` numba
    functions), the conversion to float64 and the NaN check of a NumPy array of images
    included (:func:`_plain_images`). Every image is described on its own, by the same code,
    whatever block it falls in, so the output is the same bit for bit on any number of
    threads."""

    _config_attribute = "config_"
    _block = 16  # images per work unit: 1,000 images make 63 units for up to 16 threads

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
        raw = _plain_images(X, self.image_shape_)
        if raw is None:  # anything else: the full serial check (and its errors)
            X, raw = check_fitted_images(self, X)
        images = raw.reshape((-1,) + self.image_shape_)
        out = np.empty((images.shape[0], self.n_features_out_))
        self._prepare()

        def describe(rows):  # disjoint rows of out: no lock needed
            block = np.ascontiguousarray(images[rows], dtype=np.float64)
            if images.dtype.kind == "f" and not np.isfinite(block).all():
                return False
            out[rows] = self._describe(block)
            return True

        if not all(map_blocks(describe, images.shape[0], self._block)):
            check_fitted_images(self, X)  # raises the serial check's error on NaN / infinity
        return self._wrap_output(out.reshape(raw.shape[:-2] + (self.n_features_out_,)), None)

    def _prepare(self):
        """Build what the threads share (read-only) before they start; nothing by default."""

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
