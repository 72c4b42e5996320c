"""The convnet's inference (``ConvNetwork.transform``) against the whole-batch forward pass it
replaced: time and minor page faults a call, in one process, alternated.

``transform`` carries 16 images at a time through C1-S4 in each thread's own reused arrays
(``ConvNetwork._infer_layers``); the whole-batch path (``_forward_layers``, what transform ran
before, and what the training step runs) allocates every layer's maps for the whole batch on
each call. Seed 000's network, 128 random images of 56x46 (as ``bench_cnn.py``), float32.
Medians of ``--repeats`` calls after one warm call; faults from ``resource.getrusage``
(``ru_minflt``) over those calls, per call. Both give the same numbers (checked here, bit for
bit). With ``--workspace`` each round also times, between the two, the whole-batch pass into
a :class:`metricfit.cnn._workspace.Workspace` that keeps its arrays (as a training step's,
between which a fit may score a validation set). How many pages a whole-batch call maps
afresh depends on what else the process holds and in which order it was allocated (C's
``malloc`` returns freed blocks to the system or keeps them): with ``--workspace``, on the
2-core machine, 3,505-3,507 a call from the second round on; without, none.

    python benchmarks/transform_memory.py [--threads 1 2] [--repeats 15] [--rounds 3]
        [--workspace]
"""

import argparse
import resource
import time

import metricfit  # noqa: F401  (first, before numpy: OpenBLAS's idle spin, metricfit._blas_env)

# isort: split
import numpy as np

from metricfit.cnn import ConvNetwork, network_spec, num_threads
from metricfit.cnn._workspace import Workspace
from metricfit.cnn.threads import blas_single_threaded

SHAPE, N_IMAGES = (56, 46), 128


def timed(fn, repeats):
    """``(median ms, minor page faults a call)`` of ``fn()`` over ``repeats`` calls."""
    fn()
    times = []
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    return 1e3 * float(np.median(times)), faults / repeats


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workspace", action="store_true",
                        help="also time the whole-batch pass into a kept Workspace (as a "
                        "training step's), between the two")
    args = parser.parse_args(argv)

    net = ConvNetwork(network_spec(SHAPE))
    theta = net.init(0)
    rng = np.random.default_rng(0)
    images = rng.normal(size=(N_IMAGES,) + SHAPE).astype(np.float32)
    params = net.unpack(theta, np.float32)
    batch = np.ascontiguousarray(images[:, None])
    workspace = Workspace()

    def whole_batch():  # what transform ran on a batch before the spans
        with blas_single_threaded():
            return net._forward_layers(params, batch)

    def kept_pass():  # the same into a kept Workspace (as a training step's)
        with blas_single_threaded():
            return net._forward_layers(params, batch, workspace)

    def spans():
        return net.transform(theta, images, N_IMAGES)

    print(f"| threads | round | transform ms | faults a call | whole-batch ms | faults a call "
          f"| kept workspace ms | faults a call |  ({N_IMAGES} images {SHAPE[0]}x{SHAPE[1]}, "
          f"float32, median of {args.repeats})")
    print("|---|---|---|---|---|---|---|---|")
    for threads in args.threads:
        with num_threads(threads):
            whole = whole_batch()  # the whole-batch path first, then the spans (the order
            assert np.array_equal(spans(), whole)  # decides what the allocator holds)
            for r in range(args.rounds):
                theirs = timed(whole_batch, args.repeats)
                kept = timed(kept_pass, args.repeats) if args.workspace else (np.nan, np.nan)
                ours = timed(spans, args.repeats)
                print(f"| {threads} | {r + 1} | {ours[0]:.2f} | {ours[1]:.0f} | {theirs[0]:.2f} "
                      f"| {theirs[1]:.0f} | {kept[0]:.2f} | {kept[1]:.0f} |")


if __name__ == "__main__":
    main()
