"""The convnet's passes on numba's threads against the package pool, call by call (issue 27).

Each thread count runs in one process: the training step of bench_cnn.py (64 pairs of 56x46,
float32) and the inference of its 128 images, with ``METRICFIT_KERNEL_THREADS=pool`` (the
pool of Python threads: one GIL turn a span) and ``numba`` (the ``parallel=True`` drivers of
``metricfit.cnn._drivers``) alternating round by round (the variable is read per call). First
it checks that both give the same loss, gradient and embeddings, bit for bit.

    python benchmarks/cnn_launchers.py --threads 1 2 --rounds 20
"""

import json
import os
import sys
import time
from pathlib import Path

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scaling import json_at, per_count_parser  # noqa: E402

MODES = ("pool", "numba")


def measure(threads, rounds):
    """``{mode: (step ms, inference ms)}`` medians on ``threads`` threads (this process)."""
    import bench_cnn

    from metricfit.cnn import num_threads

    net, theta, objective, images = bench_cnn._workload()
    rows = np.arange(bench_cnn.N_PAIRS)
    times = {mode: ([], []) for mode in MODES}
    with metricfit.threads(threads), num_threads(threads):
        first = {}
        for mode in MODES:
            os.environ["METRICFIT_KERNEL_THREADS"] = mode
            first[mode] = (*objective.batch(theta, rows), net.transform(theta, images, 128))
        pool, drivers = first["pool"], first["numba"]
        same = pool[0] == drivers[0] and all(
            np.array_equal(a, b) for a, b in zip(pool[1:], drivers[1:], strict=True))
        for _ in range(rounds):
            for mode in MODES:
                os.environ["METRICFIT_KERNEL_THREADS"] = mode
                t0 = time.perf_counter()
                objective.batch(theta, rows)
                t1 = time.perf_counter()
                net.transform(theta, images, 128)
                times[mode][0].append(t1 - t0)
                times[mode][1].append(time.perf_counter() - t1)
    return same, {mode: tuple(1e3 * float(np.median(t)) for t in pair)
                  for mode, pair in times.items()}


def main(argv=None):
    args = per_count_parser(__doc__.splitlines()[0], 15).parse_args(argv)
    if args.one:
        same, result = measure(args.one, args.rounds)
        print(json.dumps({"same": same, **result}))
        return
    print(f"convnet, pool against numba drivers, median of {args.rounds} alternating rounds, "
          f"{os.cpu_count()} CPUs")
    print("| threads | step pool ms | step numba ms | pool / numba | inference pool ms | "
          "inference numba ms | pool / numba | same bits |")
    print("|---|---|---|---|---|---|---|---|")
    for threads in args.threads:
        out = json_at(__file__, threads, "--rounds", args.rounds)
        if "error" in out:
            print(f"| {threads} | failed: {out['error']} |", flush=True)
            continue
        pool, numba = out["pool"], out["numba"]
        print(f"| {threads} | {pool[0]:.2f} | {numba[0]:.2f} | {pool[0] / numba[0]:.2f} | "
              f"{pool[1]:.2f} | {numba[1]:.2f} | {pool[1] / numba[1]:.2f} | "
              f"{'yes' if out['same'] else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
