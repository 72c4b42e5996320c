"""The package-wide thread setting (metricfit.parallel): precedence, validation, fixed blocks."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import metricfit
from metricfit import parallel
from metricfit.cnn import get_num_threads, num_threads


def _blas_threads():
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_threads_block_sets_the_count_and_blas_and_restores_them():
    before, blas_before = metricfit.get_threads(), _blas_threads()
    with metricfit.threads(1):
        assert metricfit.get_threads() == 1
        assert all(n == 1 for n in _blas_threads())
        with metricfit.threads(3):
            assert metricfit.get_threads() == 3
        assert metricfit.get_threads() == 1
    assert metricfit.get_threads() == before
    assert _blas_threads() == blas_before


def test_set_threads_is_the_default_and_a_block_wins():
    old = metricfit.set_threads(2)
    try:
        assert metricfit.get_threads() == 2
        with metricfit.threads(5):
            assert metricfit.get_threads() == 5
    finally:
        metricfit.set_threads(old)


def test_environment_variable(monkeypatch):
    monkeypatch.setenv("METRICFIT_NUM_THREADS", "7")
    assert metricfit.get_threads() == 7
    monkeypatch.setenv("METRICFIT_NUM_THREADS", "seven")
    with pytest.raises(ValueError, match="METRICFIT_NUM_THREADS"):
        metricfit.get_threads()


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2", True])
def test_bad_counts_are_refused(bad):
    with pytest.raises((ValueError, TypeError)):
        with metricfit.threads(bad):
            pass
    with pytest.raises(ValueError, match="n_jobs"):
        parallel.n_jobs_threads(0)


def test_convnet_threads_follow_the_package_setting():
    with metricfit.threads(3):
        assert get_num_threads() == 3
        with num_threads(2):
            assert get_num_threads() == 2


def test_map_blocks_keeps_block_order_and_blocks_do_not_depend_on_threads():
    seen = []

    def work(rows):
        seen.append(threading.get_ident())
        return np.arange(rows.start, rows.stop).sum()

    results = {}
    for n in (1, 2, 3):
        with metricfit.threads(n):
            results[n] = parallel.map_blocks(work, 103, 10)
    assert results[1] == results[2] == results[3]
    assert results[1] == [np.arange(s, min(s + 10, 103)).sum() for s in range(0, 103, 10)]
    assert [b.start for b in parallel.blocks(103, 10)] == list(range(0, 103, 10))
    with pytest.raises(ValueError, match="block"):
        parallel.blocks(10, 0)


def test_nested_map_blocks_runs_serially_inside_a_pool():
    def inner(rows):
        return parallel.map_blocks(lambda r: r.stop - r.start, 5, 2)

    with metricfit.threads(2):
        assert parallel.map_blocks(inner, 4, 1) == [[2, 2, 1]] * 4


def test_a_unit_a_thread_runs_the_first_on_the_caller():
    """With as many units as threads the caller runs the first one (one hand-off fewer), in
    order, nested calls in it serial, and an error in any unit reaches the caller."""
    callers = []

    def work(rows):
        callers.append((rows.start, threading.get_ident()))
        return parallel.map_blocks(lambda r: r.stop - r.start, 5, 2)  # nested: serial

    with metricfit.threads(3):
        assert parallel.map_blocks(work, 3, 1) == [[2, 2, 1]] * 3
        ran_on = dict(callers)
        assert ran_on[0] == threading.get_ident()
        assert ran_on[1] != ran_on[0] and ran_on[2] != ran_on[0]  # on the pool's threads

        def fails(rows):
            if rows.start == 2:
                raise RuntimeError("unit 2")
            return rows.start

        with pytest.raises(RuntimeError, match="unit 2"):
            parallel.map_blocks(fails, 3, 1)


def _spin_in_fresh_process(code, **env_changes):
    """(OPENBLAS_THREAD_TIMEOUT as the process ends, metricfit's account of it) of a fresh
    Python running ``code``."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env.update(env_changes)
    script = (code + "\nimport os, metricfit.parallel as p\n"
              "print(os.environ.get('OPENBLAS_THREAD_TIMEOUT')); print(p.blas_idle_spin())")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, check=True, timeout=120).stdout.splitlines()
    return out[-2], out[-1]


def test_openblas_idle_spin_is_set_before_numpy_loads_it():
    """Imported first, metricfit sets OpenBLAS's idle spin (read once, when OpenBLAS loads);
    after numpy it says it could not; a user's own value is kept."""
    value, said = _spin_in_fresh_process("import metricfit")
    assert value == "16" and "metricfit's default" in said
    value, said = _spin_in_fresh_process("import numpy\nimport metricfit")
    assert value == "16" and "unset when OpenBLAS loaded" in said  # children get it
    value, said = _spin_in_fresh_process("import metricfit", OPENBLAS_THREAD_TIMEOUT="20")
    assert value == "20" and said == "OPENBLAS_THREAD_TIMEOUT=20 (set by the user)"


# -- numba's threads for the kernel sections (metricfit._numba_layer) ---------------------


def test_the_layer_probe_answers_whether_numba_launches_on_a_thread_safe_layer():
    import numba

    from metricfit import _numba_layer

    answer = _numba_layer.threadsafe_layer()
    assert answer == (numba.threading_layer() in _numba_layer.SAFE_LAYERS)
    assert _numba_layer.threadsafe_layer() is answer  # asked once, remembered


def test_openmp_is_made_passive_only_while_numba_loads_it_and_never_over_the_users(monkeypatch):
    import os

    from metricfit._numba_layer import _passive_openmp

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    with _passive_openmp():
        assert os.environ["OMP_WAIT_POLICY"] == "passive"
    assert "OMP_WAIT_POLICY" not in os.environ
    for name, value in (("OMP_WAIT_POLICY", "active"), ("GOMP_SPINCOUNT", "1000")):
        with monkeypatch.context() as m:
            m.setenv(name, value)
            with _passive_openmp():
                assert os.environ[name] == value
                assert os.environ.get("OMP_WAIT_POLICY", "active") == "active"


def test_kernel_threads_are_capped_by_numba_and_zero_inside_the_pool(monkeypatch):
    import numba

    from metricfit import parallel

    monkeypatch.delenv("METRICFIT_KERNEL_THREADS", raising=False)
    monkeypatch.setattr(parallel, "threadsafe_layer", lambda: True)
    cap = numba.config.NUMBA_NUM_THREADS
    with metricfit.threads(64):
        assert parallel.kernel_threads(1) == 0  # one task: no launch
        assert parallel.kernel_threads(1000) == (cap if cap > 1 else 0)
        inside = parallel.map_blocks(lambda b: parallel.kernel_threads(1000), 4, 1)
        assert set(inside) == {0}  # no nested threads
        monkeypatch.setenv("METRICFIT_KERNEL_THREADS", "pool")
        assert parallel.kernel_threads(1000) == 0
    with metricfit.threads(1):
        monkeypatch.delenv("METRICFIT_KERNEL_THREADS")
        assert parallel.kernel_threads(1000) == 0


def test_a_driver_with_a_thread_floor_runs_on_the_pool_below_it(monkeypatch):
    """``min_threads`` (the convnet's drivers): below it the pool, unless the setting asks
    for numba's threads; from it, numba's threads unless the setting asks for the pool."""
    import numba

    monkeypatch.setattr(parallel, "threadsafe_layer", lambda: True)
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    monkeypatch.delenv("METRICFIT_KERNEL_THREADS", raising=False)
    assert parallel.kernel_threads(100, threads=2, min_threads=12) == 0
    assert parallel.kernel_threads(100, threads=11, min_threads=12) == 0
    assert parallel.kernel_threads(100, threads=12, min_threads=12) >= 2
    assert parallel.kernel_threads(100, threads=2) == 2  # the kernel sections: from 2
    with metricfit.threads(3):
        assert parallel.kernel_threads(100, min_threads=4) == 0
        assert parallel.kernel_threads(100, min_threads=3) >= 2
    monkeypatch.setenv("METRICFIT_KERNEL_THREADS", "numba")
    assert parallel.kernel_threads(100, threads=2, min_threads=12) == 2
    assert parallel.kernel_threads(100, threads=1, min_threads=12) == 0  # one thread: none
    monkeypatch.setenv("METRICFIT_KERNEL_THREADS", "pool")
    assert parallel.kernel_threads(100, threads=16, min_threads=12) == 0
    assert not parallel.launch(lambda *a: pytest.fail("ran"), 100, threads=16, min_threads=12)


def test_launch_runs_the_driver_on_its_count_and_leaves_numbas_setting(monkeypatch):
    """Whether numba's per-thread count already is the driver's (the setting is then left
    alone) or not (set for the call, put back after), the driver runs on that count."""
    import numba

    monkeypatch.setattr(parallel, "threadsafe_layer", lambda: True)
    monkeypatch.delenv("METRICFIT_KERNEL_THREADS", raising=False)
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    seen, sets = [], []
    before, set_num_threads = numba.get_num_threads(), numba.set_num_threads
    monkeypatch.setattr(numba, "set_num_threads", lambda n: (sets.append(n), set_num_threads(n)))
    try:
        for setting in (2, 1):
            set_num_threads(setting)
            assert parallel.launch(lambda: seen.append(numba.get_num_threads()), 100, threads=2)
            assert numba.get_num_threads() == setting
    finally:
        set_num_threads(before)
    assert seen == [2, 2]
    assert sets == [2, 1]  # set and put back only where it differed


FORKED_CHILDREN = """
import multiprocessing as mp
import numpy as np
import metricfit
from metricfit.cnn import ConvNetwork, network_spec
from metricfit.losses import tsml

rng = np.random.default_rng(0)
X1, X2 = rng.standard_normal((4800, 20)), rng.standard_normal((4800, 20))
s = np.sign(rng.standard_normal(4800))
net = ConvNetwork(network_spec((56, 46)))
theta, images = net.init(0), rng.standard_normal((32, 56, 46)).astype(np.float32)

def work(_):
    with metricfit.threads(2):
        J = tsml.objective(X1, X2, s)(np.eye(20))[0]
        return J, float(net.transform(theta, images, 32).sum())

if __name__ == "__main__":
    parent = work(0)  # launches the pools and numba's threads
    with mp.get_context("fork").Pool(2) as pool:
        children = pool.map_async(work, range(2)).get(timeout=60)
    print(children == [parent, parent])
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_child_forked_after_the_threads_started_computes_the_same(tmp_path):
    """A child forked (multiprocessing's "fork") after the parent ran kernels on several threads
    gets the same numbers: the parent's pool threads do not exist in it and numba terminates a
    child that relaunches GNU OpenMP, so the child makes its own pool (before the fix it waited
    forever on the parent's pool, or was terminated)."""
    script = tmp_path / "fork_children.py"
    script.write_text(FORKED_CHILDREN)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True", done.stdout + done.stderr[-2000:]


def test_a_bad_kernel_launcher_setting_is_named(monkeypatch):
    monkeypatch.setenv("METRICFIT_KERNEL_THREADS", "openmp")
    with metricfit.threads(2), pytest.raises(ValueError, match="METRICFIT_KERNEL_THREADS"):
        parallel.kernel_threads(100)
    monkeypatch.setenv("METRICFIT_KERNEL_THREADS", " Pool ")
    with metricfit.threads(2):
        assert parallel.kernel_threads(100) == 0
