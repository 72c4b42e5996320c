"""SiameseCNN at estimator level: the pair API, learning, reproducibility, input checks,
save/load without pickle, and the AT&T protocol's bookkeeping on the real data."""

import copy
import importlib.util
import json
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import REPO_ROOT, data_dir
from sklearn.base import clone

from metricfit.learners.siamese_cnn import SiameseCNN
from metricfit.metrics import max_decision_accuracy
from metricfit.pairs.held_out import identity_held_out_split

TINY = dict(n_components=4, n_maps=(3, 6, 8), batch_size=8, max_epochs=3, random_state=0)


def make_image_pairs(n_pairs=80, seed=0, n_subjects=4, shape=(12, 10)):
    """Pairs of noisy copies of ``n_subjects`` random prototypes, each image with its own
    random brightness offset (a nuisance the raw pixel distance is blind to); half genuine."""
    rng = np.random.default_rng(seed)
    protos = np.random.default_rng(99).normal(size=(n_subjects,) + shape)
    first = rng.integers(n_subjects, size=n_pairs)
    other = (first + rng.integers(1, n_subjects, size=n_pairs)) % n_subjects
    y = np.where(np.arange(n_pairs) % 2 == 0, 1, -1)
    second = np.where(y == 1, first, other)
    pairs = np.stack([protos[first], protos[second]], axis=1)
    brightness = 2.0 * rng.normal(size=(n_pairs, 2, 1, 1))
    return pairs + brightness + 0.6 * rng.normal(size=pairs.shape), y


@pytest.fixture(scope="module")
def data():
    return make_image_pairs()


@pytest.fixture(scope="module")
def fitted(data):
    return SiameseCNN(**TINY).fit(*data)


def test_pair_api(fitted, data):
    pairs, y = data
    E = fitted.pair_distance(pairs)
    assert E.shape == (80,) and (E >= 0).all()
    np.testing.assert_array_equal(fitted.pair_score(pairs), -E)
    np.testing.assert_allclose(fitted.decision_function(pairs), -E - fitted.threshold_)
    assert set(np.unique(fitted.predict(pairs))) <= {-1, 1}
    assert fitted.score(pairs, y) == np.mean(fitted.predict(pairs) == y)
    assert fitted.transform(pairs[:, 0]).shape == (80, 4)
    assert fitted.transform(pairs).shape == (80, 2, 4)
    Z = fitted.transform(pairs)
    np.testing.assert_allclose(np.abs(Z[:, 0] - Z[:, 1]).sum(axis=1), E, rtol=1e-6)
    est = clone(fitted).fit(pairs, y).calibrate_threshold(pairs, y, strategy="eer")
    assert est.threshold_ != fitted.threshold_ or est.threshold_ < 0


def test_learns_to_verify_unseen_images():
    """Five seeds of a short training (one seed alone is a noisy measurement: the accuracy
    of this tiny network after 10 epochs spreads from 0.85 to 0.99 over the seeds, and
    moves by a few points when the kernels' sums round differently)."""
    pairs, y = make_image_pairs(200, seed=1)
    test_pairs, test_y = make_image_pairs(200, seed=2)
    start = max_decision_accuracy(test_y, -np.abs(test_pairs[:, 0] - test_pairs[:, 1]).sum(
        axis=(1, 2)))[0]  # the L1 distance of the raw pixels
    accuracies = []
    for seed in range(5):
        est = SiameseCNN(**dict(TINY, max_epochs=10, n_iter_no_change=None,
                                random_state=seed)).fit(pairs, y)
        accuracies.append(max_decision_accuracy(test_y, est.pair_score(test_pairs))[0])
        assert est.curves_["validation"][-1] > est.curves_["validation"][0]
    # measured: 0.665; 0.925, 0.845, 0.94, 0.99, 0.90 (median 0.925; the same to 0.03 with
    # NumPy 1.24 / numba 0.59)
    assert start < 0.7 and np.median(accuracies) >= 0.85 and min(accuracies) >= 0.75


@pytest.mark.parametrize("loss, energy", [("contrastive", "l2"), ("square_exponential", "l2")])
def test_other_losses_and_energies_fit(data, loss, energy):
    est = SiameseCNN(**dict(TINY, loss=loss, energy=energy, margin=2.0)).fit(*data)
    assert est.energy_bound_ == pytest.approx(2 * np.sqrt(4))
    Z = est.transform(data[0])
    np.testing.assert_allclose(est.pair_distance(data[0]),
                               np.linalg.norm(Z[:, 0] - Z[:, 1], axis=1), rtol=1e-5)


def test_fit_does_not_depend_on_the_thread_count(data, fitted):
    one = SiameseCNN(**dict(TINY, n_jobs=1)).fit(*data)
    two = SiameseCNN(**dict(TINY, n_jobs=2)).fit(*data)
    np.testing.assert_array_equal(one.params_, two.params_)
    np.testing.assert_array_equal(one.params_, fitted.params_)
    np.testing.assert_array_equal(one.transform(data[0]), two.transform(data[0]))


def test_reproducible_bit_for_bit(data, fitted):
    again = SiameseCNN(**TINY).fit(*data)
    other = SiameseCNN(**dict(TINY, random_state=1)).fit(*data)
    np.testing.assert_array_equal(again.params_, fitted.params_)
    assert again.threshold_ == fitted.threshold_ and again.curves_ == fitted.curves_
    assert not np.array_equal(other.params_, fitted.params_)


def test_refit_on_another_image_size(data):
    est = SiameseCNN(**dict(TINY, max_epochs=1)).fit(*data)
    est.fit(data[0][:, :, :11, :9], data[1])
    assert est.input_shape_ == (11, 9) and est.transform(data[0][:3, 0, :11, :9]).shape == (3, 4)


def test_clone_get_params_and_float64(data):
    est = SiameseCNN(**TINY)
    assert clone(est).get_params() == est.get_params()
    est64 = SiameseCNN(**dict(TINY, dtype="float64")).fit(*data)
    assert est64.params_.dtype == np.float64
    assert est64.transform(data[0][:, 0]).dtype == np.float64


def test_save_load_round_trip(fitted, data, tmp_path):
    path = tmp_path / "model.npz"
    fitted.save(path)
    with np.load(path, allow_pickle=False) as f:  # arrays and strings only
        assert all(f[k].dtype != object for k in f.files)
    loaded = SiameseCNN.load(path)
    assert loaded.get_params() == fitted.get_params()
    np.testing.assert_array_equal(loaded.pair_score(data[0]), fitted.pair_score(data[0]))
    np.testing.assert_array_equal(loaded.predict(data[0]), fitted.predict(data[0]))
    assert loaded.curves_ == fitted.curves_ and loaded.n_iter_ == fitted.n_iter_


def test_save_load_with_the_training_options(data, tmp_path):
    est = SiameseCNN(**dict(TINY, max_epochs=1, augment={"rotation": 5.0}, weight_decay=1e-3,
                            learning_rate_schedule="step", callback=lambda *a: None))
    est.fit(*data).save(tmp_path / "m.npz")
    back = SiameseCNN.load(tmp_path / "m.npz")
    assert back.get_params()["augment"] == {"rotation": 5.0}
    assert (back.weight_decay, back.learning_rate_schedule, back.callback) == (1e-3, "step", None)
    np.testing.assert_array_equal(back.transform(data[0]), est.transform(data[0]))


def test_save_load_keeps_nested_parameters(data, tmp_path):
    est = SiameseCNN(**dict(TINY, max_epochs=1, kernel_sizes=((3, 2), 2))).fit(*data)
    est.save(tmp_path / "m.npz")
    loaded = SiameseCNN.load(tmp_path / "m.npz")
    assert loaded.get_params() == est.get_params()
    assert loaded.network_.spec == est.network_.spec


DATA = REPO_ROOT / "tests" / "data"


def test_loads_a_file_of_format_version_1():
    """A model saved by metricfit 0.1.0 in format version 1 (tests/data; made by
    make_siamese_cnn_v1.py, float64) loads and scores its pairs as it did then."""
    import json

    loaded = SiameseCNN.load(DATA / "siamese_cnn_v1.npz")
    expected = json.loads((DATA / "siamese_cnn_v1_scores.json").read_text())
    assert loaded.get_params() == SiameseCNN(**dict(TINY, max_epochs=1, dtype="float64")
                                             ).get_params()
    assert loaded.threshold_ == expected["threshold"]
    pairs, _ = make_image_pairs(40, seed=7)
    np.testing.assert_allclose(loaded.pair_score(pairs), expected["pair_score"], rtol=1e-10)


def _rewrite(src, dst, **changes):
    with np.load(src, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    arrays.update({k: np.array(v) for k, v in changes.items() if v is not None})
    for k in [k for k, v in changes.items() if v is None]:
        del arrays[k]
    np.savez(dst, **arrays)
    return dst


@pytest.mark.parametrize("changes, match", [
    ({"format": "metricfit.SiameseCNN/2"}, "format version 2 .*upgrade metricfit"),
    ({"format": "metricfit.SiameseCNN/x"}, "unknown .*format version 'x'"),
    ({"format": "metricfit.SiameseCNN/0"}, "unknown .*format version '0'"),
    ({"format": "metricfit.WPCA/1"}, "not a metricfit.SiameseCNN file"),
    ({"format": None}, "not a metricfit.SiameseCNN file"),
    ({"weights": None}, "lacks the entries \\['weights'\\]"),
])
def test_load_refuses_other_and_newer_formats(tmp_path, changes, match):
    bad = _rewrite(DATA / "siamese_cnn_v1.npz", tmp_path / "bad.npz", **changes)
    with pytest.raises(ValueError, match=match):
        SiameseCNN.load(bad)


def test_save_writes_the_current_format_version(fitted, tmp_path):
    from metricfit import __version__
    from metricfit.learners.siamese_cnn import SAVE_VERSION

    fitted.save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz", allow_pickle=False) as f:
        assert str(f["format"]) == f"metricfit.SiameseCNN/{SAVE_VERSION}"
        assert str(f["metricfit_version"]) == __version__


def test_inference_in_batches(fitted, data):
    small = clone(fitted).set_params(inference_batch_size=3)
    small.__dict__.update({k: v for k, v in fitted.__dict__.items() if k.endswith("_")})
    np.testing.assert_allclose(small.transform(data[0]), fitted.transform(data[0]), rtol=1e-5,
                               atol=1e-7)


def test_verbose_and_callback_report_every_epoch(data, capsys):
    seen = []
    est = SiameseCNN(**dict(TINY, max_epochs=2, verbose=1, n_iter_no_change=None,
                            callback=lambda params, n_iter: seen.append((params, n_iter))))
    est.fit(*data)
    out = capsys.readouterr().out
    assert out.count("[SiameseCNN] iteration") == 2  # the shared solver's report
    assert [n for _, n in seen] == [9, 18]  # 72 training pairs: 9 batches of 8 per epoch
    assert seen[0][0].dtype == np.float32 and seen[0][0].shape == est.params_.shape


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_diverging_fit_warns():
    from sklearn.exceptions import ConvergenceWarning
    pairs, y = make_image_pairs(40)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        SiameseCNN(**dict(TINY, learning_rate=1e308)).fit(pairs, y)  # steps overflow


# -- training options: augmentation, weight decay, schedule, identity split ------------------


def test_default_training_options_are_documented_values():
    params = SiameseCNN().get_params()
    assert (params["augment"], params["weight_decay"], params["learning_rate_schedule"],
            params["max_epochs"], params["learning_rate"], params["momentum"],
            params["n_iter_no_change"], params["batch_size"]) == (
        False, 0.0, "constant", 30, 1e-2, 0.9, 8, 32)


def test_augmentation_is_reproducible_and_seeded(data):
    pairs, y = data
    opts = dict(TINY, augment={"rotation": 15.0, "flip": 0.5}, n_iter_no_change=None)
    a = SiameseCNN(**opts).fit(pairs, y)
    b = SiameseCNN(**opts).fit(pairs, y)
    np.testing.assert_array_equal(a.params_, b.params_)
    c = SiameseCNN(**dict(opts, random_state=1)).fit(pairs, y)
    plain = SiameseCNN(**dict(TINY, n_iter_no_change=None)).fit(pairs, y)
    assert not np.array_equal(a.params_, c.params_)
    assert not np.array_equal(a.params_, plain.params_)


def test_augmentation_changes_the_training_batches_only():
    """The augmented objective's mini-batch sees warped images; its full objective does not."""
    from metricfit.cnn import ConvNetwork, SiameseObjective, network_spec
    from metricfit.cnn.augment import augment_images
    pairs, y = make_image_pairs(8)
    net = ConvNetwork(network_spec((12, 10), n_maps=(2, 3, 4), n_outputs=3))
    theta = net.init(0)
    plain = SiameseObjective(net, pairs, y)
    seen = []

    def warp(images):
        out = augment_images(images, 0)
        seen.append(out)
        return out

    warped = SiameseObjective(net, pairs, y, augment=warp)
    rows = np.arange(8)
    assert warped.batch(theta, rows)[0] != plain.batch(theta, rows)[0]
    assert len(seen) == 1 and seen[0].shape == (16, 12, 10)
    assert warped(theta)[0] == plain(theta)[0] and len(seen) == 1


def test_weight_decay_gradient_matches_finite_differences():
    from metricfit.cnn import ConvNetwork, SiameseObjective, TrainingObjective, network_spec
    pairs, y = make_image_pairs(6)
    net = ConvNetwork(network_spec((12, 10), n_maps=(2, 3, 4), n_outputs=3))
    theta = net.init(0)
    mask = net.decay_mask()
    assert mask.sum() == sum(np.prod(v) for k, v in net.shapes.items() if k.endswith(".W"))
    inner = SiameseObjective(net, pairs, y)
    objective = TrainingObjective(inner, mask, weight_decay=0.3)
    J, G = objective(theta)
    w = np.where(mask, theta, 0)
    assert J == pytest.approx(inner(theta)[0] + 0.15 * w @ w, rel=1e-12)
    rng = np.random.default_rng(0)
    rows = np.r_[rng.choice(np.flatnonzero(mask), 15, replace=False),
                 rng.choice(np.flatnonzero(~mask), 5, replace=False)]
    eps, numeric = 1e-6, []
    for r in rows:
        up, down = theta.copy(), theta.copy()
        up[r] += eps
        down[r] -= eps
        numeric.append((objective(up)[0] - objective(down)[0]) / (2 * eps))
    np.testing.assert_allclose(G[rows], numeric, rtol=1e-6, atol=1e-8)
    # the decay term alone: lambda * w on the weights, 0 on the biases and coefficients
    np.testing.assert_allclose(G - inner(theta)[1], 0.3 * w, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("schedule, expected", [
    ("constant", [1, 1, 1, 1, 1]),
    ("step", [1, 1, 0.1, 0.01, 0.01]),  # milestones at 50 % and 75 % of 8 steps: 4, 6
    ("cosine", [1, (1 + np.cos(np.pi / 4)) / 2, 0.5, (1 + np.cos(3 * np.pi / 4)) / 2, 0]),
    ("inverse", [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5]),  # 2 steps per epoch: 1 / (1 + t / 2)
])
def test_learning_rate_schedules_give_their_documented_values(schedule, expected):
    from metricfit.cnn import learning_rate_factor
    got = [learning_rate_factor(schedule, t, 2, 8) for t in (0, 2, 4, 6, 8)]
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=1e-15)


def test_schedule_scales_each_batch_gradient():
    from metricfit.cnn import ConvNetwork, SiameseObjective, TrainingObjective, network_spec
    pairs, y = make_image_pairs(4)
    net = ConvNetwork(network_spec((12, 10), n_maps=(2, 3, 4), n_outputs=3))
    theta = net.init(0)
    inner = SiameseObjective(net, pairs, y)
    objective = TrainingObjective(inner, net.decay_mask(), schedule="inverse",
                                  steps_per_epoch=1, max_steps=10)
    J0, G0 = inner.batch(theta, np.arange(4))
    for factor in (1, 1 / 2, 1 / 3):
        J, G = objective.batch(theta, np.arange(4))
        assert J == J0  # the cost itself is not scaled
        np.testing.assert_allclose(G, factor * G0, rtol=1e-6)


def test_schedule_changes_the_fit(data):
    pairs, y = data
    opts = dict(TINY, n_iter_no_change=None)
    a = SiameseCNN(**opts).fit(pairs, y)
    b = SiameseCNN(**dict(opts, learning_rate_schedule="cosine", weight_decay=1e-3)).fit(pairs, y)
    assert not np.array_equal(a.params_, b.params_)


def _subject_pairs(n_subjects=8, per_subject=4, seed=0):
    """Pairs of images of ``n_subjects`` prototypes with the identities of both images."""
    rng = np.random.default_rng(seed)
    protos = rng.normal(size=(n_subjects, 12, 10))
    ids = np.repeat(np.arange(n_subjects), per_subject)
    i, j = np.triu_indices(ids.size, k=1)
    images = protos[ids] + 0.5 * rng.normal(size=(ids.size, 12, 10))
    pairs = np.stack([images[i], images[j]], axis=1)
    return pairs, np.where(ids[i] == ids[j], 1, -1), np.stack([ids[i], ids[j]], axis=1)


def test_groups_hold_out_identities_for_early_stopping():
    pairs, y, groups = _subject_pairs()
    est = SiameseCNN(**dict(TINY, validation_fraction=0.25)).fit(pairs, y, groups=groups)
    train, validation = identity_held_out_split(groups, y, 0.25, est.random_state)
    held = np.unique(groups[validation])
    assert held.size == 2  # 25 % of 8 identities
    assert not np.isin(groups[train], held).any()  # no held-out identity trains
    assert (validation | train).sum() < len(y)  # mixed pairs are left out
    best = max_decision_accuracy(y[validation], est.pair_score(pairs[validation]))[0]
    assert best == pytest.approx(max(est.curves_["validation"]), abs=1e-6)
    assert est.n_iter_ % -(-train.sum() // 8) == 0  # whole epochs of the training pairs


@pytest.mark.parametrize("params, fit_kw, match", [
    (dict(augment={"spin": 3}), {}, "augment may set"),
    (dict(augment={"rotation": 400.0}), {}, "rotation"),
    (dict(augment="yes"), {}, "augment"),
    (dict(weight_decay=-1.0), {}, "weight_decay"),
    (dict(learning_rate_schedule="linear"), {}, "learning_rate_schedule"),
    (dict(callback=3), {}, "callback"),
    (dict(early_stopping="no"), {}, "early_stopping"),
    ({}, dict(groups=np.zeros((3, 2))), r"groups must have shape \(n_pairs, 2\)"),
    (dict(validation_fraction=0.9), "groups", "too few"),
])
def test_training_options_reject_bad_values(params, fit_kw, match):
    pairs, y, groups = _subject_pairs(n_subjects=4)
    if fit_kw == "groups":
        fit_kw = dict(groups=groups)
    with pytest.raises(ValueError, match=match):
        SiameseCNN(**dict(TINY, **params)).fit(pairs, y, **fit_kw)


# -- bad input ----------------------------------------------------------------------------


def _bad(pairs, y, values):
    for i, v in values:
        pairs = pairs.copy()
        pairs.flat[i] = v
    return pairs, y


@pytest.mark.parametrize("make, match", [
    (lambda p, y: _bad(p, y, [(5, np.nan)]), "NaN"),
    (lambda p, y: _bad(p, y, [(7, np.inf)]), "infinity"),
    (lambda p, y: (p[:, 0], y), r"\(n_pairs, 2, height, width\)"),
    (lambda p, y: (p[:, :1], y), "pair axis"),
    (lambda p, y: (p, np.where(y == 1, 2, -1)), "pair labels"),
    (lambda p, y: (p, np.ones_like(y)), "single class"),
    (lambda p, y: (p, y[:-1]), "labels for"),
])
def test_fit_rejects_bad_input(data, make, match):
    pairs, y = make(*data)
    with pytest.raises(ValueError, match=match):
        SiameseCNN(**TINY).fit(pairs, y)


@pytest.mark.parametrize("param, value", [("loss", "hinge"), ("learning_rate", 0.0),
                                          ("batch_size", 1), ("dtype", "float16"),
                                          ("n_jobs", 0), ("n_jobs", 1.5)])
def test_fit_rejects_bad_parameters(data, param, value):
    with pytest.raises(ValueError, match=param):
        SiameseCNN(**dict(TINY, **{param: value})).fit(*data)


def test_transform_rejects_other_image_sizes_and_ndim(fitted):
    with pytest.raises(ValueError, match="fitted on 12x10 images"):
        fitted.transform(np.zeros((2, 12, 11)))
    with pytest.raises(ValueError, match="fitted on 12x10 images"):
        fitted.pair_distance(np.zeros((2, 2, 11, 10)))
    with pytest.raises(ValueError, match="must have shape"):
        fitted.transform(np.zeros((12, 10)))
    with pytest.raises(ValueError, match="NaN"):
        fitted.transform(np.full((1, 12, 10), np.nan))


# -- the AT&T protocol (real data) ---------------------------------------------------------


@pytest.fixture(scope="module")
def att():
    if not (data_dir() / "att_faces" / "att_faces.npz").is_file():
        pytest.skip(f"AT&T data not found under {data_dir()} (set METRICFIT_DATA)")
    path = REPO_ROOT / "benchmarks" / "att_siamese_cnn.py"
    spec = importlib.util.spec_from_file_location("att_siamese_cnn", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("att_siamese_cnn", module)
    spec.loader.exec_module(module)
    return module


def test_att_protocol_counts(att):
    images, labels, index = att.load_att_56x46(data_dir())
    assert images.shape == (400, 56, 46) and images.dtype == np.float32
    raw = att.load_att_faces(data_dir()).images
    assert images[0, 0, 0] == raw[0, :2, :2].mean()
    test = np.isin(labels, att.test_subjects(7))
    assert np.unique(labels[test]).tolist() == [35, 36, 37, 38, 39]  # subjects 36-40
    pairs, y = att.training_pairs(labels[~test], 0)
    assert (y == 1).sum() == (y == -1).sum() == 35 * 45
    assert (labels[~test][pairs[y == 1, 0]] == labels[~test][pairs[y == 1, 1]]).all()
    assert (labels[~test][pairs[y == -1, 0]] != labels[~test][pairs[y == -1, 1]]).all()
    Z = np.random.default_rng(0).normal(size=(50, 6))
    result = att.evaluate(Z, labels[test], index[test])
    assert (result["n_genuine_claims"], result["n_impostor_claims"]) == (25, 200)
    assert (result["n_genuine_pairs"], result["n_impostor_pairs"]) == (225, 1000)
    perfect = att.evaluate(np.eye(5)[labels[test] - 35] * 5 + 0.01 * Z[:, :5], labels[test],
                           index[test])
    assert perfect["gaussian"] == perfect["min_energy"] == perfect["pair_energy"] == [0, 0, 0]
    pixels = att.pixel_baseline(images[test], labels[test], index[test])
    assert set(pixels) == {"min_energy", "pair_energy"}
    assert all(0 <= v <= 100 for v in pixels["min_energy"] + pixels["pair_energy"])


def test_att_ensemble_puts_the_members_embeddings_side_by_side(att, tmp_path):
    """Two copies of one model: the L2 energies scale by sqrt(2), so the min-energy and pair
    rules give the single model's rows; the validation maxDA is that of its energy."""
    images, labels, index = att.load_att_56x46(data_dir())
    pairs, y = att.image_pairs(images[:40], labels[:40], 0)
    est = SiameseCNN(n_components=3, n_maps=(2, 3, 4), max_epochs=1, batch_size=16,
                     energy="l2", early_stopping=False, random_state=0).fit(pairs[::20], y[::20])
    for member in ("a", "b"):
        (tmp_path / member).mkdir()
        est.save(tmp_path / member / "att_split2.npz")
    args = SimpleNamespace(ensemble=[str(tmp_path / m) for m in "ab"], seed=0,
                           shrinkage=0.5)
    result = att.ensemble(2, images, labels, index, args)
    test = np.isin(labels, att.test_subjects(2))
    single = att.evaluate(est.transform(images[test]).astype(np.float64), labels[test],
                          index[test], kind="l2")
    assert result["min_energy"] == single["min_energy"]
    assert result["pair_energy"] == single["pair_energy"]
    held_out = np.isin(labels, att.validation_subjects(2, 0))
    rows, s = att.training_pairs(labels[held_out], 0)
    Z = est.transform(images[held_out]).astype(np.float64)
    scores = -np.linalg.norm(Z[rows[:, 0]] - Z[rows[:, 1]], axis=1)
    assert result["validation"] == pytest.approx(max_decision_accuracy(s, scores)[0])
    assert (att.training_pairs(labels[:40], 0, impostors=3)[1] == -1).sum() == 3 * 4 * 45


def test_att_lfw_pairs_are_the_drawn_people_resized_to_56x46(att):
    """``--lfw-pairs``: the identity-balanced pairs of LFW people with two or more images,
    each crop resized 62x47 -> 56x46 (linear) as a plain per-image zoom gives it."""
    from scipy import ndimage

    from metricfit.datasets import load_lfw
    from metricfit.pairs import sample_pairs

    if not (data_dir() / "lfw" / "lfw_deepfunneled_gray_62x47.npz").is_file():
        pytest.skip(f"LFW data not found under {data_dir()} (set METRICFIT_DATA)")
    pairs, y = att.lfw_pairs_56x46(6, 3, data_dir())
    assert pairs.shape == (12, 2, 56, 46) and pairs.dtype == np.float32
    assert (y == 1).sum() == (y == -1).sum() == 6
    data = load_lfw(data_dir())
    keep = np.bincount(data.person)[data.person] >= 2
    images, people = data.images[keep], data.person[keep]
    index, expected_y = sample_pairs(people, 6, 6, random_state=3, balance="identity")
    assert (y == expected_y).all()
    assert ((people[index[:, 0]] == people[index[:, 1]]) == (y == 1)).all()
    for (a, b), pair in zip(index, pairs, strict=True):
        for row, image in ((a, pair[0]), (b, pair[1])):
            small = ndimage.zoom(images[row].astype(np.float64), (56 / 62, 46 / 47), order=1,
                                 mode="nearest", grid_mode=True)
            np.testing.assert_allclose(image, small, rtol=1e-6, atol=1e-4)


def test_att_refit_needs_validation_subjects_and_the_last_weights(att):
    for argv in (["--refit"], ["--refit", "--validation", "subjects"],
                 ["--refit", "--weights", "last"]):
        with pytest.raises(SystemExit) as exit_:
            att.main(argv)
        assert exit_.value.code == 2


def test_tiny_network_lowers_the_loss_on_digits_pairs():
    """A few momentum-SGD steps on 8x8 digits pairs (the small-kernel sizing) lower the
    siamese objective on those pairs; and the estimator runs on them end to end."""
    from sklearn.datasets import load_digits

    from metricfit.cnn import ConvNetwork, SiameseObjective, network_spec
    from metricfit.optim import minimize
    from metricfit.pairs import sample_pairs

    digits = load_digits()
    images, labels = digits.images[:400] / 16.0, digits.target[:400]
    index, s = sample_pairs(labels, 150, 150, random_state=0)
    pairs = np.stack([images[index[:, 0]], images[index[:, 1]]], axis=1)
    net = ConvNetwork(network_spec((8, 8), n_maps=(4, 8, 16), n_outputs=8))
    assert net.spec.c1_kernel == (3, 3)
    objective = SiameseObjective(net, pairs, s, Q=16.0)
    theta0 = net.init(0)
    result = minimize(objective, theta0, solver="sgd", max_iter=40, learning_rate=1e-2,
                      momentum=0.9, batch_size=16, random_state=0, n_iter_no_change=None)
    assert result.nit == 40
    start, end = objective(theta0)[0], objective(result.x)[0]
    assert end < 0.8 * start  # measured: 12.9 -> 7.2
    est = SiameseCNN(n_components=8, n_maps=(4, 8, 16), batch_size=16, max_epochs=2,
                     random_state=0).fit(pairs, s)
    assert est.n_iter_ == 2 * 17 and est.transform(images[:5]).shape == (5, 8)


def test_validation_data_drives_early_stopping(data):
    pairs, y = data
    val_pairs, val_y = make_image_pairs(40, seed=5)
    est = SiameseCNN(**TINY).fit(pairs, y, validation_data=(val_pairs, val_y))
    best = max_decision_accuracy(val_y, est.pair_score(val_pairs))[0]
    assert best == max(est.curves_["validation"])
    assert est.n_iter_ == 3 * 10  # every one of the 80 pairs trains: 10 batches of 8
    with pytest.raises(ValueError, match="fitted on 12x10"):
        SiameseCNN(**TINY).fit(pairs, y, validation_data=(val_pairs[:, :, :11], val_y))
    with pytest.raises(ValueError, match="single class"):
        SiameseCNN(**TINY).fit(pairs, y, validation_data=(val_pairs, np.ones_like(val_y)))
    with pytest.raises(ValueError, match="tuple"):
        SiameseCNN(**TINY).fit(pairs, y, validation_data=(val_pairs,))


def test_without_early_stopping_every_pair_trains_and_the_last_epoch_returns(data):
    pairs, y = data
    seen = []
    record = lambda params, n_iter: seen.append(params.copy())  # noqa: E731
    est = SiameseCNN(**TINY, early_stopping=False, callback=record).fit(pairs, y)
    assert est.n_iter_ == 3 * 10 and est.n_epochs_ == est.best_epoch_ == 3  # 80 pairs, 8 a step
    assert len(seen) == 3 and est.curves_["validation"] == []
    np.testing.assert_array_equal(est.params_, seen[-1])
    assert est.threshold_ == copy.deepcopy(est).calibrate_threshold(pairs, y).threshold_
    # with validation pairs: the same run (every pair trains, the same draws), now scored
    val_pairs, val_y = make_image_pairs(40, seed=5)
    scored = SiameseCNN(**TINY, early_stopping=False).fit(
        pairs, y, validation_data=(val_pairs, val_y))
    np.testing.assert_array_equal(scored.params_, est.params_)
    last = max_decision_accuracy(val_y, scored.pair_score(val_pairs))[0]
    assert len(scored.curves_["validation"]) == 4  # the start and 3 epochs
    assert last == pytest.approx(scored.curves_["validation"][-1], abs=1e-6)
    stopping = SiameseCNN(**TINY).fit(pairs, y, validation_data=(val_pairs, val_y))
    assert stopping.curves_["validation"] == scored.curves_["validation"]


def test_att_validation_subjects_are_kept_apart(att):
    for split in range(att.N_SPLITS):
        held_out = att.validation_subjects(split, 0)
        assert len(set(held_out)) == 5 and not set(held_out) & set(att.test_subjects(split))
    labels = np.repeat(np.arange(5), 10)
    pairs, y = att.image_pairs(np.zeros((50, 3, 2)), labels, 0)
    assert pairs.shape == (450, 2, 3, 2) and (y == 1).sum() == 225


# -- warm start ----------------------------------------------------------------------------


def test_warm_start_continues_from_the_fitted_weights(data, tmp_path):
    pairs, y = data
    val = make_image_pairs(40, seed=5)
    est = SiameseCNN(**TINY).fit(pairs, y, validation_data=val)
    fitted_score = max_decision_accuracy(val[1], est.pair_score(val[0]))[0]
    scaling = (est.input_mean_, est.input_scale_)
    est.save(tmp_path / "m.npz")
    warm = SiameseCNN.load(tmp_path / "m.npz").set_params(warm_start=True, max_epochs=1)
    warm.fit(pairs[:40] + 5.0, y[:40], validation_data=val)
    assert warm.curves_["validation"][0] == fitted_score  # step 0: the loaded weights
    assert (warm.input_mean_, warm.input_scale_) == scaling  # kept, not refitted
    cold = SiameseCNN(**dict(TINY, max_epochs=1))
    cold.fit(pairs[:40] + 5.0, y[:40], validation_data=val)
    assert not np.array_equal(cold.params_, warm.params_)


def test_warm_start_without_a_fit_starts_afresh(data):
    est = SiameseCNN(**dict(TINY, warm_start=True)).fit(*data)
    np.testing.assert_array_equal(est.params_, SiameseCNN(**TINY).fit(*data).params_)


@pytest.mark.parametrize("change, match", [
    (dict(pairs=lambda p: p[:, :, :11]), "fitted on 12x10 images"),
    (dict(params=dict(n_components=5)), "n_components, n_maps or kernel_sizes changed"),
    (dict(params=dict(n_maps=(3, 6, 9))), "n_components, n_maps or kernel_sizes changed"),
])
def test_warm_start_checks_the_network_against_the_new_data(data, change, match):
    pairs, y = data
    est = SiameseCNN(**dict(TINY, max_epochs=1, warm_start=True)).fit(pairs, y)
    params = est.params_.copy()
    est.set_params(**change.get("params", {}))
    with pytest.raises(ValueError, match=match):
        est.fit(change.get("pairs", lambda p: p)(pairs), y)
    np.testing.assert_array_equal(est.params_, params)  # the fitted model is untouched
    assert est.input_shape_ == (12, 10)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_warm_start_rejects_non_booleans(data, value):
    with pytest.raises(ValueError, match="warm_start"):
        SiameseCNN(**dict(TINY, warm_start=value)).fit(*data)


@pytest.fixture(scope="module")
def lfw_script(att):
    path = REPO_ROOT / "benchmarks" / "lfw_siamese_cnn.py"
    spec = importlib.util.spec_from_file_location("lfw_siamese_cnn", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # imports att_siamese_cnn's protocol, not a copy
    return module


def test_lfw_script_frames_att_faces_like_the_lfw_crops(att, lfw_script):
    lfw = lfw_script
    assert lfw.evaluate is att.evaluate and lfw.summarise is att.summarise
    raw = att.load_att_faces(data_dir()).images[:3]
    faces = lfw.att_inner_face(raw)
    assert faces.shape == (3, 62, 47) and faces.dtype == np.float32
    assert faces.min() >= raw.min() and faces.max() <= raw.max()  # interpolation, no overshoot
    ramp = np.tile(np.arange(112.0)[:, None], (1, 92))[None]
    column = lfw.att_inner_face(ramp)[0, :, 0]
    assert 20 <= column[0] < column[-1] <= 111 and (np.diff(column) > 0).all()  # the box
    labels = np.repeat(np.arange(4), 3)
    assert lfw.split_people(labels, 0.5, 0).sum() == 6


def test_lfw_script_evaluates_a_saved_model_on_att(lfw_script, tmp_path, capsys):
    pairs, y = make_image_pairs(16, shape=(62, 47))
    SiameseCNN(**dict(TINY, max_epochs=1, loss="contrastive", energy="l2")).fit(
        pairs * 40 + 100, y).save(tmp_path / lfw_script.MODEL_FILE)
    lfw_script.main(["--evaluate", "--splits", "7", "--out-dir", str(tmp_path),
                     "--data-home", str(data_dir())])
    result = json.loads((tmp_path / "att_split7.json").read_text())  # strict JSON
    assert result["test_subjects"] == [36, 37, 38, 39, 40]
    assert (result["n_genuine_claims"], result["n_impostor_claims"]) == (25, 200)
    assert set(result["pixels"]) == set(result["pixels_62x47"]) == {"min_energy", "pair_energy"}
    assert "| Gaussian model" in capsys.readouterr().out


def test_is_a_preset_of_the_siamese_learners():
    """SiameseCNN names its loss like TSML does; the score kind and the pair scores are the
    family's, with Q, energy and margin from its own parameters."""
    from metricfit.learners._siamese import SiameseLearner
    from metricfit.losses.distances import energy_bound
    from metricfit.pairs.tags import score_kind

    assert issubclass(SiameseCNN, SiameseLearner)
    est = SiameseCNN(n_components=4, loss="contrastive", energy="l2")
    loss, params = est._loss()
    margin = energy_bound(4, "l2") / 4
    assert (loss.name, params["energy"], params["margin"]) == ("contrastive", "l2", margin)
    assert score_kind(est) == "distance"
    assert score_kind(SiameseCNN(loss="cosine")) == "cosine"


def test_siamese_cnn_uses_the_public_homes_of_threads_and_image_checks():
    """The thread control and the image check are read from their public modules (the
    private shims are gone; tests/test_layout.py refuses cross-room private imports)."""
    from metricfit.cnn import threads
    from metricfit.features import images
    from metricfit.learners import siamese_cnn

    assert siamese_cnn.num_threads is threads.num_threads
    assert siamese_cnn.check_images is images.check_images
