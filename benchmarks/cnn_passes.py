"""Where a convnet training step spends its time on each thread count: every threaded pass
(each call of ``map_spans``, named by its driver or its function) and the rest (issue 27).

One process per thread count; the training step of bench_cnn.py (64 pairs of 56x46, float32)
``--rounds`` times; medians per step, ms. "rest" is the step less its threaded passes: the
loss, the small GEMMs and element-wise work between the passes, the hand-offs' tails.

    python benchmarks/cnn_passes.py --threads 1 2 --rounds 20
"""

import collections
import json
import os
import sys
import time
from pathlib import Path

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numpy as np

from metricfit.cnn import _drivers  # conv_backward_spans' stages, its first argument

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scaling import json_at, per_count_parser  # noqa: E402

STAGES = {_drivers.BLOCKS: "blocks", _drivers.IMAGES: "images", _drivers.WEIGHTS: "weights"}


def _name(fn, driver, args=()):
    """The driver's name (with its stage where it takes one), else the function's."""
    if driver is not None:
        if driver is _drivers.conv_backward_spans:
            return f"{driver.__name__}[{STAGES[args[0]]}]"
        return driver.__name__
    return getattr(fn, "__qualname__", repr(fn)).replace(".<locals>", "")


def measure(threads, rounds):
    """``{pass: median ms per step}`` with ``"step"`` and ``"rest"``, on ``threads``."""
    import bench_cnn

    from metricfit.cnn import layers, network, num_threads
    from metricfit.cnn import threads as cnn_threads

    real = cnn_threads.map_spans
    spent = collections.defaultdict(float)

    def timed(fn, costs, driver=None, args=()):
        t0 = time.perf_counter()
        try:
            return real(fn, costs, driver, args)
        finally:
            spent[_name(fn, driver, args)] += time.perf_counter() - t0

    layers.map_spans = network.map_spans = timed
    net, theta, objective, _ = bench_cnn._workload()
    rows = np.arange(bench_cnn.N_PAIRS)
    per_step = collections.defaultdict(list)
    with metricfit.threads(threads), num_threads(threads):
        objective.batch(theta, rows)
        for _ in range(rounds):
            spent.clear()
            t0 = time.perf_counter()
            objective.batch(theta, rows)
            step = time.perf_counter() - t0
            per_step["step"].append(step)
            per_step["rest"].append(step - sum(spent.values()))
            for name, seconds in spent.items():
                per_step[name].append(seconds)
    return {name: 1e3 * float(np.median(v)) for name, v in per_step.items()}


def main(argv=None):
    args = per_count_parser(__doc__.splitlines()[0], 20).parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one, args.rounds)))
        return
    table = {}
    for threads in args.threads:
        out = json_at(__file__, threads, "--rounds", args.rounds)
        if "error" in out:
            print(f"{threads} threads failed: {out['error']}")
            continue
        table[threads] = out
    names = sorted({n for r in table.values() for n in r} - {"step", "rest"}) + ["rest", "step"]
    print(f"convnet training step by pass, median of {args.rounds}, ms, {os.cpu_count()} CPUs")
    print("| pass | " + " | ".join(f"{t} thr" for t in table) + " |")
    print("|---|" + "---|" * len(table))
    for name in names:
        cells = [f"{r[name]:.2f}" if name in r else "-" for r in table.values()]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
