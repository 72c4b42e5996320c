"""Cost of the face descriptors on LFW 62x47 images: seconds per 1,000 images and dimension.

LBP (8,1 on 10x10 blocks) and OCLBP (seed 002's three configurations) next to the issue-15
descriptors DenseSIFT, Gabor and HOG (their defaults, as ``metricfit verify --features``
builds them for 62x47 images), and scikit-image's ``hog`` on the same images as an outside
reference when it is installed. Each descriptor's ``transform`` of the first ``--n`` LFW
images is timed ``--repeats`` times, interleaved (repeat outer, descriptor inner) so that a
change of load hits all of them alike; the median is reported, with its ratio to LBP's from
the same run. The first call (numba compile, or loading the on-disk cache) is timed in a
fresh process with an empty numba cache (``--no-cold`` skips that). One BLAS thread.

``--synthetic`` times random 62x47 uint8 images instead (no data folder needed);
``--threads 1,2`` times each descriptor at each of these package thread counts
(:func:`metricfit.threads`: fixed blocks of images on a thread pool) and prints the speed-up
over the first count. :func:`time_descriptor` is the callable of the scaling harness
(``benchmarks/scaling.py``).

    python benchmarks/bench_descriptors.py            # about 2-4 minutes on an idle machine
    python benchmarks/bench_descriptors.py --n 200    # quicker
    python benchmarks/bench_descriptors.py --synthetic --threads 1,2 --no-cold

Prints a table and writes ``benchmarks/results/bench_descriptors.json`` (git-ignored).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import metricfit
from metricfit import datasets
from metricfit.features import HOG, LBP, OCLBP, DenseSIFT, Gabor

DESCRIPTORS = {
    "lbp": lambda: LBP(),
    "oclbp": lambda: OCLBP(),
    "dsift": lambda: DenseSIFT(),
    "gabor": lambda: Gabor(),
    "hog": lambda: HOG(),
}
#: Other names of the descriptors (the scaling harness says "sift").
ALIASES = {"sift": "dsift"}


def synthetic_images(n, seed=0):
    """``n`` random 62x47 uint8 images (the LFW crop size), no data folder needed."""
    return np.random.default_rng(seed).integers(0, 256, size=(n, 62, 47), dtype=np.uint8)


def time_descriptor(name, threads, n=1000, repeats=3):
    """Median seconds of ``transform`` of ``n`` synthetic 62x47 images by descriptor ``name``
    (lbp, oclbp, sift / dsift, gabor, hog) on ``threads`` package threads.

    The descriptor is fitted and its kernels compiled (or loaded from the cache) before the
    timing; BLAS is held to one thread as in :func:`main`.
    """
    key = ALIASES.get(name, name)
    if key not in DESCRIPTORS:
        raise ValueError(f"unknown descriptor {name!r}; choose from "
                         f"{sorted(set(DESCRIPTORS) | set(ALIASES))}.")
    images = synthetic_images(n)
    est = DESCRIPTORS[key]().fit(images[:1])
    est.transform(images[:2])  # compile or load the cache, build Gabor's FFT plan
    times = []
    with metricfit.threads(threads), threadpool_limits(1, user_api="blas"):
        for _ in range(repeats):
            start = time.perf_counter()
            est.transform(images)
            times.append(time.perf_counter() - start)
    return float(np.median(times))


def thread_scaling(counts, n, repeats):
    """``{name: {threads: median seconds}}`` for every descriptor, the counts interleaved
    (descriptor outer, thread count inner) so that a change of load hits the counts alike."""
    return {name: {t: time_descriptor(name, t, n, repeats) for t in counts}
            for name in DESCRIPTORS}

_COLD = """
import sys, time
import numpy as np
sys.path.insert(0, {root!r})
sys.path.insert(0, {bench!r})
from bench_descriptors import DESCRIPTORS
images = np.random.default_rng(0).random((1, 62, 47))
start = time.perf_counter()
DESCRIPTORS[{name!r}]().fit(images).transform(images)
print(time.perf_counter() - start)
"""


def skimage_hog():
    """A transform-like callable running scikit-image's hog image by image, or None."""
    try:
        from skimage.feature import hog
    except ImportError:
        return None

    def transform(images):
        return np.stack([hog(image, orientations=9, pixels_per_cell=(8, 8),
                             cells_per_block=(2, 2), block_norm="L2-Hys") for image in images])
    return transform


def cold_start(name):
    """Seconds of the first fit + transform of one image in a fresh process whose numba
    cache directory is empty (compilation included)."""
    root = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "OMP_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1"}
        code = _COLD.format(root=root, bench=str(Path(__file__).resolve().parent), name=name)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
    return float(out.stdout.split()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="LFW images per timing")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-cold", action="store_true", help="skip the compile timings")
    parser.add_argument("--synthetic", action="store_true",
                        help="random 62x47 uint8 images instead of LFW (no data folder)")
    parser.add_argument("--threads", default=None,
                        help="comma-separated package thread counts, e.g. 1,2: a scaling "
                             "table instead of the single-thread table")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"
                                             / "bench_descriptors.json"))
    args = parser.parse_args(argv)
    if args.threads:
        counts = [int(t) for t in args.threads.split(",")]
        table = thread_scaling(counts, args.n, args.repeats)
        print(f"{args.n} synthetic 62x47 images, median of {args.repeats}, 1 BLAS thread, "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        print(f"{'descriptor':<12}" + "".join(f"{f'{t} thr (s)':>12}" for t in counts)
              + "".join(f"{f'x at {t}':>9}" for t in counts[1:]))
        for name, row in table.items():
            print(f"{name:<12}" + "".join(f"{row[t]:>12.3f}" for t in counts)
                  + "".join(f"{row[counts[0]] / row[t]:>9.2f}" for t in counts[1:]))
        return table

    images = (synthetic_images(args.n) if args.synthetic
              else datasets.load_lfw().images[:args.n]).astype(np.float64)
    fitted = {name: make().fit(images[:1]) for name, make in DESCRIPTORS.items()}
    transforms = {name: est.transform for name, est in fitted.items()}
    dims = {name: est.n_features_out_ for name, est in fitted.items()}
    reference = skimage_hog()
    if reference is not None:
        transforms["skimage hog"] = reference
        dims["skimage hog"] = reference(images[:1]).shape[1]
    for transform in transforms.values():  # compile or load the cache, build Gabor's FFT plan
        transform(images[:2])

    times = {name: [] for name in transforms}
    load_before = os.getloadavg()
    with threadpool_limits(1):
        blas = [{k: info.get(k) for k in ("internal_api", "version", "num_threads")}
                for info in threadpool_info()]
        for _ in range(args.repeats):
            for name, transform in transforms.items():
                start = time.perf_counter()
                transform(images)
                times[name].append(time.perf_counter() - start)
    load_after = os.getloadavg()
    cold = {} if args.no_cold else {name: cold_start(name) for name in DESCRIPTORS}

    per_1000 = {name: 1000 * float(np.median(t)) / len(images) for name, t in times.items()}
    source = "synthetic" if args.synthetic else "LFW"
    print(f"{len(images)} {source} images of {images.shape[1]}x{images.shape[2]}, median of "
          f"{args.repeats}, 1 BLAS thread; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after ({os.cpu_count()} CPUs)")
    print(f"{'descriptor':<12} {'dim':>6} {'s / 1000 images':>16} {'x LBP':>7} "
          f"{'first call, empty cache (s)':>28}")
    for name in transforms:
        first = f"{cold[name]:.1f}" if name in cold else "-"
        print(f"{name:<12} {dims[name]:>6} {per_1000[name]:>16.2f} "
              f"{per_1000[name] / per_1000['lbp']:>7.1f} {first:>28}")
    print(f"thread pools while timing: {blas}")

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as out:
        json.dump({"n_images": len(images), "image_shape": list(images.shape[1:]),
                   "repeats": args.repeats, "seconds": times, "seconds_per_1000": per_1000,
                   "ratio_to_lbp": {k: v / per_1000["lbp"] for k, v in per_1000.items()},
                   "dimension": dims, "first_call_empty_cache": cold,
                   "load_average": [load_before, load_after], "thread_pools": blas,
                   "python": platform.python_version(), "cpus": os.cpu_count()},
                  out, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
