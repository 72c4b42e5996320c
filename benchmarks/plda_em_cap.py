"""PLDA's EM iteration with BLAS held to its share of the d x d x d products
(``metricfit.backend.plda.EM_MACS_PER_THREAD``) against BLAS on every thread, alternating
round by round in one process (issue 27). 1e5 x 256 with 1e4 identities, as
``bench_plda.time_em_iteration``.

    python benchmarks/plda_em_cap.py --threads 1 2 --rounds 5
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import metricfit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_plda import _em, core, synthetic  # noqa: E402


def one_iteration(counts, means, scatter):
    """Seconds of one EM iteration: (6 iterations - 1 iteration) / 5."""
    t0 = time.perf_counter()
    _em(counts, means, scatter, 1)
    t1 = time.perf_counter()
    _em(counts, means, scatter, 6)
    return (time.perf_counter() - t1 - (t1 - t0)) / 5


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    X, codes = synthetic(100_000, 256, per_identity=10)
    cap = core.EM_MACS_PER_THREAD
    print(f"PLDA EM iteration (d = 256), median of {args.rounds} alternating rounds")
    for threads in args.threads:
        with metricfit.threads(threads):
            counts, means, _, scatter = core.class_statistics(X, codes)
            times = {"capped": [], "all": []}
            for _ in range(args.rounds):
                for label, value in (("capped", cap), ("all", 1)):
                    core.EM_MACS_PER_THREAD = value  # 1: BLAS on every thread
                    times[label].append(one_iteration(counts, means, scatter))
            core.EM_MACS_PER_THREAD = cap
            blas = core._em_blas_threads(256)
        capped, every = (1e3 * statistics.median(times[k]) for k in ("capped", "all"))
        print(f"{threads:2d} threads: BLAS on {blas} threads {capped:.2f} ms, on {threads} "
              f"{every:.2f} ms ({every / capped:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
