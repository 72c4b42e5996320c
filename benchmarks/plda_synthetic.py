"""PLDA against a known two-covariance model (d = 20, 5 samples per identity): relative
Frobenius errors of the learned B and W as the number of identities grows, the correlation of
the learned LLR with the true LLR, and the calibration of the true LLR (actDCF vs minDCF, Cllr
vs minCllr) on 5,000 target and 50,000 non-target trials. The same model as
tests/test_plda.py.

    python benchmarks/plda_synthetic.py
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_plda import draw, relative_error, trials, true_llr, true_model  # noqa: E402

from metricfit import PLDA, metrics  # noqa: E402


def main():
    B, W = true_model(4)
    print("identities  samples  rel.err B (10 it)  rel.err W (10 it)  B (50 it)  W (50 it)")
    for n_identities in (100, 500, 2500, 12500):
        X, labels = draw(B, W, n_identities, 5, np.random.default_rng(n_identities))
        errs = []
        for n_iter in (10, 50):
            plda = PLDA(n_iter=n_iter).fit(X, labels)
            errs += [relative_error(plda.between_covariance_, B),
                     relative_error(plda.within_covariance_, W)]
        print(f"{n_identities:>10} {X.shape[0]:>8} {errs[0]:>18.4f} {errs[1]:>18.4f} "
              f"{errs[2]:>10.4f} {errs[3]:>10.4f}")
    B, W = true_model(5)
    X, labels = draw(B, W, 500, 5, np.random.default_rng(5))
    plda = PLDA().fit(X, labels)
    pairs, y = trials(B, W, 5000, 50000, np.random.default_rng(6))
    truth, learned = true_llr(B, W, pairs), plda.pair_score(pairs)
    print(f"500 identities x 5: corr(learned LLR, true LLR) = "
          f"{np.corrcoef(truth, learned)[0, 1]:.4f}")
    for name, llr in (("true", truth), ("learned", learned)):
        cells = [f"{p}: actDCF {metrics.act_dcf(y, llr, preset=p):.4f} minDCF "
                 f"{metrics.min_dcf(y, llr, preset=p)[0]:.4f}" for p in ("p01", "p001", "p05")]
        print(f"{name} LLR: " + "; ".join(cells) + f"; Cllr {metrics.cllr(y, llr):.4f} "
              f"minCllr {metrics.min_cllr(y, llr):.4f}")


if __name__ == "__main__":
    main()
