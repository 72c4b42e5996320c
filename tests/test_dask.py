"""Dask: the gradient as a map-reduce over chunks (threads and a dask.distributed LocalCluster),
a fit that survives a worker killed mid-fit, GridSearchCV on the joblib Dask backend; and two
processes compiling the numba kernels into one cold cache at once."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest
from test_index_pairs import make_points

from metricfit import TSML
from metricfit.losses import csml, ddml, ldml, tsml

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

LOSSES = {"tsml": tsml, "csml": csml, "ddml": ddml}


@pytest.fixture(scope="module")
def data():
    return make_points(n_pairs=3000)


def dask_data(points, index):
    """Points in 6 row chunks, pairs in 5 chunks (so pass 2 is 5 tasks)."""
    return da.from_array(points, chunks=(37, 4)), da.from_array(index, chunks=(700, 2))


def cluster():
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                    dashboard_address=None)


@pytest.mark.parametrize("name", LOSSES)
def test_dask_objective_equals_in_memory(name, data):
    points, index, y = data
    A = np.random.default_rng(0).normal(size=(5, 8))
    f_mem = LOSSES[name].index_objective(points, index, y, lam=0.2)
    f_dask = LOSSES[name].index_objective(*dask_data(points, index), y, lam=0.2)
    assert type(f_dask.passes).__name__ == "DaskPasses" and len(f_dask.passes._pair_chunks) == 5
    for (J, G), (J_ref, G_ref) in ((f_dask(A), f_mem(A)),
                                   (f_dask.batch(A, [4, 4, 2999]), f_mem.batch(A, [4, 4, 2999]))):
        np.testing.assert_allclose(J, J_ref, rtol=1e-12)
        np.testing.assert_allclose(G, G_ref, rtol=1e-12, atol=1e-12 * np.abs(G_ref).max())


def test_dask_ldml_objective_equals_in_memory(data):
    points, index, y = data
    theta = ldml.pack(0.1 * np.random.default_rng(1).normal(size=(8, 8)), 0.5)
    J, g = ldml.index_objective(*dask_data(points, index), y)(theta)
    J_ref, g_ref = ldml.index_objective(points, index, y)(theta)
    np.testing.assert_allclose(J, J_ref, rtol=1e-12)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12 * np.abs(g_ref).max())


def test_bad_dask_input_raises(data):
    points, index, y = data
    with pytest.raises(ValueError, match="out of range"):
        tsml.index_objective(da.from_array(points), da.from_array(index + 1000), y)
    with pytest.raises(ValueError, match="float32 or float64"):
        tsml.index_objective(da.from_array(points.astype(np.int32)), index, y)
    with pytest.raises(ValueError, match="must hold integers"):
        tsml.index_objective(points, da.from_array(index.astype(float)), y)


def _kill_one_worker(client, pids, killed):
    """SIGKILL one worker process (its nanny starts a new one)."""
    address, pid = sorted(pids.items())[0]
    os.kill(pid, signal.SIGKILL)
    killed.append(address)


def test_fit_on_local_cluster_survives_a_killed_worker(data):
    """A TSML fit on a 2-worker LocalCluster, one worker SIGKILLed during the second
    iteration, completes with the in-memory result (1e-10): Dask recomputes the lost tasks
    and persisted chunks elsewhere while the nanny restarts the worker."""
    points, index, y = data
    ref = TSML(lam=0.1, preprocessor=points).fit(index, y)
    killed = []
    with cluster() as local, distributed.Client(local) as client:
        pids = client.run(os.getpid)

        def kill_during_next_iteration(A, n_iter):
            if n_iter == 1:
                threading.Timer(0.01, _kill_one_worker, (client, pids, killed)).start()

        dask_points, dask_index = dask_data(points, index)
        est = TSML(lam=0.1, preprocessor=dask_points, callback=kill_during_next_iteration)
        est.fit(dask_index, y)
        client.wait_for_workers(2, timeout=30)
        assert killed and set(client.run(os.getpid).values()) != set(pids.values())
    assert est.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(est.components_, ref.components_, rtol=0, atol=1e-10)
    assert est.threshold_ == pytest.approx(ref.threshold_, abs=1e-10)


def test_grid_search_on_the_joblib_dask_backend(data):
    from joblib import parallel_backend
    from sklearn.model_selection import GridSearchCV

    points, index, y = data
    grid, options = {"lam": [1e-2, 1.0]}, {"max_iter": 15, "preprocessor": points}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter
        ref = GridSearchCV(TSML(**options), grid, cv=3).fit(index, y)
        with cluster() as local, distributed.Client(local) as client:
            with distributed.get_task_stream(client) as tasks, parallel_backend("dask"):
                search = GridSearchCV(TSML(**options), grid, cv=3, n_jobs=-1).fit(index, y)
    assert len({task["worker"] for task in tasks.data}) == 2  # the fits ran on both workers
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               ref.cv_results_["mean_test_score"])
    assert search.best_params_ == ref.best_params_


FIT_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from metricfit import DDML, LDML, TSML
    from test_index_pairs import make_points
    points, index, y = make_points()
    for Learner in (TSML, DDML, LDML):
        est = Learner(lam=0.1, preprocessor=points).fit(index, y)
        print(Learner.__name__, repr(float(est.threshold_)))
""")


def test_two_processes_compiling_into_a_cold_numba_cache(tmp_path):
    """Two fits start at once with an empty NUMBA_CACHE_DIR: both compile and write the same
    cache files concurrently; both must succeed, with the same models."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"))
    script = FIT_SCRIPT.format(tests=os.path.dirname(__file__))
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-2000:]
    assert outputs[0][0] == outputs[1][0] and outputs[0][0].count("\n") == 3
    assert any((tmp_path / "numba_cache").rglob("*.nbi"))
