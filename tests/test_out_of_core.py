"""Out-of-core points: a numpy.memmap read in blocks of rows gives the in-memory results, with
memory bounded by the block and chunk sizes; memmaps of the wrong dtype are refused."""

import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from test_index_pairs import make_points

from metricfit import DDML, LDML, TSML
from metricfit.losses import csml, ddml, ldml, tsml
from metricfit.pairs import index as index_module

LOSSES = {"tsml": tsml, "csml": csml, "ddml": ddml}


def to_memmap(path, array, dtype=None):
    """Write ``array`` to ``path`` and open it read-only as a memmap."""
    array = np.asarray(array, dtype=dtype)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=array.dtype, shape=array.shape)
    out[:] = array
    out.flush()
    del out
    return np.load(path, mmap_mode="r")


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 1,000 bytes: the 200 points of 8 float64 are read in 14 blocks of 15 rows."""
    monkeypatch.setattr(index_module, "POINT_BLOCK_BYTES", 1000)


@pytest.fixture(scope="module")
def data():
    return make_points()


@pytest.mark.parametrize("name", LOSSES)
def test_memmap_objective_equals_in_memory(name, data, tmp_path, small_blocks):
    points, index, y = data
    mm_points = to_memmap(tmp_path / "points.npy", points)
    mm_index = to_memmap(tmp_path / "index.npy", index, dtype=np.int32)
    A = np.random.default_rng(0).normal(size=(5, 8))
    f_mem = LOSSES[name].index_objective(points, index, y, lam=0.2)
    f_map = LOSSES[name].index_objective(mm_points, mm_index, y, lam=0.2)
    assert len(f_map.passes.blocks) == 14 and len(f_mem.passes.blocks) == 1
    for (J, G), (J_ref, G_ref) in ((f_map(A), f_mem(A)),
                                   (f_map.batch(A, [1, 50, 50]), f_mem.batch(A, [1, 50, 50]))):
        np.testing.assert_allclose(J, J_ref, rtol=1e-12)
        np.testing.assert_allclose(G, G_ref, rtol=1e-12, atol=1e-12 * np.abs(G_ref).max())


def test_memmap_ldml_objective_equals_in_memory(data, tmp_path, small_blocks):
    points, index, y = data
    theta = ldml.pack(0.1 * np.random.default_rng(1).normal(size=(8, 8)), 0.5)
    J, g = ldml.index_objective(to_memmap(tmp_path / "p.npy", points), index, y)(theta)
    J_ref, g_ref = ldml.index_objective(points, index, y)(theta)
    np.testing.assert_allclose(J, J_ref, rtol=1e-12)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12 * np.abs(g_ref).max())


@pytest.mark.parametrize("Learner, options", [
    (TSML, {}), (TSML, {"normalize": True, "init": "wccn"}), (DDML, {}), (LDML, {}),
], ids=["tsml", "tsml-normalize-wccn", "ddml", "ldml"])
def test_memmap_fit_equals_in_memory_fit(Learner, options, data, tmp_path, small_blocks):
    points, index, y = data
    mm_points = to_memmap(tmp_path / "points.npy", points)
    ref = Learner(lam=0.1, preprocessor=points, **options).fit(index, y)
    est = Learner(lam=0.1, preprocessor=mm_points, **options).fit(index, y)
    params = (lambda e: e.metric_) if Learner is LDML else (lambda e: e.components_)
    np.testing.assert_allclose(params(est), params(ref), rtol=0, atol=1e-12)
    assert est.threshold_ == pytest.approx(ref.threshold_, abs=1e-12)
    np.testing.assert_allclose(est.pair_score(index), ref.pair_score(index), atol=1e-12)


def test_float32_memmap_fit(data, tmp_path):
    points, index, y = data
    mm_points = to_memmap(tmp_path / "points.npy", points, dtype=np.float32)
    est = TSML(preprocessor=mm_points).fit(index, y)
    ref = TSML(preprocessor=points.astype(np.float32)).fit(index, y)
    assert est.components_.dtype == np.float32
    np.testing.assert_allclose(est.components_, ref.components_, atol=1e-5)
    assert est.score(index, y) > 0.8


def test_memmap_memory_is_bounded_by_the_blocks(tmp_path, monkeypatch):
    """20,000 float32 points of 256 (20 MB on disk), 200,000 pairs: one evaluation allocates
    P, R (n_points x k) and chunk temporaries, never a copy of the points or of the pairs."""
    monkeypatch.setattr(index_module, "POINT_BLOCK_BYTES", 2**20)
    rng = np.random.default_rng(0)
    points = to_memmap(tmp_path / "points.npy", rng.normal(size=(20_000, 256)),
                       dtype=np.float32)
    index = rng.integers(0, 20_000, size=(200_000, 2))
    y = rng.choice([-1, 1], size=200_000)
    f = tsml.index_objective(points, index, y)
    A = np.eye(16, 256, dtype=np.float32)
    f(A)  # compile / load the kernels outside the trace
    tracemalloc.start()
    try:
        J, G = f(A)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.isfinite(J) and G.dtype == np.float32
    assert peak < points.nbytes / 4, (peak, points.nbytes)


def test_bad_memmaps_raise_value_error(data, tmp_path):
    points, index, y = data
    for dtype in (np.int16, np.float16):
        mm = to_memmap(tmp_path / f"{np.dtype(dtype).name}.npy", points * 10, dtype=dtype)
        with pytest.raises(ValueError, match=r"must be float32 or float64"):
            TSML(preprocessor=mm).fit(index, y)
    nan = points.copy()
    nan[-1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        TSML(preprocessor=to_memmap(tmp_path / "nan.npy", nan)).fit(index, y)
    flat = to_memmap(tmp_path / "flat.npy", points.ravel())
    with pytest.raises(ValueError, match="2-D array"):
        TSML(preprocessor=flat).fit(index, y)
    mm_index = to_memmap(tmp_path / "index.npy", np.where(index == 3, 10**6, index))
    with pytest.raises(ValueError, match="out of range"):
        TSML(preprocessor=points).fit(mm_index, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = TSML(max_iter=3, preprocessor=points).fit(index, y)
    fitted.set_params(preprocessor=to_memmap(tmp_path / "int.npy", points, dtype=np.int64))
    with pytest.raises(ValueError, match=r"must be float32 or float64"):
        fitted.predict(index)


def test_clone_shares_a_memmap_preprocessor(data, tmp_path):
    """sklearn's clone deep-copies parameters (a memmap would be loaded into memory); the
    learners share read-only point stores instead, and still copy in-memory arrays."""
    from sklearn.base import clone

    points, index, y = data
    mm_points = to_memmap(tmp_path / "points.npy", points)
    est = TSML(lam=0.5, preprocessor=mm_points)
    copy = clone(est)
    assert copy.preprocessor is mm_points and est.preprocessor is mm_points
    assert copy.lam == 0.5 and copy is not est
    assert clone(TSML(preprocessor=points)).preprocessor is not points
