"""The point transformers as scikit-learn's: ``set_output`` (pandas, polars if installed),
``get_feature_names_out``, ``feature_names_in_``, ColumnTransformer, and
``parametrize_with_checks`` for the image transformers LBP and OCLBP through a row-to-image
adaptation (WPCA, WCCN and SquareRoot run it as they are: tests/test_whitening.py,
tests/test_features.py).

The adaptation: scikit-learn's checks feed points (n_samples, n_features); LBP and OCLBP take
images. ``RowImages`` (a test-only subclass, no new parameter) views each row of d values as
the 3 x 3d image ``tile(row, (3, 3))`` and records scikit-learn's ``n_features_in_`` /
``feature_names_in_`` for the rows; everything else (validation of values, parameters,
clone, fit/transform, dtype, set_output, pickling, ...) is LBP's and OCLBP's own code.
"""

import importlib.util

import numpy as np
import pytest
from scipy import sparse
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from metricfit import LDA, WCCN, WPCA, LengthNormalizer
from metricfit._validation import check_feature_names
from metricfit.features import HOG, LBP, OCLBP, DenseSIFT, Gabor, SquareRoot

pd = pytest.importorskip("pandas")
HAS_POLARS = importlib.util.find_spec("polars") is not None


def _rows_to_images(X, tile=3):
    """Rows (n, d) -> images (n, tile, tile d); the row-level messages scikit-learn's checks expect
    (the images' own checks are LBP's)."""
    if sparse.issparse(X):
        raise TypeError("sparse input is not supported: use X.toarray().")
    X = np.asarray(X)
    if X.dtype.kind == "O":
        X = X.astype(np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}. "
                         "Reshape your data.")
    if 0 in X.shape:
        what = "sample" if X.shape[0] == 0 else "feature"
        raise ValueError(f"Found array with 0 {what}(s) (shape={X.shape}) while a minimum of 1 "
                         "is required.")
    return np.tile(X[:, None, :], (1, tile, tile))


class _RowImages:
    _tile = 3

    def fit(self, X, y=None):
        self.__dict__.pop("feature_names_in_", None)
        check_feature_names(self, X, reset=True)
        return super().fit(_rows_to_images(X, self._tile))

    def transform(self, X):
        if hasattr(self, "n_features_in_"):
            check_feature_names(self, X, reset=False)
        return super().transform(_rows_to_images(X, self._tile))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        return tags


class RowLBP(_RowImages, LBP):
    pass


class RowOCLBP(_RowImages, OCLBP):
    pass


class RowHOG(_RowImages, HOG):
    pass


class RowDenseSIFT(_RowImages, DenseSIFT):
    _tile = 4  # a SIFT patch of 1-pixel bins needs 4 x 4 pixels


class RowGabor(_RowImages, Gabor):
    pass


@parametrize_with_checks([RowLBP(block_size=(3, 3)),
                          RowOCLBP(configs=((3, 3, 1),), overlap=0.5),
                          RowHOG(pixels_per_cell=(1, 1), cells_per_block=(1, 1)),
                          RowDenseSIFT(bin_sizes=(1,)),
                          RowGabor(n_scales=1, n_orientations=2, block_size=(3, 3))])
def test_image_transformers_pass_sklearn_checks(estimator, check):
    check(estimator)


def frame(n=30, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.random((n, d)) + 0.1, columns=[f"f{i}" for i in range(d)],
                        index=np.arange(100, 100 + n))


TRANSFORMERS = {
    "WPCA": (lambda: WPCA(n_components=3), ["wpca0", "wpca1", "wpca2"]),
    "WCCN": (lambda: WCCN(), ["wccn0", "wccn1", "wccn2", "wccn3", "wccn4"]),
    "SquareRoot": (lambda: SquareRoot(), ["f0", "f1", "f2", "f3", "f4"]),
    "LengthNormalizer": (lambda: LengthNormalizer(), ["f0", "f1", "f2", "f3", "f4"]),
    "LDA": (lambda: LDA(n_components=2), ["lda0", "lda1"]),
}


@parametrize_with_checks([LengthNormalizer(), LDA()])
def test_back_end_transformers_pass_sklearn_checks(estimator, check):
    check(estimator)
LABELS = np.arange(30) % 6


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_dataframe_in_names_out(name):
    factory, names_out = TRANSFORMERS[name]
    X = frame()
    est = factory().fit(X, LABELS)
    np.testing.assert_array_equal(est.feature_names_in_, X.columns)
    assert est.n_features_in_ == 5
    assert list(est.get_feature_names_out()) == names_out
    plain = est.transform(X)
    assert isinstance(plain, np.ndarray)
    out = est.set_output(transform="pandas").transform(X)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == names_out and list(out.index) == list(X.index)
    np.testing.assert_allclose(out.to_numpy(), plain)
    with pytest.raises(ValueError, match="feature names"):
        est.transform(X.rename(columns={"f0": "other"}))
    pairs = np.stack([X.to_numpy(), X.to_numpy()[::-1]], axis=1)  # (n, 2, d)
    assert isinstance(est.transform(pairs), np.ndarray)  # pairs have no DataFrame form
    refit = factory().fit(X.to_numpy(), LABELS)
    assert not hasattr(refit, "feature_names_in_")


@pytest.mark.skipif(not HAS_POLARS, reason="polars not installed")
@pytest.mark.parametrize("name", TRANSFORMERS)
def test_polars_output(name):
    import polars as pl

    factory, names_out = TRANSFORMERS[name]
    X = frame()
    est = factory().set_output(transform="polars").fit(X, LABELS)
    out = est.transform(X)
    assert isinstance(out, pl.DataFrame) and out.columns == names_out


def test_column_transformer_and_pipeline_with_pandas_output():
    X = frame()
    X["g"] = X["f0"] * 2 + 1
    ct = ColumnTransformer([("sqrt", SquareRoot(), ["f0", "f1"]),
                            ("wpca", WPCA(n_components=2), ["f2", "f3", "f4", "g"])])
    out = ct.set_output(transform="pandas").fit_transform(X)
    assert list(out.columns) == ["sqrt__f0", "sqrt__f1", "wpca__wpca0", "wpca__wpca1"]
    pipe = make_pipeline(SquareRoot(), WPCA(n_components=2)).set_output(transform="pandas")
    assert list(pipe.fit_transform(X).columns) == ["wpca0", "wpca1"]


@pytest.mark.parametrize("Extractor", [LBP, OCLBP, HOG, DenseSIFT, Gabor])
def test_image_features_names_and_pandas(Extractor):
    """Every image descriptor wraps its output the same way (one base class): a DataFrame of
    named columns for images under set_output, the same values; pairs stay an ndarray."""
    rng = np.random.default_rng(0)
    images = rng.random((4, 40, 36))
    est = Extractor().fit(images)
    names = est.get_feature_names_out()
    assert len(names) == est.n_features_out_ and names[0] == f"{Extractor.__name__.lower()}0"
    plain = est.transform(images)
    out = est.set_output(transform="pandas").transform(images)
    assert isinstance(out, pd.DataFrame) and out.shape == (4, est.n_features_out_)
    assert list(out.columns) == list(names)
    np.testing.assert_array_equal(out.to_numpy(), plain)
    assert isinstance(est.fit_transform(images), pd.DataFrame)
    pairs = est.transform(images.reshape(2, 2, 40, 36))
    assert isinstance(pairs, np.ndarray) and pairs.shape == (2, 2, est.n_features_out_)
    if HAS_POLARS:
        import polars as pl

        assert isinstance(est.set_output(transform="polars").transform(images), pl.DataFrame)
    assert isinstance(est.set_output(transform="default").transform(images), np.ndarray)
