"""metricfit.cnn.augment: random shifts, scalings, rotations and flips of image batches."""

import numpy as np
import pytest
from scipy.ndimage import map_coordinates

from metricfit.cnn.augment import augment_images, random_transforms, warp_images


@pytest.fixture
def images():
    return np.random.default_rng(0).normal(size=(5, 12, 9))


def no_change(n):
    return np.zeros((n, 2)), np.ones(n), np.zeros(n), np.zeros(n, bool)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reproducible_for_a_seed_and_different_for_another(images, dtype):
    X = images.astype(dtype)
    a = augment_images(X, 3)
    assert a.dtype == dtype and a.shape == X.shape
    np.testing.assert_array_equal(a, augment_images(X, 3))
    np.testing.assert_array_equal(a, augment_images(X, np.random.default_rng(3)))
    assert not np.array_equal(a, augment_images(X, 4))
    rs = augment_images(X, np.random.RandomState(3))  # a RandomState works too
    np.testing.assert_array_equal(rs, augment_images(X, np.random.RandomState(3)))


def test_identity_when_all_ranges_are_zero(images):
    out = augment_images(images, 0, shift=0, scale=0, rotation=0, flip=0)
    np.testing.assert_array_equal(out, images)


def test_flip_twice_is_the_identity(images):
    shift, scale, angle, _ = no_change(len(images))
    flip = np.ones(len(images), bool)
    once = warp_images(images, shift, scale, angle, flip)
    np.testing.assert_array_equal(once, images[:, :, ::-1])
    np.testing.assert_array_equal(warp_images(once, shift, scale, angle, flip), images)
    always = augment_images(images, 1, shift=0, scale=0, rotation=0, flip=1)
    np.testing.assert_array_equal(always, images[:, :, ::-1])


def test_integer_shift_is_a_roll_in_the_interior(images):
    n = len(images)
    _, scale, angle, flip = no_change(n)
    out = warp_images(images, np.tile([2.0, -3.0], (n, 1)), scale, angle, flip)
    rolled = np.roll(images, (2, -3), axis=(1, 2))  # content moves 2 down, 3 left
    np.testing.assert_array_equal(out[:, 2:, :-3], rolled[:, 2:, :-3])
    np.testing.assert_array_equal(out[:, :2, :-3], np.repeat(images[:, :1, 3:], 2, 1))  # edge


def test_half_pixel_shift_averages_neighbours(images):
    n = len(images)
    _, scale, angle, flip = no_change(n)
    out = warp_images(images, np.tile([0.0, 0.5], (n, 1)), scale, angle, flip)
    np.testing.assert_allclose(out[:, :, 1:], (images[:, :, 1:] + images[:, :, :-1]) / 2,
                               rtol=1e-14)


def test_rotation_and_scale_match_scipy_bilinear(images):
    """Against scipy.ndimage.map_coordinates (order 1, nearest edge) on the coordinates of the
    module docstring; a 90-degree turn of a square image is np.rot90."""
    t = random_transforms(len(images), images.shape[1:], 5, shift=0.1, scale=0.2, rotation=30,
                          flip=0.5)
    out = warp_images(images, t["shift"], t["scale"], t["angle"], t["flip"])
    h, w = images.shape[1:]
    c = np.array([(h - 1) / 2, (w - 1) / 2])
    grid = np.stack(np.meshgrid(np.arange(h), np.arange(w), indexing="ij"), -1).reshape(-1, 2)
    for i, X in enumerate(images):
        a = np.deg2rad(t["angle"][i])
        R = np.array([[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]])
        src = (grid - c - t["shift"][i]) @ R.T / t["scale"][i]
        if t["flip"][i]:
            src[:, 1] *= -1
        want = map_coordinates(X, (src + c).T, order=1, mode="nearest").reshape(h, w)
        np.testing.assert_allclose(out[i], want, rtol=1e-10, atol=1e-12)
    square = images[:, :9, :9]
    n = len(square)
    turned = warp_images(square, np.zeros((n, 2)), np.ones(n), np.full(n, 90.0),
                         np.zeros(n, bool))
    np.testing.assert_allclose(turned, np.rot90(square, 1, axes=(1, 2)), atol=1e-12)


def test_draws_are_in_the_documented_ranges():
    t = random_transforms(2000, (56, 46), 0, shift=0.05, scale=0.1, rotation=10, flip=0.25)
    assert np.all(np.abs(t["shift"]) <= [0.05 * 56, 0.05 * 46])
    assert np.all(np.abs(t["scale"] - 1) <= 0.1) and np.all(np.abs(t["angle"]) <= 10)
    assert 0.2 < t["flip"].mean() < 0.3
    assert np.abs(t["shift"]).max(axis=0) == pytest.approx([2.8, 2.3], rel=0.01)


@pytest.mark.parametrize("kwargs, match", [
    ({"shift": -0.1}, "shift"), ({"shift": 0.5}, "shift"), ({"scale": 1.0}, "scale"),
    ({"rotation": 181}, "rotation"), ({"flip": 1.5}, "flip"), ({"flip": np.nan}, "flip"),
    ({"random_state": "seed"}, "random_state"), ({"rotation": "10"}, "rotation"),
])
def test_bad_values_raise(images, kwargs, match):
    with pytest.raises(ValueError, match=match):
        augment_images(images, **kwargs)


def test_bad_images_and_transforms_raise(images):
    with pytest.raises(ValueError, match="shape"):
        augment_images(images[0])
    bad = images.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        augment_images(bad)
    shift, scale, angle, flip = no_change(len(images))
    with pytest.raises(ValueError, match="one transform per image"):
        warp_images(images, shift[:2], scale, angle, flip)
    with pytest.raises(ValueError, match="scale"):
        warp_images(images, shift, -scale, angle, flip)
