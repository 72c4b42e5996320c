"""Tests of the dense SIFT, Gabor and HOG descriptors (issue 15): scikit-image's hog and
gabor_kernel as references, plain-NumPy twins (tests/_reference.py) for every kernel,
hand-made images (pure gradients, gratings, constants), dimensions, dtypes and bad input."""

import pickle

import numpy as np
import pytest
from _reference import convolve_reflect_ref, dense_sift_ref, gabor_ref, gradients_ref, hog_ref
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline

from metricfit.datasets import load_lfw
from metricfit.features import HOG, DenseSIFT, Gabor, SquareRoot, gabor_kernel
from metricfit.features._gabor import GaborPlan, _reflect_into, gabor_bank, gabor_magnitudes
from metricfit.features._hog import NORMS, _gradients_into, hog_features
from metricfit.features._sift import dense_sift

ESTIMATORS = [HOG, DenseSIFT, Gabor]
# small settings that fit 24x20 images, so the generic tests stay fast
SMALL = {HOG: {"pixels_per_cell": (4, 4)}, DenseSIFT: {"bin_sizes": (2, 3)},
         Gabor: {"n_scales": 2, "n_orientations": 4, "block_size": (6, 5)}}


def small(cls, **params):
    return cls(**{**SMALL[cls], **params})


@pytest.fixture(scope="module")
def lfw_images():
    try:
        return load_lfw().images
    except FileNotFoundError as exc:
        pytest.skip(f"LFW npz not found: {exc}")


def ramp(shape, d_row, d_col):
    rows, cols = np.indices(shape, dtype=np.float64)
    return 3.0 + d_row * rows + d_col * cols


# --------------------------------------------------------------------------- gradients


def test_gradients_kernel_equals_numpy_twin(rng):
    image = rng.random((9, 7))
    g_row, g_col = np.empty_like(image), np.empty_like(image)
    _gradients_into(image, g_row, g_col)
    ref_row, ref_col = gradients_ref(image)
    assert_array_equal(g_row, ref_row)
    assert_array_equal(g_col, ref_col)


# --------------------------------------------------------------------------- HOG


@pytest.fixture(scope="module")
def skimage_hog():
    feature = pytest.importorskip("skimage.feature")
    return feature.hog


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("orientations, cell, block", [(9, (8, 8), (2, 2)), (8, (6, 5), (3, 2)),
                                                       (7, (4, 4), (1, 1)), (12, (5, 6), (2, 3))])
@pytest.mark.parametrize("shape", [(62, 47), (31, 33)])
@pytest.mark.parametrize("kind", ["float", "uint8"])
def test_hog_equals_skimage(skimage_hog, rng, norm, orientations, cell, block, shape, kind):
    image = rng.random(shape) if kind == "float" else rng.integers(0, 256, shape).astype(float)
    ref = skimage_hog(image, orientations=orientations, pixels_per_cell=cell,
                      cells_per_block=block, block_norm=norm)
    ours = HOG(orientations, cell, block, norm).fit_transform(image[None])[0]
    # skimage sums the cells in float32: agreement to float32 round-off
    assert_allclose(ours, ref, rtol=2e-6, atol=1e-7)


def test_hog_equals_skimage_on_lfw(skimage_hog, lfw_images):
    images = lfw_images[:: len(lfw_images) // 20][:20].astype(np.float64)
    ours = HOG().fit_transform(images)
    for image, row in zip(images, ours, strict=True):
        ref = skimage_hog(image, orientations=9, pixels_per_cell=(8, 8), cells_per_block=(2, 2),
                          block_norm="L2-Hys")
        assert_allclose(row, ref, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("norm", NORMS)
def test_hog_kernel_equals_numpy_twin(rng, norm):
    images = rng.random((3, 26, 23))
    ours = hog_features(images, 7, (4, 3), (2, 2), norm)
    for image, row in zip(images, ours, strict=True):
        assert_allclose(row, hog_ref(image, 7, (4, 3), (2, 2), norm), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("d_row, d_col, angle", [(0, 1, 0), (0, -2, 0), (1, 0, 90), (-1, 0, 90),
                                                 (1, 1, 45), (1, -1, 135)])
def test_hog_pure_gradient_fills_one_bin(d_row, d_col, angle):
    """A linear ramp has one gradient direction: every pixel off the image border (where one
    difference is set to 0) votes in the bin of its unsigned angle, 20-degree bins here, with
    L1 blocks of one cell so the votes stay visible. The border cells are left out."""
    features = HOG(9, (4, 4), (1, 1), "L1").fit_transform(ramp((24, 20), d_row, d_col)[None])
    cells = features.reshape(6, 5, 9)[1:-1, 1:-1].reshape(-1, 9)
    expected = angle // 20
    assert (cells[:, expected] > 0.5).all()
    assert_allclose(np.delete(cells, expected, axis=1), 0, atol=1e-12)


def test_hog_of_a_constant_image_is_zero():
    assert_array_equal(HOG().fit_transform(np.full((1, 62, 47), 9.0)), 0)


def test_hog_dimension_62x47():
    est = HOG().fit(np.zeros((1, 62, 47)))
    assert est.n_features_out_ == 6 * 4 * 2 * 2 * 9 == 864


# --------------------------------------------------------------------------- Gabor


@pytest.mark.parametrize("frequency", [0.25, 0.125, 0.0625, 0.3])
@pytest.mark.parametrize("theta", np.arange(8) * np.pi / 8)
@pytest.mark.parametrize("sigma, n_stds", [(None, 3), (2.5, 2), (3.0, 3.5)])
def test_gabor_kernel_equals_skimage(frequency, theta, sigma, n_stds):
    filters = pytest.importorskip("skimage.filters")
    s = 1 / frequency if sigma is None else sigma
    ref = filters.gabor_kernel(frequency, theta=theta, sigma_x=s, sigma_y=s, n_stds=n_stds)
    ours = gabor_kernel(frequency, theta, sigma, n_stds)
    assert ours.shape == ref.shape
    assert_allclose(ours, ref, rtol=1e-13, atol=1e-18)


@pytest.mark.parametrize("frequency, theta", [(0.25, 0), (0.0625, np.pi / 8), (0.1, 1.0)])
def test_zero_mean_kernel_has_no_dc_and_keeps_the_carrier(frequency, theta):
    g = gabor_kernel(frequency, theta, zero_mean=True)
    plain = gabor_kernel(frequency, theta)
    assert abs(g.sum()) < 1e-14 * np.abs(plain).sum()
    # the correction is tiny at sigma = 1 / frequency (DC of the continuous kernel exp(-2 pi^2))
    assert np.abs(g - plain).max() < 1e-3 * np.abs(plain).max()


def test_gabor_bank_is_liu_wechsler():
    est = Gabor().fit(np.zeros((1, 62, 47)))
    assert_allclose(est.frequencies_, [0.25 / np.sqrt(2) ** v for v in range(5)])
    assert est.n_features_out_ == 40 * 6 * 5 == 1200
    assert Gabor().fit(np.zeros((1, 150, 80))).n_features_out_ == 4800  # seed 002 III.B


@pytest.mark.parametrize("zero_mean", [True, False])
def test_gabor_magnitudes_equal_numpy_twin(rng, zero_mean):
    """FFT convolution on the reflected image = direct convolution; kernels up to 3x the image."""
    image = rng.random((20, 17))
    kernels = gabor_bank([0.25, 0.1, 0.05], 3, zero_mean=zero_mean)
    assert max(k.shape[0] for k in kernels) > 3 * image.shape[0]
    ours = gabor_magnitudes(image[None], kernels, (6, 5))[0]
    assert_allclose(ours, gabor_ref(image, kernels, (6, 5)), rtol=1e-10, atol=1e-13)


def test_gabor_convolution_equals_scipy_ndimage(rng):
    ndimage = pytest.importorskip("scipy.ndimage")
    image = rng.random((30, 25))
    kernels = gabor_bank([0.25, 0.0625], 2)
    plan = GaborPlan(kernels, 30, 25, group_size=2)
    for first, pad_r, pad_c, responses in plan.responses(image):
        for k, response in enumerate(responses, start=first):
            g = kernels[k]
            ref = (ndimage.convolve(image, g.real, mode="reflect")
                   + 1j * ndimage.convolve(image, g.imag, mode="reflect"))
            ours = response[pad_r:pad_r + 30, pad_c:pad_c + 25]  # pad_c is 0: image columns only
            assert_allclose(ours, ref, atol=1e-12 * np.abs(ref).max())
            assert_allclose(ours, convolve_reflect_ref(image, g), atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("rows, cols, pad_r, pad_c, extra", [
    (7, 5, 0, 0, (0, 0)), (7, 5, 3, 2, (1, 4)), (4, 3, 9, 11, (2, 0)), (1, 2, 5, 6, (0, 3))])
def test_reflect_kernel_equals_numpy_pad(rng, rows, cols, pad_r, pad_c, extra):
    """The numba reflection = np.pad's 'symmetric', also for pads several times the image."""
    images = rng.random((3, rows, cols))
    shape = (3, rows + 2 * pad_r + extra[0], cols + 2 * pad_c + extra[1])
    out = np.full(shape, np.nan)
    _reflect_into(images, pad_r, pad_c, out)
    ref = np.zeros(shape)
    ref[:, :rows + 2 * pad_r, :cols + 2 * pad_c] = np.pad(
        images, ((0, 0), (pad_r, pad_r), (pad_c, pad_c)), mode="symmetric")
    assert_array_equal(out, ref)


def test_gabor_of_a_constant_image_is_zero():
    out = Gabor().fit_transform(np.full((1, 62, 47), 200.0))
    assert np.abs(out).max() < 1e-10


@pytest.mark.parametrize("v, u", [(0, 0), (0, 3), (2, 5), (1, 2)])
def test_gabor_grating_peaks_at_its_own_frequency_and_orientation(v, u):
    est = Gabor().fit(np.zeros((1, 62, 47)))
    f, theta = est.frequencies_[v], u * np.pi / 8
    rows, cols = np.indices((62, 47))
    image = np.cos(2 * np.pi * f * (cols * np.cos(theta) + rows * np.sin(theta)))
    energy = est.transform(image[None])[0].reshape(5, 8, -1).mean(axis=2)
    assert np.unravel_index(energy.argmax(), energy.shape) == (v, u)


# --------------------------------------------------------------------------- dense SIFT


@pytest.mark.parametrize("bin_sizes, steps", [((2, 3), None), ((2,), (3,)), ((3, 2), (5, 1))])
def test_dense_sift_kernel_equals_numpy_twin(rng, bin_sizes, steps):
    images = rng.random((2, 21, 19))
    images[1] = rng.integers(0, 4, (21, 19))  # ties and zero gradients
    ours = dense_sift(images, bin_sizes, steps)
    for image, row in zip(images, ours, strict=True):
        assert_allclose(row, dense_sift_ref(image, bin_sizes, steps), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("d_row, d_col, bin_", [(0, 1, 0), (1, 1, 1), (1, 0, 2), (1, -1, 3),
                                                (0, -1, 4), (-1, -1, 5), (-1, 0, 6), (-1, 1, 7)])
def test_dense_sift_pure_gradient_fills_its_orientation_bin(d_row, d_col, bin_):
    """Signed orientations, 45-degree bins centred on k pi / 4, rows pointing down: a ramp
    lands entirely in one bin of every cell of every patch."""
    features = DenseSIFT().fit_transform(ramp((62, 47), d_row, d_col)[None])[0]
    cells = features.reshape(-1, 8)
    assert_allclose(np.delete(cells, bin_, axis=1), 0, atol=1e-12)
    assert (cells[:, bin_] > 0).all()


def test_dense_sift_descriptors_are_unit_norm_and_clipped(rng):
    features = DenseSIFT().fit_transform(rng.random((2, 62, 47)))
    patches = features.reshape(-1, 128)
    assert_allclose(np.linalg.norm(patches, axis=1), 1, rtol=1e-12)
    assert patches.min() >= 0


def test_dense_sift_of_a_constant_image_is_zero():
    assert_array_equal(DenseSIFT().fit_transform(np.full((1, 62, 47), 4.0)), 0)


def test_dense_sift_dimension_62x47():
    est = DenseSIFT().fit(np.zeros((1, 62, 47)))
    assert est.n_features_out_ == (6 * 4 + 4 * 2 + 2 * 1) * 128 == 4352


# --------------------------------------------------------------------------- transformers


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_pairs_of_images_give_pairs_of_features(rng, cls):
    images = rng.random((6, 24, 20))
    est = small(cls).fit(images)
    pairs = est.transform(images.reshape(3, 2, 24, 20))
    assert pairs.shape == (3, 2, est.n_features_out_)
    assert_array_equal(pairs.reshape(6, -1), est.transform(images))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_float32_uint8_and_float64_inputs_agree(rng, cls):
    images = rng.integers(0, 256, (2, 24, 20)).astype(np.uint8)
    est = small(cls).fit(images)
    out64 = est.transform(images.astype(np.float64))
    assert out64.dtype == np.float64
    for dtype in (np.float32, np.uint8, np.int64):
        out = est.transform(images.astype(dtype))
        assert out.dtype == np.float64
        assert_array_equal(out, out64)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_float32_images_are_read_as_their_float64_values(rng, cls):
    images = rng.random((2, 24, 20)).astype(np.float32)
    est = small(cls).fit(images)
    assert_array_equal(est.transform(images), est.transform(images.astype(np.float64)))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_square_root_variant_and_clone_and_pickle(rng, cls):
    images = rng.random((4, 24, 20))
    pipe = make_pipeline(small(cls), SquareRoot()).fit(images)
    out = pipe.transform(images)
    assert_allclose(out ** 2, small(cls).fit_transform(images), rtol=1e-12, atol=1e-15)
    est = small(cls).fit(images)
    assert_array_equal(pickle.loads(pickle.dumps(est)).transform(images), est.transform(images))
    assert clone(est).get_params() == est.get_params()
    assert not hasattr(clone(est), "n_features_out_")


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_images_raise(rng, cls, bad):
    images = rng.random((2, 24, 20))
    images[1, 3, 4] = bad
    with pytest.raises(ValueError):
        small(cls).fit(images)
    est = small(cls).fit(images[:1])
    with pytest.raises(ValueError):
        est.transform(images)


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("shape", [(24, 20), (24 * 20,), (2, 3, 2, 24, 20), (2, 3, 24, 20),
                                   (0, 24, 20)])
def test_wrong_dimensions_raise(cls, shape):
    with pytest.raises(ValueError):
        small(cls).fit(np.zeros(shape))


@pytest.mark.parametrize("cls, params, shape", [
    (HOG, {}, (15, 47)), (HOG, {}, (62, 15)), (HOG, {"cells_per_block": (3, 1)}, (23, 47)),
    (DenseSIFT, {}, (31, 47)), (DenseSIFT, {}, (62, 31)), (DenseSIFT, {"bin_sizes": (2,)}, (7, 9)),
    (Gabor, {}, (9, 47)), (Gabor, {"block_size": (4, 30)}, (62, 29)),
])
def test_images_too_small_raise(cls, params, shape):
    with pytest.raises(ValueError, match="too small"):
        cls(**params).fit(np.zeros((1,) + shape))


def test_transform_checks_the_image_shape_and_fit(rng):
    for cls in ESTIMATORS:
        with pytest.raises(NotFittedError):
            small(cls).transform(rng.random((1, 24, 20)))
        est = small(cls).fit(rng.random((1, 24, 20)))
        with pytest.raises(ValueError, match="fitted on images of shape"):
            est.transform(rng.random((1, 24, 21)))


@pytest.mark.parametrize("cls, params", [
    (HOG, {"orientations": 0}), (HOG, {"orientations": 2.5}), (HOG, {"block_norm": "L3"}),
    (HOG, {"pixels_per_cell": (0, 4)}), (HOG, {"pixels_per_cell": 4}),
    (HOG, {"cells_per_block": (2, 2, 2)}), (HOG, {"cells_per_block": (1.5, 2)}),
    (DenseSIFT, {"bin_sizes": ()}), (DenseSIFT, {"bin_sizes": (2, 0)}),
    (DenseSIFT, {"bin_sizes": 2}), (DenseSIFT, {"steps": (2,)}),
    (DenseSIFT, {"steps": (2, -1)}), (DenseSIFT, {"bin_sizes": (2.0, 3)}),
    (Gabor, {"n_scales": 0}), (Gabor, {"n_orientations": -1}), (Gabor, {"max_frequency": 0}),
    (Gabor, {"max_frequency": 0.6}), (Gabor, {"scale_factor": 1.0}),
    (Gabor, {"sigma_factor": 0.0}), (Gabor, {"sigma_factor": np.inf}), (Gabor, {"n_stds": -1}),
    (Gabor, {"n_stds": np.nan}), (Gabor, {"block_size": (0, 5)}), (Gabor, {"zero_mean": 1}),
])
def test_bad_parameters_raise(rng, cls, params):
    with pytest.raises(ValueError):
        small(cls, **params).fit(rng.random((1, 24, 20)))


def test_kernel_functions_check_their_arguments(rng):
    images = rng.random((1, 24, 20))
    with pytest.raises(ValueError):
        hog_features(images, norm="max")
    with pytest.raises(ValueError):
        hog_features(images[0])
    with pytest.raises(ValueError):
        hog_features(images, cell=(16, 16))
    with pytest.raises(ValueError):
        dense_sift(images, (2, 3), (4,))
    with pytest.raises(ValueError):
        dense_sift(images, (6,))
    with pytest.raises(ValueError):
        gabor_magnitudes(images, gabor_bank([0.25], 2), (30, 5))
