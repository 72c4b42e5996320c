"""WPCA's top-k eigenpairs on LFW OCLBP descriptors: thin SVD against the n x n Gram matrix.

The training images of one LFW View 2 restricted experiment (folds 1-8, about 6150 images)
as OCLBP histograms (10,974-d), centred; k = 100; one BLAS thread. Prints both times, their
ratio and the largest relative eigenvalue difference and eigenvector misalignment.

    python benchmarks/bench_wpca.py
    python benchmarks/bench_wpca.py --split [--threads 1,2]   # no data folder needed

``--split`` answers issue 27's question for WPCA and WCCN (what is left to parallelise beside
BLAS / LAPACK?): on random data (6000 x 1000, 600 classes of 10) it times the whole ``fit``
and its only steps that are not a GEMM or a LAPACK call (WPCA: the centring; WCCN: the class
means and deviations), at each package thread count (:func:`metricfit.threads`, which sets
BLAS's threads too), and prints their share.
"""

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

import metricfit
from metricfit import WCCN, WPCA, datasets
from metricfit.features import OCLBP
from metricfit.whitening import _centred, _class_deviations, _top_eigenpairs


def _median_time(fn, repeats=3):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def split(counts, n=6000, d=1000, n_classes=600):
    """``{threads: {step: seconds}}`` of WPCA / WCCN fits and their non-BLAS steps."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    labels = np.repeat(np.arange(n_classes), n // n_classes)
    table = {}
    for t in counts:
        with metricfit.threads(t):
            table[t] = {
                "WPCA fit": _median_time(lambda: WPCA(n_components=200).fit(X)),
                "WPCA centring": _median_time(lambda: _centred(X, 0)),
                "WCCN fit": _median_time(lambda: WCCN().fit(X, labels)),
                "WCCN class deviations": _median_time(lambda: _class_deviations(X, labels)),
            }
    return table


def main():
    data = datasets.load_lfw()
    rows = np.unique(data.pairs_view2[np.isin(data.pairs_view2_fold, range(8))])
    oclbp = OCLBP([(10, 10, 1), (14, 14, 2), (18, 18, 3)]).fit(data.images[:1])
    X = oclbp.transform(data.images[rows]).astype(np.float64)
    X -= X.mean(axis=0)
    runs = {}
    with threadpool_limits(1):
        for solver in ("svd", "gram"):
            start = time.perf_counter()
            eigenpairs = _top_eigenpairs(X.copy(), 100, solver)
            runs[solver] = (time.perf_counter() - start, *eigenpairs)
    (t_svd, l_svd, V_svd), (t_gram, l_gram, V_gram) = runs["svd"], runs["gram"]
    print(f"{X.shape}: svd {t_svd:.1f} s, gram {t_gram:.1f} s, ratio {t_svd / t_gram:.1f}; "
          f"eigenvalues rel. diff {np.abs(l_gram / l_svd - 1).max():.1e}, vectors "
          f"{np.abs(np.abs(np.sum(V_svd * V_gram, axis=0)) - 1).max():.1e}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", action="store_true")
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    if not args.split:
        main()
    else:
        counts = [int(t) for t in args.threads.split(",")]
        table = split(counts)
        for t, row in table.items():
            print(f"{t} thread(s): " + ", ".join(f"{k} {v:.3f} s" for k, v in row.items())
                  + f"; non-BLAS share: WPCA {row['WPCA centring'] / row['WPCA fit']:.1%}, "
                  f"WCCN {row['WCCN class deviations'] / row['WCCN fit']:.1%}")
