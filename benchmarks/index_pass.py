"""Pass 2 over index pairs, measured in one process: the kept chunk against the plain index,
and the pass's two launches at 1 against 2 threads.

Pass 2 of an objective over index pairs (:mod:`metricfit.losses._index`,
``ldml._index_pair_block``) runs right after pass 1's GEMM, on 8,192 pairs into 2,000 points
of width 300 (as ``scaling.py``'s ``kernel_index_*`` rows). Two measurements, each with the
calls it compares alternated call by call in one process, so that the machine's drift falls
on both alike (this project's 2-core machine drifts by 30% between processes):

- ``chunk``: the same pass with the pairs as a plain (m, 2) array (the sort of the sides by
  point made at every call, as before :class:`metricfit.pairs.index.IndexChunk`) and as the
  kept chunk an objective now holds; the two results are checked to be the same bits. At
  the process's thread count.
- ``parts``: the pass on the kept chunk at 1 and at 2 threads (``metricfit.threads``),
  right after the GEMM and back to back ("warm"); TSML, CSML and DDML split into their two
  launches (the pairs' scalars, then the scatter of the sides), LDML whole.

    python benchmarks/index_pass.py [chunk|parts] [--losses tsml ...] [--dtypes float32 ...]
        [--repeats 81]

Run it with ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``NUMBA_NUM_THREADS`` and
``METRICFIT_NUM_THREADS`` at 2. Prints medians in ms (``chunk``: and the median of the
call-by-call differences).
"""

import argparse
import time

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numpy as np

from metricfit.losses import _index, csml, ddml, ldml, tsml
from metricfit.losses._rows import run_rows
from metricfit.pairs.index import IndexChunk, scatter_by_points

N_POINTS, N_PAIRS, K = 2000, 8192, 300


def _problem(loss, dtype, seed=0):
    """Points, pass 1's map, E, the plain index, its chunk, labels and R (as scaling.py)."""
    rng = np.random.default_rng(seed)
    width = 2 * K if loss == "ldml" else K
    points = rng.standard_normal((N_POINTS, K)).astype(dtype)
    A = (rng.standard_normal((width, K)) * ((0.05 if loss == "ldml" else 1.0) / K ** 0.5)
         ).astype(dtype)
    plain = rng.integers(0, N_POINTS, size=(N_PAIRS, 2))
    s = np.where(rng.random(N_PAIRS) < 0.5, 1.0, -1.0).astype(dtype)
    E = np.empty((N_POINTS, width), dtype=dtype)
    return points, A, E, plain, IndexChunk(plain), s, np.zeros((N_POINTS, K), dtype=dtype)


def _kernel(loss):
    return {"tsml": tsml._embedding_grad_inplace, "csml": csml._embedding_grad_inplace,
            "ddml": ddml._bind(10.0, 1.0)}[loss]


def _pass(loss, E, s, R):
    """``call(index)``: the whole pass 2 over ``index``."""
    if loss == "ldml":
        return lambda index: ldml._index_pair_block(E, index, s, R, 2.0 * K * 0.005)
    kernel = _kernel(loss)
    return lambda index: _index.linear_pair_block(E, index, s, R, kernel)


def _launches(loss, E, chunk, s, R):
    """The pass's launches as ``[(name, call)]`` (LDML: the whole pass)."""
    if loss == "ldml":
        return [("pass", lambda: _pass(loss, E, s, R)(chunk))]
    kernel, (first, second), m = _kernel(loss), chunk.columns(), chunk.shape[0]
    passes, out, W = kernel.index, np.empty(m), np.empty((m, kernel.index.width))
    return [("scalars", lambda: run_rows(passes.pair_rows, m, 2 * K, E, first, second, s,
                                         *kernel.extra, out, W, driver=passes.pair_driver)),
            ("scatter", lambda: scatter_by_points(passes.side_rows, first, second, N_POINTS,
                                                  E, first, second, s, W, R,
                                                  driver=passes.side_driver, chunk=chunk))]


def chunk_against_plain(loss, dtype, repeats):
    points, A, E, plain, chunk, s, R = _problem(loss, dtype)
    call, times, results = _pass(loss, E, s, R), {"plain": [], "chunk": []}, {}
    for rep in range(repeats + 1):
        order = [("plain", plain), ("chunk", chunk)]
        for name, index in order if rep % 2 else order[::-1]:
            R.fill(0)
            np.matmul(points, A.T, out=E)
            t0 = time.perf_counter()
            total = call(index)
            times[name].append(time.perf_counter() - t0)
            results[name] = (total, R.tobytes())
    assert results["plain"] == results["chunk"], "the kept chunk changed the bits"
    plain_ms, chunk_ms = (1e3 * np.array(times[name][1:]) for name in ("plain", "chunk"))
    print(f"{loss:5s} {dtype:8s} {metricfit.get_threads()} thread(s): plain "
          f"{np.median(plain_ms):.3f}  chunk {np.median(chunk_ms):.3f}  difference "
          f"{np.median(plain_ms - chunk_ms):.3f} ms")


def parts_by_threads(loss, dtype, repeats):
    points, A, E, _, chunk, s, R = _problem(loss, dtype)
    launches, times = _launches(loss, E, chunk, s, R), {}
    for rep in range(repeats + 1):
        for n in (1, 2) if rep % 2 else (2, 1):
            with metricfit.threads(n):
                for when in ("after GEMM", "warm"):
                    if when == "after GEMM":
                        R.fill(0)
                        np.matmul(points, A.T, out=E)
                    for name, call in launches:
                        t0 = time.perf_counter()
                        call()
                        times.setdefault((when, name, n), []).append(time.perf_counter() - t0)
    for when in ("after GEMM", "warm"):
        cells = []
        for name in [name for name, _ in launches] + ["total"]:
            one, two = (1e3 * _median(times, when, name, n, len(launches)) for n in (1, 2))
            cells.append(f"{name} {one:.3f}/{two:.3f} ({one / two:.2f}x)")
        print(f"{loss:5s} {dtype:8s} {when:10s}  1/2 threads ms: " + "  ".join(cells))


def _median(times, when, name, n, n_launches):
    if name != "total":
        return float(np.median(times[(when, name, n)][1:]))
    parts = [times[key][1:] for key in times if key[0] == when and key[2] == n]
    return float(np.median(np.sum(parts, axis=0))) if len(parts) == n_launches else np.nan


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", choices=("chunk", "parts"), default="chunk")
    parser.add_argument("--losses", nargs="+", default=["tsml", "csml", "ddml", "ldml"])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--repeats", type=int, default=81)
    args = parser.parse_args(argv)
    measure = chunk_against_plain if args.what == "chunk" else parts_by_threads
    for loss in args.losses:
        for dtype in args.dtypes:
            measure(loss, dtype, args.repeats)


if __name__ == "__main__":
    main()
