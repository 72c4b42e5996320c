"""The descriptors on the package threads (issue 27): fixed blocks of images, so the output is
the same bit for bit on 1, 2 and 3 threads, and every image is described as it is alone."""

import numpy as np
import pytest

import metricfit
from metricfit import parallel
from metricfit.features import HOG, LBP, OCLBP, DenseSIFT, Gabor
from metricfit.features._images import _ImageDescriptor

DESCRIPTORS = [LBP(), OCLBP(), HOG(), DenseSIFT(), Gabor(n_scales=2)]


@pytest.fixture(scope="module")
def images():
    # 37 images: two whole blocks of 16 and a partial one
    return np.random.default_rng(0).integers(0, 256, size=(37, 62, 47)).astype(np.float64)


@pytest.mark.parametrize("descriptor", DESCRIPTORS, ids=lambda d: type(d).__name__)
def test_bit_identical_at_1_2_3_threads(descriptor, images):
    descriptor.fit(images)
    outputs = {}
    for n in (1, 2, 3):
        with metricfit.threads(n):
            outputs[n] = descriptor.transform(images)
    assert np.array_equal(outputs[1], outputs[2])
    assert np.array_equal(outputs[1], outputs[3])
    # block-independent: an image alone gives its row of the stack
    for i in (0, 16, 36):
        assert np.array_equal(descriptor.transform(images[i:i + 1])[0], outputs[1][i])


def test_transform_runs_fixed_blocks_on_the_pool(images, monkeypatch):
    seen = []
    original = parallel.map_blocks

    def spy(fn, n_items, block):
        seen.append((n_items, block))
        return original(fn, n_items, block)

    monkeypatch.setattr("metricfit.features._images.map_blocks", spy)
    hog = HOG().fit(images)
    with metricfit.threads(3):
        hog.transform(images)
    assert seen == [(37, _ImageDescriptor._block)]
    assert len(parallel.blocks(37, _ImageDescriptor._block)) == 3


def test_conversion_and_nan_check_run_on_the_blocks(images):
    hog = HOG().fit(images)
    as_uint8 = images.astype(np.uint8)
    with metricfit.threads(3):
        assert np.array_equal(hog.transform(as_uint8), hog.transform(as_uint8.astype(float)))
        assert np.array_equal(hog.transform(images.astype(np.float32)),
                              hog.transform(images.astype(np.float32).astype(float)))
        bad = images.copy()
        bad[36, 5, 5] = np.nan  # in the last block
        with pytest.raises(ValueError, match="X contains NaN"):
            hog.transform(bad)
        bad[36, 5, 5] = np.inf
        with pytest.raises(ValueError, match="X contains infinity"):  # pairs of images
            hog.transform(np.stack([images[:2], bad[35:37]], axis=1))
