"""The --features names of the issue-15 descriptors (dsift, gabor, hog and their sqrt-
variants), --lbp-block, and the new methods through `metricfit verify`."""

import numpy as np
import pytest

from metricfit import cli
from metricfit.cli import main
from metricfit.features import HOG, LBP, DenseSIFT, Gabor

DIGITS = np.random.default_rng(0).integers(0, 17, size=(5, 8, 8))


@pytest.mark.parametrize("kind, dim", [
    ("hog", 3 * 3 * 2 * 2 * 9),  # 2x2-pixel cells on 8x8 images
    ("dsift", 128),  # one patch of 4 x 2 pixels
    ("gabor", 40 * 2 * 2),  # 4x4 blocks
])
def test_new_features_fit_digit_sized_images(kind, dim):
    out = cli._features(DIGITS, kind, quiet=True)
    assert out.shape == (5, dim) and np.isfinite(out).all() and (out >= 0).all()
    assert np.allclose(cli._features(DIGITS, f"sqrt-{kind}", True) ** 2, out)


@pytest.mark.parametrize("kind, cls, params, dim", [
    ("hog", HOG, {}, 864), ("dsift", DenseSIFT, {}, 4352), ("gabor", Gabor, {}, 1200),
    # the seed's 10x10 cells scaled to the 62x47 crops (issue 28): 12 x 9 cells of 59 bins
    ("lbp", LBP, {"block_size": (5, 5)}, 6372)])
def test_lfw_sized_images_get_the_documented_defaults(kind, cls, params, dim):
    extractor = cli._extractor(kind, 62, 47)
    assert type(extractor) is cls
    assert extractor.get_params() == cls(**params).get_params()
    assert extractor.fit(np.zeros((1, 62, 47))).n_features_out_ == dim


def test_every_feature_name_is_built():
    images = np.random.default_rng(1).random((3, 24, 20))
    for kind in cli.FEATURES:
        if kind == "dlib":  # needs the faces extra and 8-bit images: tests/test_dlib_faces.py
            continue
        assert cli._features(images, kind, quiet=True).shape[0] == 3


def test_lbp_block_sets_the_lbp_cell_size():
    images = np.random.default_rng(2).random((2, 62, 47))
    assert cli._features(images, "lbp", True, lbp_block=8).shape == (2, 8 * 6 * 59)
    assert cli._features(images, "sqrt-lbp", True, lbp_block=8).shape == (2, 8 * 6 * 59)
    assert cli._extractor("lbp", 62, 47, 8).block_size == (8, 8)


def test_lbp_block_through_the_command(capsys):
    assert main(["verify", "--quiet", "--repeats", "1", "--lams", "0.1", "--features", "lbp",
                 "--lbp-block", "3", "--methods", "baseline,wccn"]) == 0
    assert "features lbp" in capsys.readouterr().out
    assert main(["verify", "--quiet", "--features", "lbp", "--lbp-block", "0"]) == 2
    assert "argument --lbp-block: expected a positive integer" in capsys.readouterr().err
    assert main(["verify", "--quiet", "--features", "lbp", "--lbp-block", "1"]) == 2
    assert "--lbp-block: the LBP cell side must be >= 2 pixels" in capsys.readouterr().err


def test_verify_with_a_new_descriptor_and_the_new_methods(capsys):
    assert main(["verify", "--quiet", "--repeats", "1", "--lams", "0.1", "--max-iter", "30",
                 "--features", "sqrt-hog",
                 "--methods", "baseline,tsml-wccn-sim,csml-sim,ddml-wccn"]) == 0
    out = capsys.readouterr().out
    assert "features sqrt-hog" in out
    for method in ("tsml-wccn-sim", "csml-sim", "ddml-wccn"):
        assert method in out
