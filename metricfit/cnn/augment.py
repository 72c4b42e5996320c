r"""On-the-fly data augmentation of image batches: small random shifts, scalings, rotations and
mirror flips, resampled bilinearly (issue 14, item 1; seed 000 section 3.1 trains on a fixed
set, this is what its FERET/AR training lacked at our scale).

Each image of a batch gets its own transform, drawn from a NumPy ``Generator`` (or
``RandomState``, or an int seed): the same seed gives the same batch bit for bit. A pure module
(not yet wired into :class:`~metricfit.learners.siamese_cnn.SiameseCNN`).

The transform of one image, about its centre ``c = ((h - 1) / 2, (w - 1) / 2)``, in this
order: mirror left-right (with probability ``flip``), rotate by ``angle`` degrees
(counter-clockwise as displayed, rows pointing down), scale by ``s``, shift by ``(dy, dx)``
pixels (content moves down and right for positive values). Each output pixel ``p`` reads the
input at

.. math::

    x = c + F\, R(-\theta)\, (p - c - t) / s,

with ``F = diag(1, -1)`` when flipped, by bilinear interpolation of the four nearest pixels;
points outside the image take the nearest edge pixel (replicated border). With every range 0
and no flip, ``x = p`` exactly and the output equals the input bit for bit.

Defaults (``shift=0.05``, ``scale=0.1``, ``rotation=10``, ``flip=0.5``) are the "small"
perturbations of issue 14 (on 56x46 faces: up to 2.8 / 2.3 pixels of shift, 0.9-1.1 scale,
+-10 degrees, a mirror flip half the time); they were not tuned on any data.
"""

from numbers import Integral, Real

import numpy as np
from numba import njit

__all__ = ["random_transforms", "warp_images", "augment_images", "augment_ranges",
           "AUGMENT_RANGES"]

AUGMENT_RANGES = ("shift", "scale", "rotation", "flip")
"""The keys an ``augment`` dict may set (:func:`random_transforms`)."""


def augment_ranges(augment, shape):
    """The keyword ranges of :func:`augment_images` an ``augment`` option asks for (False:
    None; True: the defaults, ``{}``; a dict: some of :data:`AUGMENT_RANGES`), checked on
    images of ``shape`` (ValueError).

    Examples
    --------
    >>> from metricfit.cnn.augment import augment_ranges
    >>> augment_ranges(False, (8, 8)), augment_ranges(True, (8, 8))
    (None, {})
    >>> augment_ranges({"flip": 0.0}, (8, 8))
    {'flip': 0.0}
    """
    if augment is False:
        return None
    ranges = {} if augment is True else dict(augment)
    unknown = set(ranges) - set(AUGMENT_RANGES)
    if unknown:
        raise ValueError(f"augment may set {AUGMENT_RANGES}, got the keys "
                         f"{sorted(map(str, unknown))}.")
    random_transforms(0, shape, 0, **ranges)  # checks the ranges (ValueError)
    return ranges


def _check_range(value, name, low, high, high_inclusive=True):
    if not isinstance(value, Real) or isinstance(value, bool) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}.")
    if value < low or value > high or (value == high and not high_inclusive):
        bracket = "]" if high_inclusive else ")"
        raise ValueError(f"{name} must be in [{low}, {high}{bracket}, got {value!r}.")
    return float(value)


def _rng(random_state):
    """A Generator or RandomState from None, an int, a Generator or a RandomState."""
    if isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        return random_state
    if random_state is None or (isinstance(random_state, Integral)
                                and not isinstance(random_state, bool)):
        return np.random.default_rng(random_state)
    raise ValueError("random_state must be None, an int, a numpy Generator or RandomState, "
                     f"got {random_state!r}.")


def random_transforms(n, shape, random_state=None, *, shift=0.05, scale=0.1, rotation=10.0,
                      flip=0.5):
    """Draw the transforms of ``n`` images of ``shape`` (height, width).

    Parameters
    ----------
    n : int
    shape : (int, int)
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
    shift : float in [0, 0.5), default=0.05
        Largest shift as a fraction of the image height (rows) and width (columns): ``dy``
        uniform in ``[-shift h, shift h]``, ``dx`` in ``[-shift w, shift w]``.
    scale : float in [0, 1), default=0.1
        Scale factor uniform in ``[1 - scale, 1 + scale]``.
    rotation : float in [0, 180], default=10
        Angle in degrees, uniform in ``[-rotation, rotation]``.
    flip : float in [0, 1], default=0.5
        Probability of a left-right mirror flip.

    Returns
    -------
    transforms : dict of arrays of length n
        ``shift`` (n, 2) pixels (dy, dx), ``scale`` (n,), ``angle`` (n,) degrees, ``flip``
        (n,) bool. The draws are made in this order and always all of them (a zero range still
        consumes its numbers), so a range changes only its own values.
    """
    if not isinstance(n, Integral) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}.")
    h, w = _check_shape(shape)
    shift = _check_range(shift, "shift", 0.0, 0.5, high_inclusive=False)
    scale = _check_range(scale, "scale", 0.0, 1.0, high_inclusive=False)
    rotation = _check_range(rotation, "rotation", 0.0, 180.0)
    flip = _check_range(flip, "flip", 0.0, 1.0)
    rng = _rng(random_state)
    unit = rng.uniform(-1.0, 1.0, size=(n, 4))  # dy, dx, scale, angle
    flips = rng.random(n) < flip
    return {"shift": unit[:, :2] * (shift * np.array([h, w])),
            "scale": 1.0 + scale * unit[:, 2],
            "angle": rotation * unit[:, 3],
            "flip": flips}


def _check_shape(shape):
    shape = tuple(shape)
    if len(shape) != 2 or not all(isinstance(s, Integral) and s >= 1 for s in shape):
        raise ValueError(f"shape must be two ints >= 1, got {shape!r}.")
    return shape


def _check_images(X):
    X = np.asarray(X)
    if X.ndim != 3:
        raise ValueError(f"images must have shape (n, height, width), got {X.shape}.")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if not np.all(np.isfinite(X)):
        raise ValueError("images contain NaN or inf.")
    return np.ascontiguousarray(X)


def warp_images(X, shift, scale, angle, flip):
    """Apply given transforms (as from :func:`random_transforms`) to images, bilinearly.

    Parameters
    ----------
    X : array-like of shape (n, h, w), float32 or float64 (other types become float64)
    shift : array-like of shape (n, 2)
        (dy, dx) in pixels; content moves down / right for positive values.
    scale : array-like of shape (n,), > 0
    angle : array-like of shape (n,), degrees
    flip : array-like of shape (n,), bool

    Returns
    -------
    out : ndarray of shape (n, h, w), the dtype of X
    """
    X = _check_images(X)
    n = X.shape[0]
    shift = np.asarray(shift, dtype=np.float64).reshape(-1, 2) if n else np.zeros((0, 2))
    scale, angle = (np.asarray(a, dtype=np.float64).ravel() for a in (scale, angle))
    flip = np.asarray(flip).ravel()
    if not (shift.shape[0] == scale.size == angle.size == flip.size == n):
        raise ValueError(f"one transform per image: {n} images, shift {shift.shape}, "
                         f"scale {scale.shape}, angle {angle.shape}, flip {flip.shape}.")
    if not (np.all(np.isfinite(shift)) and np.all(np.isfinite(angle))
            and np.all(np.isfinite(scale)) and np.all(scale > 0)):
        raise ValueError("shift and angle must be finite and scale finite and > 0.")
    out = np.empty_like(X)
    theta = np.deg2rad(angle)
    _warp_into(X, shift, np.cos(theta) / scale, np.sin(theta) / scale, flip.astype(np.bool_),
               out)
    return out


def augment_images(X, random_state=None, *, shift=0.05, scale=0.1, rotation=10.0, flip=0.5):
    """Randomly shifted, scaled, rotated and mirrored copies of images (one transform each).

    Parameters are those of :func:`random_transforms` (ranges and defaults there) and
    :func:`warp_images`. The same ``random_state`` seed gives the same output bit for bit.

    Returns
    -------
    out : ndarray of shape (n, h, w), the dtype of X (float32 or float64)
    """
    X = _check_images(X)
    t = random_transforms(X.shape[0], X.shape[1:], random_state, shift=shift, scale=scale,
                          rotation=rotation, flip=flip)
    return warp_images(X, t["shift"], t["scale"], t["angle"], t["flip"])


@njit(cache=True, nogil=True)
def _warp_into(X, shift, cos_s, sin_s, flip, out):  # pragma: no cover (compiled)
    """``out[i, p] = X[i]`` bilinearly at ``c + F R(-theta) (p - c - t) / s`` (module
    docstring); ``cos_s = cos(theta) / s``, ``sin_s = sin(theta) / s``; edge pixels replicated
    outside the image. Coordinates in float64 whatever the image dtype."""
    n, h, w = X.shape
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    for i in range(n):
        img = X[i]
        for r in range(h):
            for q in range(w):
                yr = r - cy - shift[i, 0]
                xr = q - cx - shift[i, 1]
                # R(-theta) with rows down: a counter-clockwise turn as displayed
                ys = cos_s[i] * yr + sin_s[i] * xr
                xs = -sin_s[i] * yr + cos_s[i] * xr
                if flip[i]:
                    xs = -xs
                y = min(max(cy + ys, 0.0), h - 1.0)
                x = min(max(cx + xs, 0.0), w - 1.0)
                y0, x0 = int(np.floor(y)), int(np.floor(x))
                y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
                fy, fx = y - y0, x - x0
                top = (1 - fx) * img[y0, x0] + fx * img[y0, x1]
                bottom = (1 - fx) * img[y1, x0] + fx * img[y1, x1]
                out[i, r, q] = (1 - fy) * top + fy * bottom
