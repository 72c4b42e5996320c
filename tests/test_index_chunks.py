"""Index chunks kept by the serial passes: what pass 2 derives from the pairs alone (their
columns, the sort of their sides) is made once per objective, and gives the bits of a fresh
derivation on any thread count."""

import pickle

import numpy as np
import pytest

import metricfit
from metricfit.losses import _index, csml, ddml, ldml, tsml
from metricfit.pairs import _index_pairs
from metricfit.pairs.index import IndexChunk, SerialPasses


def _data(n_pairs=700, n_points=90, d=6, seed=0):
    rng = np.random.default_rng(seed)
    points = rng.standard_normal((n_points, d))
    index = rng.integers(0, n_points, size=(n_pairs, 2))
    index[:4, 1] = index[:4, 0]  # a point paired with itself
    s = np.where(rng.random(n_pairs) < 0.5, 1.0, -1.0)
    return points, index, s


def _count_sorts(monkeypatch):
    calls = []
    sort = _index_pairs._sides_by_range

    def counted(*args):
        calls.append(args[0].shape[0])
        return sort(*args)
    monkeypatch.setattr(_index_pairs, "_sides_by_range", counted)
    return calls


def test_a_chunk_is_a_read_only_copy_with_writeable_contiguous_columns():
    index = np.array([[0, 1], [2, 0], [1, 1]], dtype=np.int32)
    chunk = IndexChunk(index)
    index[0] = 2  # the chunk's pairs cannot change under what it derived
    assert chunk.dtype == np.int64 and chunk.tolist() == [[0, 1], [2, 0], [1, 1]]
    with pytest.raises(ValueError):
        chunk[0, 0] = 1
    first, second = chunk.columns()
    assert first.flags.c_contiguous and first.flags.writeable and type(first) is np.ndarray
    assert first.tolist() == [0, 2, 1] and second.tolist() == [1, 0, 1]
    assert [c.tolist() for c in _index_pairs.pair_columns(chunk[1:])] == [[2, 1], [0, 1]]


def test_the_sort_is_made_once_for_every_thread_count(monkeypatch):
    rng = np.random.default_rng(1)
    chunk = IndexChunk(rng.integers(0, 50, size=(300, 2)))
    calls = _count_sorts(monkeypatch)
    for n_threads in (2, 3, 2, 4):
        order, cuts = chunk.sorted_sides(50, n_threads)
        fresh = _index_pairs.sorted_sides(*chunk.columns(), 50, n_threads)
        assert np.array_equal(order, fresh[0]) and np.array_equal(cuts, fresh[1])
    assert calls == [300] + [300] * 4  # the chunk's one sort, then the four fresh ones


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_an_objective_sorts_once_and_keeps_its_bits_on_any_thread_count(monkeypatch, dtype):
    """The kept chunks give the bits of a fresh objective at 1, 2 and 3 threads, in any order
    of the counts (the runs of sides are cut again for each count; the sort is not), and one
    thread reads the kept sort too."""
    points, index, s = _data()
    points = points.astype(dtype)
    A = np.random.default_rng(2).standard_normal((4, 6)).astype(dtype)
    expected = {}
    for n in (1, 2, 3):
        with metricfit.threads(n):
            expected[n] = tsml.index_objective(points, index, s, lam=0.1, chunk_size=256)(A)
    assert all(expected[n][0] == expected[1][0] for n in (2, 3))
    f = tsml.index_objective(points, index, s, lam=0.1, chunk_size=256)
    calls = _count_sorts(monkeypatch)
    for n in (2, 3, 1, 3, 2):
        with metricfit.threads(n):
            J, G = f(A)
        assert J == expected[n][0] and G.tobytes() == expected[n][1].tobytes(), n
    assert calls == [256, 256, 188]  # one sort a chunk, at the first run
    g = tsml.index_objective(points, index, s, lam=0.1, chunk_size=256)
    with metricfit.threads(1):  # one thread adds the sides in the kept order too
        J, G = g(A)
        assert g(A)[1].tobytes() == G.tobytes()
    assert calls[3:] == [256, 256, 188] and G.tobytes() == expected[1][1].tobytes()


def test_ldml_over_index_pairs_uses_the_kept_sort(monkeypatch):
    points, index, s = _data(seed=3)
    f = ldml.index_objective(points, index, s)
    theta = ldml.pack(np.eye(6), 12.0)
    with metricfit.threads(1):
        J1, g1 = f(theta)
    calls = _count_sorts(monkeypatch)
    with metricfit.threads(2):
        results = [f(theta) for _ in range(3)]
    assert len(calls) == 1
    for J, g in results:
        assert J == J1 and g.tobytes() == g1.tobytes()


def test_chunks_are_kept_for_pairs_in_memory_only(tmp_path, monkeypatch):
    points, index, s = _data()
    passes = SerialPasses(points, index, s, np.float64, chunk_size=256)
    chunks = passes._pair_chunks()
    assert passes._pair_chunks() is chunks and all(type(c) is IndexChunk for _, c in chunks)
    assert [c.tolist() for _, c in chunks] == [index[i:i + 256].tolist() for i in (0, 256, 512)]
    restored = pickle.loads(pickle.dumps(passes))  # what the chunks derived is made again
    assert restored._chunks is None and len(restored._pair_chunks()) == 3
    stored = np.lib.format.open_memmap(tmp_path / "index.npy", mode="w+", dtype=np.int64,
                                       shape=index.shape)
    stored[:] = index
    streamed = SerialPasses(points, stored, s, np.float64, chunk_size=256)
    assert not any(isinstance(c, IndexChunk) for _, c in streamed._pair_chunks())
    assert streamed._chunks is None
    monkeypatch.setattr("metricfit.pairs.index.KEPT_CHUNK_PAIRS", 500)
    many = SerialPasses(points, index, s, np.float64, chunk_size=256)
    assert not any(isinstance(c, IndexChunk) for _, c in many._pair_chunks())


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("loss", ["tsml", "csml", "ddml"])
def test_a_chunk_and_a_plain_index_give_the_same_bits(loss, n_threads):
    """Pass 2 on a kept chunk (its sides added in the sorted order, one thread included)
    against the plain (m, 2) array (pair order on one thread, sorted afresh on two)."""
    kernel = {"tsml": tsml._embedding_grad_inplace, "csml": csml._embedding_grad_inplace,
              "ddml": ddml._bind(3.0, 1.0)}[loss]
    points, index, s = _data(seed=4)
    E = points @ np.random.default_rng(5).standard_normal((6, 6))
    results = []
    for pairs in (index, IndexChunk(index)):
        R = np.zeros_like(E)
        with metricfit.threads(n_threads):
            J = _index.linear_pair_block(E, pairs, s, R, kernel)
        results.append((J, R.tobytes()))
    assert results[0] == results[1]


def test_a_view_of_a_chunk_is_not_sorted_on_one_thread(monkeypatch):
    """A view keeps nothing: one thread adds its sides in pair order instead of sorting
    them at every call (the same bits)."""
    points, index, s = _data(seed=6)
    E = points @ np.random.default_rng(7).standard_normal((6, 6))
    view = IndexChunk(index)[:300]
    calls = _count_sorts(monkeypatch)
    R, R0 = np.zeros_like(E), np.zeros_like(E)
    with metricfit.threads(1):
        J = _index.linear_pair_block(E, view, s[:300], R, tsml._embedding_grad_inplace)
        J0 = _index.linear_pair_block(E, index[:300], s[:300], R0, tsml._embedding_grad_inplace)
    assert calls == [] and J == J0 and R.tobytes() == R0.tobytes()
