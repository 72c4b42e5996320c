"""Where the five descriptors' time goes at many threads (issue 27): each descriptor's transform
of 1,024 random 62x47 images (``scaling.py``'s ``descriptors`` workload) at each thread count,
with the minor page faults and system time of each round, then the same with every output
array reused (already touched) instead of fresh, then the cost of touching 157 MB of fresh
memory (the five outputs) on the pool.

    python benchmarks/descriptor_faults.py --threads 1 16

A diagnostic: the reused outputs are a patch of this script's, not something the package does.
"""

import argparse
import resource
import sys
import time
from pathlib import Path

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numpy as np

from metricfit.features import _images
from metricfit.parallel import map_blocks

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_descriptors  # noqa: E402


class _ReusedEmpty:
    """numpy, except that ``empty`` hands back one touched array per shape."""

    def __init__(self):
        self.arrays = {}

    def __getattr__(self, name):
        return getattr(np, name)

    def empty(self, shape, dtype=float):
        key = (tuple(np.atleast_1d(shape)), np.dtype(dtype))
        if key not in self.arrays:
            self.arrays[key] = np.ones(key[0], key[1])
        return self.arrays[key]


def _filler(array):
    """A block function writing ones into ``array[rows]`` (its first touch)."""
    def fill(rows):
        array[rows] = 1.0
    return fill


def rounds(fitted, images, threads, n_rounds):
    for r in range(n_rounds + 1):
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        per = []
        with metricfit.threads(threads):
            for est in fitted:
                t0 = time.perf_counter()
                est.transform(images)
                per.append(1e3 * (time.perf_counter() - t0))
        wall = 1e3 * (time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_SELF)
        if r:  # the first round warms up
            print(f"  {threads:2d} threads: {wall:8.1f} ms (" + ", ".join(f"{p:.1f}" for p in per)
                  + f"), faults {after.ru_minflt - before.ru_minflt}, system "
                  f"{after.ru_stime - before.ru_stime:.3f} s", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            print("transparent huge pages:", f.read().strip())
    except OSError:
        print("transparent huge pages: no such setting")
    images = np.random.default_rng(0).random((1024, 62, 47))
    fitted = [make().fit(images[:1]) for make in bench_descriptors.DESCRIPTORS.values()]
    print("ms a round of " + ", ".join(bench_descriptors.DESCRIPTORS) + ", fresh outputs:")
    for t in args.threads:
        rounds(fitted, images, t, args.rounds)
    print("outputs reused (touched):")
    _images.np = _ReusedEmpty()
    try:
        for t in args.threads:
            rounds(fitted, images, t, args.rounds)
    finally:
        _images.np = np
    size = 157 * 2**20 // 8
    for t in args.threads:
        for _ in range(2):
            start = time.perf_counter()
            fresh = np.empty(size)
            with metricfit.threads(t):
                map_blocks(_filler(fresh), size, size // 64)
            print(f"157 MB fresh, touched on {t} threads: "
                  f"{1e3 * (time.perf_counter() - start):.1f} ms", flush=True)
            del fresh


if __name__ == "__main__":
    main()
