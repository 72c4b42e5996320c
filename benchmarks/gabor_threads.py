"""Gabor's transform at several thread counts, in one process (issue 27): the A/B of
``benchmarks/device_gabor_ab.sh``, run once on each tree (``PYTHONPATH=<tree>``).

    python benchmarks/gabor_threads.py --n 512 --threads 1,4,16

Prints the tree, the median seconds at each count (``bench_descriptors.time_descriptor``:
synthetic 62x47 images, BLAS on one thread) and the speed-up over the first count.
"""

import argparse
import sys
from pathlib import Path

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_descriptors  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.threads.split(",")]
    times = {t: bench_descriptors.time_descriptor("gabor", t, args.n, args.repeats)
             for t in counts}
    tree = str(Path(metricfit.__file__).resolve().parent.parent)
    print(f"{tree} gabor {args.n} images: "
          + "; ".join(f"{t} thr {s:.3f} s" for t, s in times.items())
          + "; speed-up " + ", ".join(f"{times[counts[0]] / times[t]:.2f}x at {t}"
                                      for t in counts[1:]), flush=True)


if __name__ == "__main__":
    main()
