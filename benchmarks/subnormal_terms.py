"""float32 evaluations whose pairs lie deep in the sigmoid's tail: subnormal terms and their cost.

Three float32 cases where LDML's or DDML's per-pair gradients ``w_i delta_i`` lie under
float32's smallest normal number. Each prints the share of subnormal entries in what the
loss hands to the next product and the time of that product. The "flushed" column is the
same product with those entries set to 0.

- ``ldml-index``: LDML over index pairs, 4,000 pairs over 8,000 points of width 200, each
  point in one pair, ``M = scale I``, ``b = 0``. It prints R, the scatter of pass 2, the
  product ``R^T X``, and the whole evaluation.
- ``ddml-index``: DDML over index pairs (T = 10, tau = 1), 4,000 pairs over 8,000 points of
  width 300, three quarters dissimilar, ``A = c I`` with c setting the median squared
  distance. It also checks that the index pass and the rows kernel on gathered rows give the
  same R.
- ``ddml-mean``: DDML's ``embedding_cost_grad`` on 4,800 dissimilar pairs of width 100, the
  mean gradient ``dJ/da / n`` that a mapping back-propagates, and the product
  ``X^T dJ/da`` with X of 4,800 x 300.

    python benchmarks/subnormal_terms.py [ldml-index ddml-index ddml-mean] [--repeats 9]

Set the thread variables (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
``NUMBA_NUM_THREADS``, ``METRICFIT_NUM_THREADS``) for the count to measure. To compare two
trees, run the script with ``PYTHONPATH=<tree>``.
"""

import argparse
import time

import metricfit  # first, before numpy: OpenBLAS's idle spin (metricfit._blas_env)

# isort: split
import numpy as np

from metricfit.losses import _index, _rows, ddml, ldml
from metricfit.pairs.index import IndexChunk

TINY = float(np.finfo(np.float32).tiny)


def _median_ms(repeats, fn, *args):
    """Median milliseconds of ``fn(*args)``."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def _subnormal_share(G):
    return float(np.mean((G != 0) & (np.abs(G) < TINY)))


def _flushed(G):
    return np.where(np.abs(G) < TINY, 0, G).astype(G.dtype)


def ldml_index(repeats):
    rng = np.random.default_rng(0)
    n_points, d = 8000, 200
    X = rng.standard_normal((n_points, d)).astype(np.float32)
    index = rng.permutation(n_points).reshape(-1, 2)
    s = np.where(rng.random(index.shape[0]) < 0.5, 1.0, -1.0).astype(np.float32)
    f = ldml.index_objective(X, index, s)
    dist = np.sum((X[index[:, 0]] - X[index[:, 1]]).astype(np.float64) ** 2, axis=1)
    for scale in (0.1, 0.2, 0.25, 0.3, 0.5):
        M = (scale * np.eye(d)).astype(np.float32)
        theta = ldml.pack(M, 0.0).astype(np.float32)
        R = np.zeros((n_points, d), dtype=np.float32)
        ldml._index_pair_block(ldml.metric_embedding(X, M), IndexChunk(index), s, R, 0.0)
        Rf = _flushed(R)
        print(f"ldml-index  scale {scale}: median distance {scale * np.median(dist):.0f}, "
              f"subnormal share of R {_subnormal_share(R):.3f}; evaluation "
              f"{_median_ms(repeats, f, theta):.2f} ms; R^T X "
              f"{_median_ms(repeats, np.matmul, R.T, X):.2f} ms, flushed "
              f"{_median_ms(repeats, np.matmul, Rf.T, X):.2f} ms")


def ddml_index(repeats):
    rng = np.random.default_rng(0)
    n_points, d = 8000, 300
    X = rng.standard_normal((n_points, d)).astype(np.float32)
    index = rng.permutation(n_points).reshape(-1, 2)
    s = -np.ones(index.shape[0], dtype=np.float32)
    s[::4] = 1
    f = ddml.index_objective(X, index, s)
    kernel = ddml._bind(10.0, 1.0)
    for target in (5.0, 11.0, 11.5, 12.0, 20.0):
        A = (np.sqrt(target / (2 * d)) * np.eye(d)).astype(np.float32)
        E = X @ A.T
        R, R_gathered = (np.zeros((n_points, d), dtype=np.float32) for _ in range(2))
        _index.linear_pair_block(E, IndexChunk(index), s, R, kernel)
        _index.linear_pair_block(E, IndexChunk(index), s, R_gathered,
                                 _rows.PairKernel(kernel.rows, *kernel.extra))
        print(f"ddml-index  median |a - b|^2 {target}: subnormal share of R "
              f"{_subnormal_share(R):.3f}; index pass == gathered rows "
              f"{R.tobytes() == R_gathered.tobytes()}; evaluation "
              f"{_median_ms(repeats, f, A):.2f} ms")


def ddml_mean(repeats):
    rng = np.random.default_rng(0)
    n, k, d = 4800, 100, 300
    X = rng.standard_normal((n, d)).astype(np.float32)
    a0, b0 = rng.standard_normal((n, k)), rng.standard_normal((n, k))
    s = -np.ones(n, dtype=np.float32)
    median = float(np.median(np.sum((a0 - b0) ** 2, axis=1)))
    for target in (50.0, 10.5, 11.0):
        c = np.sqrt(target / median)
        a, b = (a0 * c).astype(np.float32), (b0 * c).astype(np.float32)
        _, Ga, _ = ddml.embedding_cost_grad(a, b, s)
        Gf = _flushed(Ga)
        print(f"ddml-mean   median |a - b|^2 {target}: subnormal share of dJ/da "
              f"{_subnormal_share(Ga):.3f}; embedding_cost_grad "
              f"{_median_ms(repeats, ddml.embedding_cost_grad, a, b, s):.2f} ms; "
              f"X^T dJ/da {_median_ms(repeats, np.matmul, X.T, Ga):.2f} ms, flushed "
              f"{_median_ms(repeats, np.matmul, X.T, Gf):.2f} ms")


CASES = {"ldml-index": ldml_index, "ddml-index": ddml_index, "ddml-mean": ddml_mean}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help=f"any of {', '.join(CASES)} (default: all)")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args(argv)
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {list(CASES)}")
    print(f"{metricfit.get_threads()} thread(s)")
    for case in args.cases or CASES:
        CASES[case](args.repeats)


if __name__ == "__main__":
    main()
