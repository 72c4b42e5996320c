"""Tests of metricfit.features: uniform LBP codes, block histograms, LBP / OCLBP / SquareRoot
transformers (seed 002 appendix; seed 001 section 4)."""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

import metricfit
from metricfit.datasets import load_lfw
from metricfit.features import (
    LBP,
    OCLBP,
    SquareRoot,
    block_histograms,
    lbp_codes,
    lbp_histograms,
    n_windows,
)
from metricfit.features._lbp import uniform_table

# --------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def skimage_codes():
    """scikit-image's nri_uniform codes, the reference (skips when skimage is absent)."""
    feature = pytest.importorskip("skimage.feature")

    def codes(image, P, R):
        with warnings.catch_warnings():  # its warning about float images
            warnings.simplefilter("ignore", UserWarning)
            image = np.asarray(image, float)
            return feature.local_binary_pattern(image, P, R, method="nri_uniform")

    return codes


def window_starts(length, block, step):
    """Starts of the kept windows, by enumeration: more than half a window inside the image."""
    return [t for t in range(0, length, step) if t + block / 2 < length]


def numpy_block_histograms(codes, bh, bw, sh, sw, n_bins=59):
    """Slow plain-NumPy twin of block_histograms."""
    rows, cols = codes.shape
    out = []
    for r in window_starts(rows, bh, sh):
        for c in window_starts(cols, bw, sw):
            block = codes[r:r + bh, c:c + bw].ravel()
            out.append(np.bincount(block, minlength=n_bins) / block.size)
    return np.concatenate(out)


def make_image(rng, kind, shape):
    if kind == "float":
        return rng.random(shape)
    if kind == "ties":  # few grey levels: many equal neighbours, the >= and rounding matter
        return rng.integers(0, 3, shape).astype(float)
    if kind == "constant":
        return np.full(shape, 7.0)
    return rng.integers(0, 256, shape).astype(np.uint8)


@pytest.fixture(scope="module")
def lfw_images():
    try:
        return load_lfw().images
    except FileNotFoundError as exc:
        pytest.skip(f"LFW npz not found: {exc}")


# --------------------------------------------------------------------------- LBP codes


@pytest.mark.parametrize("R", [1, 2, 3])
@pytest.mark.parametrize("kind", ["float", "ties", "constant", "uint8"])
@pytest.mark.parametrize("shape", [(23, 17), (7, 9), (40, 40)])
def test_codes_equal_skimage(skimage_codes, rng, R, kind, shape):
    image = make_image(rng, kind, shape)
    codes = lbp_codes(image, 8, R)
    assert codes.dtype == np.uint8 and codes.shape == shape
    assert_array_equal(codes, skimage_codes(image, 8, R))


@pytest.mark.parametrize("P, R", [(4, 1), (8, 1.5), (12, 2.7), (16, 2), (8, 0.5)])
@pytest.mark.parametrize("kind", ["float", "ties"])
def test_codes_equal_skimage_other_P_and_radii(skimage_codes, rng, P, R, kind):
    image = make_image(rng, kind, (25, 21))
    assert_array_equal(lbp_codes(image, P, R), skimage_codes(image, P, R))


@pytest.mark.parametrize("R", [1, 2, 3])
def test_codes_equal_skimage_on_lfw(skimage_codes, lfw_images, R):
    for index in (0, 4321, 13232):
        image = lfw_images[index]
        assert_array_equal(lbp_codes(image, 8, R), skimage_codes(image, 8, R))


def test_uniform_table():
    table = uniform_table(8)
    assert table.shape == (256,) and table.max() == 58
    bits = (np.arange(256)[:, None] >> np.arange(8)) & 1
    circular_changes = np.sum(bits != np.roll(bits, 1, axis=1), axis=1)
    uniform = circular_changes <= 2
    assert uniform.sum() == 58
    assert sorted(table[uniform]) == list(range(58))  # one code per uniform pattern
    assert np.all(table[~uniform] == 58)
    assert table[0] == 0 and table[255] == 57


# --------------------------------------------------------------------------- block histograms


@settings(deadline=None)  # the first call compiles or loads the kernel
@given(length=st.integers(1, 200), block=st.integers(1, 40), step=st.integers(1, 40))
def test_n_windows_formula(length, block, step):
    assume(block <= length)
    assert n_windows(length, block, step) == len(window_starts(length, block, step))


@pytest.mark.parametrize("bh, bw, sh, sw", [(10, 10, 10, 10), (10, 10, 5, 5), (14, 9, 7, 4),
                                            (5, 7, 3, 2), (23, 17, 1, 1)])
def test_block_histograms_equal_numpy_twin(rng, bh, bw, sh, sw):
    codes = rng.integers(0, 59, (23, 17))
    got = block_histograms(codes, bh, bw, sh, sw)
    assert_allclose(got, numpy_block_histograms(codes, bh, bw, sh, sw), rtol=0, atol=1e-15)


def test_stack_kernel_equals_codes_then_histograms(rng):
    images = rng.integers(0, 256, (3, 31, 26)).astype(float)
    got = lbp_histograms(images, 8, 2, 10, 8, 5, 4)
    for image, row in zip(images, got, strict=True):
        assert_allclose(row, block_histograms(lbp_codes(image, 8, 2), 10, 8, 5, 4), atol=1e-15)


@pytest.mark.parametrize("est", [LBP(), LBP(block_size=(7, 9), radius=2), OCLBP()])
def test_histograms_sum_to_one_per_block(rng, est):
    X = rng.integers(0, 256, (3, 62, 47))
    F = est.fit_transform(X)
    assert F.dtype == np.float64 and (F >= 0).all()
    assert_allclose(F.reshape(3, -1, 59).sum(axis=2), 1.0, rtol=1e-12)


# --------------------------------------------------------------------------- dimensions


def test_lbp_dimension_62x47():
    X = np.zeros((2, 62, 47))
    est = LBP(block_size=(10, 10)).fit(X)
    # 62 rows: 6 blocks (the 2-row remainder is dropped); 47 cols: 5 (the last 7 wide).
    assert est.n_features_out_ == 6 * 5 * 59 == 1770
    assert est.transform(X).shape == (2, 1770)


def test_dimensions_of_the_appendix():
    X = np.zeros((1, 150, 80))
    assert LBP().fit(X).n_features_out_ == 15 * 8 * 59 == 7080
    oclbp = OCLBP().fit(X)
    blocks = [n_windows(150, bh, sh) * n_windows(80, bw, sw) for bh, bw, sh, sw, _, _ in
              oclbp.windows_]
    assert [w[2:4] for w in oclbp.windows_] == [(5, 5), (7, 7), (9, 9)]
    assert blocks == [435, 231, 128]
    assert oclbp.n_features_out_ == (435 + 231 + 128) * 59 == 46846
    assert oclbp.transform(X).shape == (1, 46846)
    assert OCLBP().fit(np.zeros((1, 62, 47))).n_features_out_ == (108 + 48 + 30) * 59


def test_oclbp_without_overlap_is_lbp(rng):
    X = rng.integers(0, 256, (2, 33, 28))
    assert_array_equal(OCLBP(configs=((10, 10, 1),), overlap=0).fit_transform(X),
                       LBP().fit_transform(X))


def test_oclbp_concatenates_configurations(rng):
    X = rng.integers(0, 256, (2, 40, 36))
    configs = ((10, 10, 1), (14, 12, 2))
    parts = [OCLBP(configs=(c,)).fit_transform(X) for c in configs]
    assert_array_equal(OCLBP(configs=configs).fit_transform(X), np.hstack(parts))


# --------------------------------------------------------------------------- pairs, sqrt, pipeline


@pytest.mark.parametrize("est", [LBP(), OCLBP(overlap=0.25)])
def test_pairs_of_images_give_pairs_of_features(rng, est):
    pairs = rng.integers(0, 256, (4, 2, 30, 25))
    F = clone(est).fit(pairs).transform(pairs)
    flat = clone(est).fit_transform(pairs.reshape(8, 30, 25))
    assert F.shape == (4, 2, flat.shape[1])
    assert_array_equal(F.reshape(8, -1), flat)


@parametrize_with_checks([SquareRoot()])
def test_square_root_sklearn_compatible(estimator, check):
    check(estimator)


def test_lbp_estimators_clone_and_pickle(rng):
    X = rng.integers(0, 256, (2, 20, 20))
    for est in (LBP(block_size=(5, 4), radius=1.5), OCLBP(configs=((8, 8, 1),), overlap=0.3)):
        fitted = clone(est).fit(X)
        assert clone(est).get_params() == est.get_params()
        assert_array_equal(pickle.loads(pickle.dumps(fitted)).transform(X), fitted.transform(X))


@pytest.mark.parametrize("shape", [(5, 3), (4, 2, 3), (3, 6, 5), (2, 2, 4, 3)])
def test_square_root(rng, shape):
    X = rng.random(shape).astype(np.float32)
    Z = SquareRoot().fit_transform(X)
    assert Z.dtype == np.float64 and Z.shape == shape
    assert_allclose(Z**2, X, rtol=1e-6)
    assert_array_equal(SquareRoot().transform(np.zeros(shape)), 0.0)  # no fit needed


def test_square_root_of_histograms_is_the_hellinger_map(rng):
    p, q = rng.dirichlet(np.ones(59), size=2)
    a, b = SquareRoot().transform(np.stack([p, q]))
    assert_allclose(a @ a, 1.0)
    assert_allclose(np.sum((a - b) ** 2), 2 - 2 * np.sum(np.sqrt(p * q)))


def test_square_root_rejects_bad_input():
    with pytest.raises(ValueError, match="Negative values"):
        SquareRoot().fit(np.array([[1.0, -0.5]]))
    with pytest.raises(ValueError, match="Negative values"):
        SquareRoot().transform(-np.ones((2, 2, 3)))
    with pytest.raises(ValueError, match="expecting 3 features"):
        SquareRoot().fit(np.ones((2, 3))).transform(np.ones((2, 4)))
    with pytest.raises(ValueError, match="NaN"):
        SquareRoot().transform(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="shape"):
        SquareRoot().transform(np.ones(3))


def face_pairs(rng, n_people=12, n_pairs=60, shape=(24, 20)):
    """Synthetic identities (a sum of random plane waves + noise per image); the first half
    of the image pairs show the same person, the second half two different people."""
    rows, cols = np.mgrid[0:shape[0], 0:shape[1]]
    w = rng.random((n_people, 4, 4))  # per person, 4 waves: amplitude, 2 frequencies, phase
    faces = np.sum(w[..., 0, None, None] * np.sin(
        w[..., 1, None, None] * rows / 2 + w[..., 2, None, None] * cols / 2
        + w[..., 3, None, None] * 6), axis=1) * 50 + 128
    half = n_pairs // 2
    first = rng.integers(0, n_people, n_pairs)
    second = np.r_[first[:half], (first[half:] + rng.integers(1, n_people, half)) % n_people]
    pairs = faces[np.stack([first, second], axis=1)]
    pairs += rng.normal(scale=5, size=pairs.shape)
    return pairs, np.r_[np.ones(half), -np.ones(half)]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=20
def test_pipeline_on_image_pairs(rng):
    pairs, y = face_pairs(rng)
    pipe = make_pipeline(LBP(), SquareRoot(), metricfit.WPCA(n_components=20),
                         metricfit.TSML(max_iter=20))
    pipe.fit(pairs, y)
    score = pipe.score(pairs, y)
    assert 0.6 <= score <= 1.0
    assert pipe.decision_function(pairs).shape == (60,)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("est", [LBP(), OCLBP()])
@pytest.mark.parametrize("shape", [(62, 47), (62,), (1, 1, 1, 62, 47)])
def test_wrong_number_of_dimensions(est, shape):
    with pytest.raises(ValueError, match=r"\(n_images, height, width\).*\(n_pairs, 2, height"):
        est.fit(np.zeros(shape))


def test_bad_images():
    with pytest.raises(ValueError, match="pair axis"):
        LBP().fit(np.zeros((3, 3, 20, 20)))
    for bad in (np.nan, np.inf):
        X = np.zeros((2, 20, 20))
        X[1, 3, 4] = bad
        with pytest.raises(ValueError, match="NaN|infinity"):
            LBP().fit(X)
    with pytest.raises(ValueError, match="empty"):
        LBP().fit(np.zeros((0, 20, 20)))
    with pytest.raises(ValueError, match="numeric"):
        LBP().fit(np.full((1, 20, 20), "a"))


def test_images_too_small():
    with pytest.raises(ValueError, match="smaller than the 10x10 block"):
        LBP().fit(np.zeros((2, 9, 20)))
    with pytest.raises(ValueError, match="smaller than the 18x18 block"):
        OCLBP().fit(np.zeros((2, 17, 40)))
    with pytest.raises(ValueError, match="too small for an LBP radius"):
        LBP(block_size=(3, 3), radius=3).fit(np.zeros((2, 5, 5)))


def test_transform_checks_image_shape(rng):
    est = LBP().fit(np.zeros((2, 30, 20)))
    with pytest.raises(ValueError, match=r"fitted on images of shape \(30, 20\)"):
        est.transform(np.zeros((2, 20, 30)))
    with pytest.raises(NotFittedError):
        OCLBP().transform(np.zeros((2, 30, 30)))


@pytest.mark.parametrize("est", [
    LBP(block_size=(0, 10)), LBP(block_size=10), LBP(block_size=(10, 10, 10)),
    LBP(block_size=(2.5, 3)), LBP(radius=0), LBP(n_points=17), OCLBP(overlap=1.0),
    OCLBP(configs=()), OCLBP(configs=((10, 10),)), OCLBP(configs=((10, 10, -1),)),
])
def test_bad_parameters(est):
    with pytest.raises(ValueError):
        est.fit(np.zeros((2, 30, 30)))


def test_transform_uses_the_fitted_windows(rng):
    X = rng.integers(0, 256, (2, 30, 30))
    est = LBP().fit(X)
    before = est.transform(X)
    est.set_params(n_points=16, block_size=(5, 5))  # not refitted: transform is unchanged
    assert_array_equal(est.transform(X), before)


def test_lbp_histograms_checks_out_and_sizes(rng):
    images = rng.random((2, 20, 20))
    with pytest.raises(ValueError, match="out must be a C-contiguous float64"):
        lbp_histograms(images, 8, 1, 10, 10, 10, 10, out=np.empty((2, 3 * 59)))
    with pytest.raises(ValueError, match="out must be a C-contiguous float64"):
        lbp_histograms(images, 8, 1, 10, 10, 10, 10, out=np.empty((2, 8 * 59)), offset=5 * 59)
    with pytest.raises(ValueError, match="block"):
        lbp_histograms(images, 8, 1, 21, 10, 10, 10)


def test_output_is_float64_for_any_input_dtype(rng):
    X = rng.integers(0, 256, (2, 20, 20))
    ref = LBP().fit_transform(X.astype(np.uint8))
    for dtype in (np.float32, np.int64, np.float64):
        F = LBP().fit_transform(X.astype(dtype))
        assert F.dtype == np.float64
        assert_array_equal(F, ref)


def test_block_histograms_rejects_bad_codes():
    with pytest.raises(ValueError, match="lie in"):
        block_histograms(np.full((10, 10), 59), 5, 5, 5, 5)
    with pytest.raises(ValueError, match="integer"):
        block_histograms(np.zeros((10, 10)), 5, 5, 5, 5)
    with pytest.raises(ValueError, match="block"):
        block_histograms(np.zeros((10, 10), int), 11, 5, 5, 5)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(3, 30), cols=st.integers(3, 30),
       levels=st.integers(1, 5))
def test_codes_equal_skimage_property(skimage_codes, seed, rows, cols, levels):
    image = np.random.default_rng(seed).integers(0, levels + 1, (rows, cols)).astype(float)
    for R in (1, 2):
        assert_array_equal(lbp_codes(image, 8, R), skimage_codes(image, 8, R))


# -- multi-scale LBP (issue 15: radius 1 and 2 histograms of the same cells) ----------------

def test_lbp_several_radii_concatenate_the_single_radius_histograms(rng):
    images = rng.integers(0, 256, size=(3, 62, 47))
    one, two = (LBP((5, 5), r).fit_transform(images) for r in (1, 2))
    both = LBP((5, 5), (1, 2)).fit(images)
    assert both.n_features_out_ == 2 * 12 * 9 * 59 == 12744
    assert [w[4] for w in both.windows_] == [1.0, 2.0]
    assert_array_equal(both.transform(images), np.hstack([one, two]))
    assert_array_equal(LBP((5, 5), [2]).fit_transform(images), two)


def test_lbp_several_radii_on_a_constant_image_by_hand():
    # 8x8 constant image, 4x4 cells, zeros outside the image: a pixel's code is the all-ones
    # pattern (nri_uniform bin 57 for P = 8) iff its whole circle lies inside the image, i.e.
    # rows and columns 1..6 for R = 1 (3 x 3 of each corner cell's 16 pixels) and 2..5 for
    # R = 2 (2 x 2 of 16; bilinear samples at +-sqrt(2) stay between inside pixels).
    h = LBP((4, 4), (1, 2)).fit_transform(np.full((1, 8, 8), 7.0)).reshape(2, 4, 59)
    assert uniform_table(8)[255] == 57
    assert_allclose(h[0, :, 57], 9 / 16)
    assert_allclose(h[1, :, 57], 4 / 16)
    assert_allclose(h.sum(axis=-1), 1.0)


@pytest.mark.parametrize("radius", [(), (1, 1), (1, -2), (1, 0), [[1, 2]], (1, "a"),
                                    (1, np.inf)])
def test_lbp_bad_radii(radius):
    with pytest.raises(ValueError, match="radius must be a positive number or a non-empty "
                                         "sequence of distinct positive numbers"):
        LBP((4, 4), radius).fit(np.zeros((1, 8, 8)))
