"""The grid at estimator level: Siamese(loss, mapping, solver) and its presets; every cell one
line (convnet and index pairs included); presets equal to the general learner; names checked
with the choices listed; the bad-input set; fit at most 60 lines for every learner."""

import inspect
import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from test_learners import make_identity_pairs

from metricfit import CSML, DDML, LDML, TSML, CosineSimilarity, MkNN, Siamese, SiameseCNN
from metricfit.mappings import ConvNet
from metricfit.pairs.tags import score_kind


@pytest.fixture(scope="module")
def data():
    return make_identity_pairs(n_pairs=200, d=9, seed=4)


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


@pytest.mark.parametrize("Preset, loss, params", [
    (TSML, "triangular", {}), (CSML, "cosine", {}), (DDML, "ddml", {"T": 3.0, "tau": 0.5})])
@pytest.mark.parametrize("mapping", ["linear", "tanh"])
def test_presets_are_the_general_learner(Preset, loss, params, mapping, data):
    pairs, y = data
    kw = dict(mapping=mapping, max_iter=30, random_state=0)
    preset = Preset(**kw, **params).fit(pairs, y)
    # the preset's own default lambda (CSML's is 0.1, the grid's 1e-3)
    general = Siamese(loss=loss, loss_params=params or None, lam=preset.lam, **kw).fit(pairs, y)
    np.testing.assert_array_equal(preset.transform(pairs[:, 0]), general.transform(pairs[:, 0]))
    np.testing.assert_array_equal(preset.pair_score(pairs), general.pair_score(pairs))
    assert preset.threshold_ == general.threshold_


@pytest.mark.parametrize("loss", ["contrastive", "square_square", "square_exponential",
                                  "signature_cosine", "triangular", "cosine", "ddml"])
@pytest.mark.parametrize("mapping", ["linear", "tanh", "mlp"])
def test_every_loss_on_every_mapping_learns(loss, mapping, data):
    pairs, y = data
    est = Siamese(loss=loss, mapping=mapping, n_components=4, max_iter=60,
                  random_state=0).fit(pairs, y)
    assert est.transform(pairs[:, 0]).shape == (200, 4)
    assert est.score(pairs, y) > 0.6  # chance is 0.5


def test_one_line_cells(data):
    pairs, y = data
    images = np.random.default_rng(0).normal(size=(60, 2, 6, 6))
    images[:30, 1] = images[:30, 0] + 0.1 * images[:30, 1]
    labels = np.r_[np.ones(30), -np.ones(30)]
    cnn = SiameseCNN(loss="triangular", n_components=3, n_maps=(2, 3, 4), max_epochs=2,
                     random_state=0).fit(images, labels)
    assert score_kind(cnn) == "cosine" and np.all(np.abs(cnn.pair_score(images)) <= 1 + 1e-6)
    drlim = Siamese(loss="contrastive", mapping="mlp", solver="sgd", max_iter=300,
                    validation_interval=50, random_state=0).fit(pairs, y)
    assert drlim.params_.shape == (drlim.mapping_.n_params,) and drlim.curves_["validation"]
    flat = images.reshape(60, 2, 36)
    ddml = DDML(mapping=ConvNet((6, 6), 3, (2, 3, 4)), max_iter=20, random_state=0)
    assert ddml.fit(flat, labels).transform(flat[:, 0]).shape == (60, 3)
    points = pairs.reshape(-1, 9)
    index = np.arange(400).reshape(200, 2)
    sgd = TSML(solver="sgd", preprocessor=points, max_iter=200, random_state=0).fit(index, y)
    np.testing.assert_allclose(sgd.pair_score(index), sgd.pair_score(pairs), rtol=1e-10)


def test_unknown_names_list_the_choices(data):
    pairs, y = data
    with pytest.raises(ValueError, match="unknown loss 'hinge'; choose from triangular, "
                                         "cosine, ddml, contrastive, square_square"):
        Siamese(loss="hinge").fit(pairs, y)
    with pytest.raises(ValueError, match=r"'mapping' parameter.*'convnet'"):
        Siamese(mapping="resnet").fit(pairs, y)
    with pytest.raises(ValueError, match="'loss' parameter of SiameseCNN.*'square_square'"):
        SiameseCNN(loss="hinge").fit(np.zeros((4, 2, 8, 8)), [1, -1, 1, -1])
    with pytest.raises(ValueError, match="takes no parameter.*T; it takes: margin, energy"):
        Siamese(loss="contrastive", loss_params={"T": 1.0}).fit(pairs, y)
    with pytest.raises(ValueError, match="takes 64 features; the data have 9"):
        Siamese(mapping=ConvNet((8, 8), 3)).fit(pairs, y)
    with pytest.raises(ValueError, match="too small"):
        Siamese(mapping="convnet").fit(pairs, y)  # 9 features: 3x3 images
    with pytest.raises(ValueError, match="needs square images"):
        Siamese(mapping="convnet").fit(pairs[..., :8], y)


@pytest.mark.parametrize("est", [Siamese(loss="contrastive", mapping="tanh", max_iter=20),
                                 Siamese(loss="square_exponential", max_iter=20)],
                         ids=["contrastive-tanh", "square_exponential-linear"])
def test_bad_input_raises_value_error(est, data):
    pairs, y = data
    n = len(y)
    nan_pairs, inf_pairs, zero_pairs = pairs.copy(), pairs.copy(), pairs.copy()
    nan_pairs[3, 1, 2] = np.nan
    inf_pairs[0, 0, 0] = np.inf
    zero_pairs[5, 0] = 0.0
    cases = [(nan_pairs, y, "NaN"), (inf_pairs, y, "infinity"), (pairs[:, 0], y, "3-D array"),
             (np.concatenate([pairs, pairs[:, :1]], axis=1), y, "pair axis"),
             (pairs, y * 2, "labels must be in"), (pairs, np.ones(n), "single class"),
             (pairs, y[:-1], f"{n} pairs")]
    for X, labels, message in cases:
        with pytest.raises(ValueError, match=message):
            clone(est).fit(X, labels)
    assert np.isfinite(clone(est).fit(zero_pairs, y).pair_score(zero_pairs)).all()  # distances
    fitted = clone(est).fit(pairs, y)
    with pytest.raises(ValueError, match="features"):
        fitted.transform(pairs[:, 0, :5])
    with pytest.raises(ValueError, match="features"):
        fitted.pair_score(pairs[..., :5])


@pytest.mark.parametrize("Learner", [Siamese, TSML, CSML, DDML, LDML, SiameseCNN, MkNN,
                                     CosineSimilarity])
def test_fit_is_at_most_60_lines(Learner):
    lines = inspect.getsource(Learner.fit).splitlines()
    assert len(lines) <= 60, f"{Learner.__name__}.fit has {len(lines)} lines"


def test_learner_modules_do_not_branch_on_the_mapping_kind():
    import metricfit.learners._siamese as siamese
    source = inspect.getsource(siamese)
    assert not re.search(r"mapping\s*==|mapping\s*!=|isinstance\([^)]*Linear", source)
