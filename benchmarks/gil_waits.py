"""How often a descriptor's ``transform`` takes the GIL back: each time it must wait for it.

A workload that runs on Python threads scales only as far as the GIL lets it: every call
into C that releases the GIL (an FFT, a numba ``nogil`` kernel, a large NumPy operation) has
to take it back, and on many threads each of these turns is a hand-off between threads
(a futex wake-up, more under a sandboxing kernel). This counts the turns: a pure-Python thread
that never releases the GIL runs beside ``transform`` on one package thread, with
``sys.setswitchinterval(SWITCH)``, so the descriptor waits about ``SWITCH`` seconds each time
it wants the GIL back. ``(time beside the thread - time alone) / SWITCH`` estimates the turns
(an estimate: a wait may be shorter than the interval).

    python benchmarks/gil_waits.py                 # every descriptor, 256 synthetic images
    python benchmarks/gil_waits.py gabor --n 512

Prints, per descriptor, the time alone, the time beside the Python thread and the turns per
image.
"""

import argparse
import sys
import threading
import time
from pathlib import Path

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_descriptors import DESCRIPTORS, synthetic_images  # noqa: E402

SWITCH = 0.0005  # seconds: Python's switch interval during the measurement


def _spin(stop):
    while not stop.is_set():  # pure Python: holds the GIL until the interval forces a switch
        pass


def turns_per_image(name, n):
    """``(seconds alone, seconds beside a pure-Python thread, GIL turns per image)`` of
    ``transform`` of ``n`` synthetic 62x47 images by descriptor ``name``, one package thread."""
    images = synthetic_images(n)
    with threadpool_limits(1), metricfit.threads(1):
        descriptor = DESCRIPTORS[name]().fit(images[:1])
        descriptor.transform(images[:16])  # compile / load the kernels
        t0 = time.perf_counter()
        descriptor.transform(images)
        alone = time.perf_counter() - t0
        stop = threading.Event()
        spinner = threading.Thread(target=_spin, args=(stop,))
        old = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH)
        try:
            spinner.start()
            t0 = time.perf_counter()
            descriptor.transform(images)
            beside = time.perf_counter() - t0
        finally:
            stop.set()
            spinner.join()
            sys.setswitchinterval(old)
    return alone, beside, max(beside - alone, 0.0) / SWITCH / n


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=list(DESCRIPTORS),
                        help=f"descriptors (default: all of {', '.join(DESCRIPTORS)})")
    parser.add_argument("--n", type=int, default=256, help="images (default 256)")
    args = parser.parse_args(argv)
    print(f"{'descriptor':10s} {'alone ms':>10s} {'beside ms':>10s} {'turns/image':>12s}")
    for name in args.names:
        alone, beside, turns = turns_per_image(name, args.n)
        print(f"{name:10s} {alone * 1e3:10.1f} {beside * 1e3:10.1f} {turns:12.1f}")


if __name__ == "__main__":
    main()
