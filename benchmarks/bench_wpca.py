"""WPCA's top-k eigenpairs on LFW OCLBP descriptors: thin SVD against the n x n Gram matrix.

The training images of one LFW View 2 restricted experiment (folds 1-8, about 6150 images)
as OCLBP histograms (10,974-d), centred; k = 100; one BLAS thread. Prints both times, their
ratio and the largest relative eigenvalue difference and eigenvector misalignment.

    python benchmarks/bench_wpca.py
"""

import time

import numpy as np
from threadpoolctl import threadpool_limits

from metricfit import datasets
from metricfit.features import OCLBP
from metricfit.whitening import _top_eigenpairs


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
    main()
