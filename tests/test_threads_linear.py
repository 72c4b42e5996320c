"""The linear losses on several threads: cost and gradient the same bit for bit at 1, 2 and 3
threads (prepared objectives, stateless cost_grad, mini-batches, embedding kernels, index
pairs), float32 and float64, odd sizes; the learners and the CLI honour the thread setting."""

import numba
import numpy as np
import pytest

import metricfit
import metricfit._numba_layer
from metricfit.losses import _index, _rows, csml, ddml, ldml, tsml
from metricfit.pairs import _index_pairs
from metricfit.parallel import blas_threads

THREADS = (1, 2, 3)
N, D, K, N_POINTS = 203, 13, 7, 61  # odd sizes: blocks end mid-way


@pytest.fixture(params=[64, None], ids=["small-blocks", "default-blocks"])
def blocks(request, monkeypatch):
    """Small fixed blocks (many blocks per call, so that 2 and 3 threads really split the
    work) or the package's own."""
    if request.param is not None:
        monkeypatch.setattr(_rows, "ROW_ELEMENTS", request.param)
    return request.param


@pytest.fixture(params=["numba", "pool"])
def launcher(request, monkeypatch):
    """Kernel sections on numba's threads where the threading layer allows (the default), or
    on the package pool (``METRICFIT_KERNEL_THREADS=pool``)."""
    if request.param == "pool":
        monkeypatch.setenv("METRICFIT_KERNEL_THREADS", "pool")
    else:
        monkeypatch.delenv("METRICFIT_KERNEL_THREADS", raising=False)
    return request.param


def _data(dtype, n=N, d=D, k=K, seed=0):
    rng = np.random.default_rng(seed)
    X1, X2 = (rng.standard_normal((n, d)).astype(dtype) for _ in range(2))
    s = rng.permutation(np.where(np.arange(n) < n // 2, 1.0, -1.0))
    A = (np.eye(k, d) + 0.3 * rng.standard_normal((k, d))).astype(dtype)
    return X1, X2, s, A


def _index_data(dtype, n=N, d=D, n_points=N_POINTS, seed=1):
    rng = np.random.default_rng(seed)
    points = rng.standard_normal((n_points, d)).astype(dtype)
    index = rng.integers(0, n_points, size=(n, 2))
    index[:5, 1] = index[:5, 0]  # a point paired with itself: both sides onto one row
    s = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return points, index, s


def _ldml_theta(d, dtype, seed=2):
    rng = np.random.default_rng(seed)
    M = np.eye(d) + 0.1 * rng.standard_normal((d, d))
    return ldml.pack(M, 2.0 * d).astype(dtype)


def _evaluations(dtype):
    """name -> zero-argument callable returning a tuple of arrays/scalars to compare."""
    X1, X2, s, A = _data(dtype)
    points, index, si = _index_data(dtype)
    theta = _ldml_theta(D, dtype)
    M, b = ldml.unpack(theta, D)
    rows = np.arange(0, N, 3)
    calls = {}
    for name, mod, kw in (("tsml", tsml, {}), ("csml", csml, {}),
                          ("ddml", ddml, {"T": 3.0, "tau": 1.0})):
        f = mod.objective(X1, X2, s, lam=0.1, **kw)
        fi = mod.index_objective(points, index, si, lam=0.1, **kw)
        calls[f"{name} prepared"] = lambda f=f: f(A)
        calls[f"{name} batch"] = lambda f=f: f.batch(A, rows)
        calls[f"{name} cost_grad"] = lambda mod=mod, kw=kw: mod.cost_grad(A, X1, X2, s, **kw)
        calls[f"{name} embedding"] = lambda mod=mod, kw=kw: mod.embedding_cost_grad(
            X1[:, :K], X2[:, :K], s, **kw)
        calls[f"{name} index"] = lambda fi=fi: fi(A)
        calls[f"{name} index batch"] = lambda fi=fi: fi.batch(A, rows)
    f = ldml.objective(X1, X2, s, lam=0.1)
    fi = ldml.index_objective(points, index, si, lam=0.1)
    calls["ldml prepared"] = lambda: f(theta)
    calls["ldml batch"] = lambda: f.batch(theta, rows)
    calls["ldml cost_grad"] = lambda: ldml.cost_grad(M, b, X1, X2, s)
    calls["ldml index"] = lambda: fi(theta)
    return calls


def _as_bytes(result):
    return [np.asarray(v).tobytes() for v in result]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cost_and_gradient_are_the_same_bit_for_bit_on_1_2_3_threads(dtype, blocks, launcher):
    calls = _evaluations(dtype)
    results = {}
    for n in (*THREADS, 4):
        # BLAS held to one thread: OpenBLAS's GEMMs may round differently on other thread
        # counts (seen for float32 GEMMs); metricfit's own blocks are under test
        with metricfit.threads(n), blas_threads(1):
            results[n] = {name: _as_bytes(call()) for name, call in calls.items()}
    for name in calls:
        assert results[1][name] == results[2][name] == results[3][name] == results[4][name], name


def test_small_blocks_really_split_the_work(monkeypatch):
    """On the pool, the kernels are called on several blocks, from several pool threads."""
    import threading
    import time

    monkeypatch.setenv("METRICFIT_KERNEL_THREADS", "pool")
    monkeypatch.setattr(_rows, "ROW_ELEMENTS", 64)
    seen = []
    original = tsml._normalise_rows

    def spy(C, out, lo, hi):
        seen.append((lo, hi, threading.get_ident()))
        time.sleep(0.002)  # lets the other pool threads take blocks
        original(C, out, lo, hi)

    monkeypatch.setattr(tsml, "_normalise_rows", spy)
    X1, X2, s, A = _data("float64")
    with metricfit.threads(3):
        J3, G3 = tsml.objective(X1, X2, s)(A)
    with metricfit.threads(1):
        J1, G1 = tsml.objective(X1, X2, s)(A)
    ranges = sorted((lo, hi) for lo, hi, _ in seen[:-1])
    assert len(ranges) == 3  # one task a thread, each a run of whole fixed blocks of 16 rows
    assert [lo for lo, _ in ranges] == [0] + [hi for _, hi in ranges[:-1]]
    assert ranges[-1][1] == N and all(lo % 16 == 0 for lo, _ in ranges)
    assert len({ident for *_, ident in seen[:-1]}) > 1
    assert seen[-1][:2] == (0, N)  # one thread: one call over every row
    assert J1 == J3 and np.array_equal(G1, G3)


def _driver_spy(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def spy(*args):
        calls.append((args[-2:], numba.get_num_threads()))
        original(*args)

    monkeypatch.setattr(module, name, spy)
    return calls


def test_kernel_sections_run_on_numba_threads_where_the_layer_is_thread_safe(monkeypatch):
    """Where numba's layer is omp or tbb, a kernel section is one launch of its driver on
    min(threads, NUMBA_NUM_THREADS) numba threads (the caller's own setting restored after);
    with METRICFIT_KERNEL_THREADS=pool, or a layer that is not thread-safe, the pool runs it
    instead. Every way gives the same bits."""
    from metricfit import parallel

    monkeypatch.delenv("METRICFIT_KERNEL_THREADS", raising=False)
    monkeypatch.setattr(_rows, "ROW_ELEMENTS", 64)
    calls = _driver_spy(monkeypatch, tsml, "_normalise_rows_parallel")
    X1, X2, s, A = _data("float64")
    before = numba.get_num_threads()
    results, launches = [], []
    for setting in ("numba", "pool", "unsafe layer"):
        with monkeypatch.context() as m:
            if setting == "pool":
                m.setenv("METRICFIT_KERNEL_THREADS", "pool")
            if setting == "unsafe layer":
                m.setattr(parallel, "threadsafe_layer", lambda: False)
            with metricfit.threads(3):
                results.append(_as_bytes(tsml.objective(X1, X2, s)(A)))
        launches.append(list(calls))
    expected = min(3, numba.config.NUMBA_NUM_THREADS)
    if metricfit._numba_layer.threadsafe_layer() and expected > 1:
        assert launches[0] == [((N, 16), expected)]  # one launch: (n_rows, block), threads
    assert launches[0] == launches[1] == launches[2]  # the pool and the unsafe layer: none
    assert numba.get_num_threads() == before
    assert results[0] == results[1] == results[2]


def test_index_passes_run_on_numba_threads(monkeypatch):
    """Both index passes of a linear loss and LDML's launch their drivers (when allowed)."""
    monkeypatch.delenv("METRICFIT_KERNEL_THREADS", raising=False)
    if not metricfit._numba_layer.threadsafe_layer() or numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba's threading layer is not thread-safe here, or one CPU")
    monkeypatch.setattr(_rows, "ROW_ELEMENTS", 64)  # several blocks of pairs
    spies = {name: _driver_spy(monkeypatch, ldml, name)
             for name in ("index_weight_rows_parallel", "index_scatter_sides_parallel")}
    kernel = tsml._embedding_grad_inplace
    pair, side = [], []
    pair_driver, side_driver = kernel.index.pair_driver, kernel.index.side_driver
    passes = kernel.index._replace(
        pair_driver=lambda *a: (pair.append(a[-2:]), pair_driver(*a)),
        side_driver=lambda *a: (side.append(len(a[-1])), side_driver(*a)))
    monkeypatch.setattr(kernel, "index", passes)
    points, index, si = _index_data("float64")
    with metricfit.threads(2):
        tsml.index_objective(points, index, si)(np.eye(K, D))
        ldml.index_objective(points, index, si)(_ldml_theta(D, "float64"))
    assert pair and side and all(spies.values())


def _serial_sum(values):
    total = 0.0
    for v in values:
        total += float(v)
    return total


def test_costs_are_summed_in_pair_order():
    """The per-pair costs are summed first to last, as the serial kernels did (so results
    equal the serial kernels', not only each other across thread counts)."""
    rng = np.random.default_rng(3)
    values = rng.standard_normal(1001) * 10.0 ** rng.integers(-8, 8, 1001)  # order matters
    assert _rows.ordered_sum(values) == _serial_sum(values)
    grouped = sum((_serial_sum(values[i:i + 64]) for i in range(0, 1001, 64)), 0.0)
    assert _rows.grouped_sum(values, 64) == grouped


@pytest.mark.parametrize("n_points", [50, 5000])  # fewer / more points than sides
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_scatter_by_point_ranges_equals_the_serial_scatter(dtype, n_points):
    rng = np.random.default_rng(4)
    index = rng.integers(0, n_points, size=(301, 2))
    index[:40] = rng.integers(0, 7, size=(40, 2))  # points with many sides
    G1, G2 = (rng.standard_normal((301, 5)).astype(dtype) for _ in range(2))
    expected = np.zeros((n_points, 5), dtype=dtype)
    for i, (p, q) in enumerate(index):  # the plain-NumPy twin: one row at a time, in order
        expected[p] += G1[i]
        expected[q] += G2[i]
    for n in THREADS:
        R = np.zeros((n_points, 5), dtype=dtype)
        with metricfit.threads(n):
            first, second = index[:, 0].copy(), index[:, 1].copy()
            _index_pairs.scatter_by_points(_index_pairs.scatter_sides, first, second,
                                           n_points, R, first, second, G1, G2)
        assert np.array_equal(R, expected), n


def test_weighted_rows_carry_no_float32_subnormals():
    """LDML's and DDML's weighted rows are written without subnormals (they slow the GEMM
    after them on many CPUs); entries of normal size are kept exactly."""
    rng = np.random.default_rng(5)
    D_ = rng.standard_normal((40, 6)).astype(np.float32)
    s = np.ones(40, dtype=np.float32)
    M = np.eye(6, dtype=np.float32)
    dist = np.einsum("ij,ij->i", D_.astype(np.float64), D_.astype(np.float64))
    b = float(np.median(dist)) + 95.0  # weights ~ e^-95: w * D is subnormal in float32
    DM = D_ @ M
    ldml._weights_inplace(DM, D_, s, b)
    tiny = np.finfo(np.float32).tiny
    assert not np.any((DM != 0) & (np.abs(DM) < tiny))
    assert np.any(DM == 0) and np.any(DM != 0)
    # the twin in float64: w_i delta_i, with the subnormal entries as 0
    v = s * (dist - b)
    e = np.exp(-np.abs(v))
    w = s * np.where(v >= 0, 1 / (1 + e), e / (1 + e))
    twin = w[:, None] * D_.astype(np.float64)
    twin[np.abs(twin) < tiny] = 0.0
    assert np.array_equal(DM, twin.astype(np.float32))


@pytest.mark.parametrize("Learner", ["TSML", "CSML", "DDML", "LDML"])
def test_learners_fit_the_same_on_1_and_3_threads(Learner):
    rng = np.random.default_rng(6)
    pairs = rng.standard_normal((120, 2, 9))
    y = np.where(np.arange(120) % 2 == 0, 1, -1)
    cls = getattr(metricfit, Learner)
    fits = []
    for n in (1, 3):
        with metricfit.threads(n), blas_threads(1):
            est = cls(max_iter=15).fit(pairs, y)
        fits.append(est.decision_function(pairs))
    assert np.array_equal(*fits)


def _blas_threads():
    from threadpoolctl import threadpool_info

    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


@pytest.mark.parametrize("command", [["verify", "--quiet", "--repeats", "1"], ["bench"]])
def test_cli_threads_option_runs_inside_the_thread_setting(command, monkeypatch):
    """``--threads N`` runs the command inside ``metricfit.threads(N)``: metricfit's kernels
    and BLAS both see N; without it verify on digits keeps its default of one thread."""
    from metricfit import cli
    from metricfit.cli import bench, verify

    class Seen(Exception):
        pass

    seen = []

    def probe(*args, **kwargs):
        seen.append((metricfit.get_threads(), _blas_threads()))
        raise Seen

    if command[0] == "verify":
        monkeypatch.setattr(verify, "_load", probe)
    else:
        monkeypatch.setattr(bench, "_data", lambda args: probe())
    for threads, expected in (("3", 3), ("1", 1)):
        with pytest.raises(Seen):
            cli.main([*command, "--threads", threads])
        assert seen[-1] == (expected, {expected})
    if command[0] == "verify":
        with pytest.raises(Seen):
            cli.main(command)  # digits: one thread by default
        assert seen[-1] == (1, {1})


def test_bench_scaling_prints_a_table_per_objective_and_count(capsys):
    from metricfit import cli

    assert cli.main(["bench", "--scaling", "--n", "40", "--d", "6", "--k", "5",
                     "--repeats", "1", "--threads", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("numba compiles for '")  # what numba builds the kernels for
    rows = [line.split() for line in out.splitlines()[3:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (name, dtype, n) for dtype in ("float64", "float32")
        for name in ("TSML", "CSML", "DDML", "LDML") for n in ("1", "2")]
    assert all(float(r[3]) > 0 and float(r[5]) > 0 for r in rows)
    assert all(r[4] == "1.00" for r in rows if r[2] == "1")  # speed-up over 1 thread


def test_bench_thread_counts_double_up_to_the_cpus():
    from metricfit.cli.bench import thread_counts

    assert thread_counts(1) == [1]
    assert thread_counts(16) == [1, 2, 4, 8, 16]
    assert thread_counts(6) == [1, 2, 4, 6]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("loss", ["tsml", "csml", "ddml"])
def test_the_index_passes_equal_the_rows_kernel_on_gathered_rows(loss, dtype):
    """Pass 2 over index pairs reads the rows of E in place (the kernel's IndexRows); the
    rows kernel on gathered copies, then scattered in pair order, is its twin, bit for bit,
    on 1 to 3 threads (a zero row and a point paired with itself included)."""
    kernel = {"tsml": tsml._embedding_grad_inplace, "csml": csml._embedding_grad_inplace,
              "ddml": ddml._bind(3.0, 1.0)}[loss]
    gathered = _rows.PairKernel(kernel.rows, *kernel.extra)  # no IndexRows: the twin
    rng = np.random.default_rng(6)
    E = rng.standard_normal((40, 9)).astype(dtype)
    E[7] = 0.0  # CSML's cosine has no gradient there, TSML's c may vanish
    index = rng.integers(0, 40, size=(500, 2))
    index[:3] = [[7, 7], [7, 3], [5, 5]]
    s = np.where(rng.random(500) < 0.5, 1.0, -1.0).astype(dtype)
    R0 = np.zeros((40, 9), dtype=dtype)
    J0 = _index.linear_pair_block(E, index, s, R0, gathered)
    assert np.all(np.isfinite(R0)) and np.isfinite(J0[0])
    for n in THREADS:
        R = np.zeros((40, 9), dtype=dtype)
        with metricfit.threads(n):
            J = _index.linear_pair_block(E, index, s, R, kernel)
        assert J == J0 and R.tobytes() == R0.tobytes(), n


@pytest.mark.parametrize("n_points", [30, 5000])
def test_the_scatter_cuts_the_points_into_ranges_of_whole_points(n_points):
    """On several threads each point's sides fall in one task (no row written twice); the
    sort costs O(sides): at most as many ranges as sides, one point a range when fewer."""
    rng = np.random.default_rng(7)
    first, second = rng.integers(0, n_points, 200), rng.integers(0, n_points, 200)
    size, n_ranges = _index_pairs.point_ranges(n_points, 400)
    assert n_ranges <= 400 and (size == 1) == (n_points <= 400)
    starts, order = _index_pairs._sides_by_range(first, second, size, n_ranges)
    points = np.where(order % 2 == 0, first[order // 2], second[order // 2])
    assert np.array_equal(points // size, np.sort(points // size, kind="stable"))
    for r in range(n_ranges):  # each range's sides in (pair, side) order
        assert np.all(np.diff(order[starts[r]:starts[r + 1]]) > 0)
    seen = []
    with metricfit.threads(3):
        _index_pairs.scatter_by_points(lambda order, lo, hi: seen.append(
            set(points[lo:hi].tolist())), first, second, n_points)
    assert len(seen) == 3 and not (seen[0] & seen[1] or seen[1] & seen[2] or seen[0] & seen[2])
    assert set.union(*seen) == set(points.tolist())


def test_callers_on_several_threads_at_once_get_the_serial_bits(monkeypatch):
    """Kernel sections launched from several Python threads at once (a user's threads, Dask's)
    on numba's threads or the pool: each caller gets the bits of a lone call."""
    import threading

    monkeypatch.setattr(_rows, "ROW_ELEMENTS", 64)
    X1, X2, s, A = _data("float64")
    points, index, si = _index_data("float64")
    f, fi = ddml.objective(X1, X2, s), ldml.index_objective(points, index, si)
    theta = _ldml_theta(D, "float64")
    with metricfit.threads(2):
        expected = (_as_bytes(f(A)), _as_bytes(fi(theta)))
    results, errors = [], []

    def caller():
        try:
            with metricfit.threads(2):
                for _ in range(20):
                    results.append((_as_bytes(f(A)), _as_bytes(fi(theta))))
        except Exception as error:  # pragma: no cover (reported below)
            errors.append(error)

    callers = [threading.Thread(target=caller) for _ in range(3)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join(timeout=120)
    assert not errors and len(results) == 60
    assert all(result == expected for result in results)


DRIVER_CACHE = """
import numpy as np
import metricfit
from metricfit.losses import _rows, tsml

_rows.ROW_ELEMENTS = 128  # blocks of 16 rows of 8 entries: 25 blocks, so 2 threads launch
rng = np.random.default_rng(0)
X1, X2 = rng.standard_normal((400, 8)), rng.standard_normal((400, 8))
s = np.sign(rng.standard_normal(400))
with metricfit.threads(2):
    tsml.objective(X1, X2, s)(np.eye(8))
stats = tsml._normalise_rows_parallel.stats
print(metricfit._numba_layer.threadsafe_layer(), sum(stats.cache_hits.values()),
      sum(stats.cache_misses.values()))
"""


def test_the_drivers_are_cached_between_processes(tmp_path):
    """``cache=True`` works for the parallel drivers: a second process loads what the first
    compiled (a driver that took its kernel as an argument, or came from a closure, would
    recompile in every process)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "driver_cache.py"
    script.write_text(DRIVER_CACHE)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_NUM_THREADS": "2"}
    env.pop("METRICFIT_KERNEL_THREADS", None)
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    (usable, hits1, misses1), (_, hits2, misses2) = (run.stdout.split() for run in runs)
    if usable != "True":
        pytest.skip("numba's threading layer is not thread-safe here: no driver runs")
    assert (int(hits1), int(misses1)) == (0, 1)  # compiled in the first process ...
    assert (int(hits2), int(misses2)) == (1, 0)  # ... loaded from the cache in the second
