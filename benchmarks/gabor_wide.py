"""Gabor with wider kernels (issue 27): the separable transform against the FFT reference
(``metricfit.features._gabor.gabor_magnitudes``) at ``sigma_factor`` 1, 2 and 4, one thread,
32 random 62x47 images; ms per image and the largest relative difference.

    python benchmarks/gabor_wide.py
"""

import time

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numpy as np

from metricfit.features import Gabor
from metricfit.features._gabor import gabor_bank, gabor_magnitudes


def main():
    X = np.random.default_rng(0).random((32, 62, 47))
    metricfit.set_threads(1)
    for sf in (1.0, 2.0, 4.0):
        g = Gabor(sigma_factor=sf).fit(X)
        g.transform(X[:2])
        start = time.perf_counter()
        ours = g.transform(X)
        t_ours = time.perf_counter() - start
        kernels = gabor_bank(g.frequencies_, 8, sf)
        gabor_magnitudes(X[:2], kernels, (10, 10))
        start = time.perf_counter()
        ref = gabor_magnitudes(X, kernels, (10, 10))
        t_ref = time.perf_counter() - start
        rel = np.max(np.abs(ours - ref) / np.abs(ref))
        print(f"sigma_factor {sf}: separable {1e3 * t_ours / 32:.1f} ms/img, FFT "
              f"{1e3 * t_ref / 32:.1f} ms/img, max rel {rel:.1e}", flush=True)


if __name__ == "__main__":
    main()
