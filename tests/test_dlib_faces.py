"""metricfit.features.dlib_faces: dlib's face descriptor (the ``faces`` extra)."""

import builtins

import numpy as np
import pytest

from metricfit.features import dlib_faces
from metricfit.features.dlib_faces import DlibFaceEmbedding


def _has_dlib():
    try:
        dlib_faces._import_dlib()
        dlib_faces._model_dir()
    except ImportError:
        return False
    return True


needs_dlib = pytest.mark.skipif(not _has_dlib(), reason="needs the faces extra (dlib)")


def _noise(n=2, seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(n, 20, 16), dtype=np.uint8)


@needs_dlib
def test_fallback_and_descriptor():
    """Noise holds no face: the whole crop is the face box, and the descriptor is dlib's
    128-d vector (finite, norm of order 1, different for different images)."""
    emb = DlibFaceEmbedding()
    out = emb.fit(_noise()).transform(_noise())
    assert out.shape == (2, 128) and np.isfinite(out).all()
    assert emb.n_fallback_ == 2 and emb.n_cached_ == 0
    assert ((np.linalg.norm(out, axis=1) > 0.5) & (np.linalg.norm(out, axis=1) < 2)).all()
    assert not np.allclose(out[0], out[1])
    rgb = np.repeat(_noise(1)[..., None], 3, axis=3)  # grey as RGB: the same descriptor
    assert np.allclose(emb.transform(rgb)[0], out[0], atol=1e-6)


@needs_dlib
def test_cache_hit(tmp_path, monkeypatch):
    emb = DlibFaceEmbedding(cache_dir=tmp_path)
    first = emb.transform(_noise())
    assert emb.n_cached_ == 0 and len(list(tmp_path.glob("*.npy"))) == 2

    def fail(*args):
        raise AssertionError("the network ran on a cached image")

    monkeypatch.setattr(DlibFaceEmbedding, "_embed", fail)
    second = emb.transform(_noise())
    assert emb.n_cached_ == 2 and emb.n_fallback_ == 0
    np.testing.assert_array_equal(first, second)
    # another setting is another key: it misses the cache
    with pytest.raises(AssertionError, match="cached image"):
        DlibFaceEmbedding(cache_dir=tmp_path, upsample=2).transform(_noise())


def test_error_without_dlib(monkeypatch):
    real = builtins.__import__

    def no_dlib(name, *args, **kwargs):
        if name == "dlib":
            raise ImportError("No module named 'dlib'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dlib)
    monkeypatch.setattr(dlib_faces, "_MODELS", {})
    with pytest.raises(ImportError, match=r"metricfit\[faces\]"):
        DlibFaceEmbedding().transform(_noise())


@pytest.mark.parametrize("X, match", [
    (np.zeros((2, 5, 5)), "uint8"),
    (np.zeros((2, 5), np.uint8), "shape"),
    (np.zeros((0, 5, 5), np.uint8), "no images"),
])
def test_bad_input(X, match):
    with pytest.raises(ValueError, match=match):
        DlibFaceEmbedding().transform(X)


def test_bad_upsample():
    with pytest.raises(ValueError, match="upsample"):
        DlibFaceEmbedding(upsample=0).transform(_noise())


@needs_dlib
def test_verify_features_dlib(tmp_path, monkeypatch):
    """``verify --features dlib`` computes (and caches) the descriptors of the data's images."""
    from metricfit.cli._args import FEATURES
    from metricfit.cli.verify import _features

    assert "dlib" in FEATURES
    monkeypatch.setenv("METRICFIT_DLIB_CACHE", str(tmp_path))
    out = _features(_noise(3), "dlib", quiet=True)
    assert out.shape == (3, 128) and len(list(tmp_path.glob("*.npy"))) == 3
    np.testing.assert_array_equal(out, DlibFaceEmbedding().transform(_noise(3)))


def test_verify_features_dlib_needs_8bit_images():
    from metricfit.cli.verify import _features

    with pytest.raises(ValueError, match="8-bit"):
        _features(np.random.default_rng(0).random((2, 20, 16)), "dlib", quiet=True)
