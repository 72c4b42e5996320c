"""The convolution kernels of seed 000's network one at a time, on one thread: C1's and C3's
forward pass, the spread of dL/dY, the weight gradient and the input gradient, on a training
batch (128 images of 56x46, as ``bench_cnn.py``), float32 and float64.

Each kernel is called alone on the whole batch (no pool, no driver), ``--repeats`` times after
one warm call; medians, ms. The weight gradient runs as a training step runs it: every unit of
(block of 16 images, output map), which keeps a block's maps in cache across the taps (called
on all 128 images at once it streamed them from memory for each pass over the taps). C1's
input gradient is timed too, although a training step does not compute it (C1's input is the
data). Prints numba's target and the BLAS libraries (threadpoolctl).

    python benchmarks/conv_kernels.py [--repeats 15] [--dtype float32 float64]
"""

import argparse
import time

import metricfit  # noqa: F401  (first, before numpy: OpenBLAS's idle spin, metricfit._blas_env)

# isort: split
import numpy as np
from threadpoolctl import threadpool_info

from metricfit.cnn import _conv_kernels as kernels
from metricfit.cnn._conv_units import conv2d_weight_units
from metricfit.cnn.layers import lenet_table
from metricfit.cnn.threads import CHUNK
from metricfit.parallel import numba_target

N_IMAGES = 128
LAYERS = {  # c_in, c_out, input h, w, kernel, table
    "C1": (1, 15, 56, 46, 7, np.ones((15, 1), bool)),
    "C3": (15, 45, 25, 20, 6, lenet_table(15, 45)),
}


def median_ms(fn, *args, repeats):
    """Median wall time of ``fn(*args)`` in ms, after one warm call."""
    fn(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def layer_times(dtype, layer, repeats, rng):
    """``{kernel: ms}`` of one layer."""
    c_in, c_out, h, w, k, table = LAYERS[layer]
    n, ho, wo = N_IMAGES, h - k + 1, w - k + 1
    X = rng.standard_normal((n, c_in, h, w)).astype(dtype)
    W = (0.1 * rng.standard_normal((c_out, c_in, k, k))).astype(dtype)
    Y = np.empty((n, c_out, ho, wo), dtype)
    dY = rng.standard_normal(Y.shape).astype(dtype)
    pad = (k - 1) * w + k - 1
    Gp = np.zeros(kernels.grid_shape(X.shape, W.shape, True), dtype)
    dX = np.empty((n, c_in, h * w), dtype)
    out = {"forward": median_ms(kernels.conv2d_forward_into, X, W, np.zeros(c_out, dtype),
                                table, Y, True, repeats=repeats),
           "spread": median_ms(kernels._spread_into, dY, Y, w, pad, Gp, repeats=repeats)}
    n_blocks = -(-n // CHUNK)  # the weight units of a training step: (block of 16, map)
    dW = np.zeros((n_blocks, c_out, c_in, k * k), dtype)
    db = np.zeros((n_blocks, c_out), dtype)
    out["weight gradient"] = median_ms(conv2d_weight_units, X, Gp, pad, table, k, k, CHUNK, 0,
                                       n_blocks * c_out, dW, db, repeats=repeats)
    out["input gradient"] = median_ms(kernels._input_grad_into, W, Gp, table, w, dX,
                                      repeats=repeats)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    args = parser.parse_args(argv)
    with metricfit.threads(1):
        target = numba_target()
        print(f"numba compiles for {target.cpu_name!r} ({target.simd}); BLAS:",
              [(i["internal_api"], i["num_threads"]) for i in threadpool_info()])
        rng = np.random.default_rng(0)
        print(f"| dtype | layer | forward | spread | weight gradient | input gradient |"
              f" (ms, one thread, {N_IMAGES} images, median of {args.repeats})")
        print("|---|---|---|---|---|---|")
        for dtype in args.dtype:
            for layer in LAYERS:
                t = layer_times(np.dtype(dtype), layer, args.repeats, rng)
                print(f"| {dtype} | {layer} | {t['forward']:.2f} | {t['spread']:.2f} | "
                      f"{t['weight gradient']:.2f} | {t['input gradient']:.2f} |")


if __name__ == "__main__":
    main()
