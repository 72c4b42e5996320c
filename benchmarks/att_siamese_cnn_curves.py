"""Diagnostic for the AT&T protocol: how verification of *unseen* subjects evolves while the
siamese convnet trains, for several losses and energies.

Trains on the 35 training subjects of one split (pairs as in ``att_siamese_cnn.py``) without
early stopping and records, after every epoch, the maxDA of the pair energy on all pairs of
the split's 5 test subjects (passed as ``validation_data``, so only watched, never used to
choose anything). This looks at the test subjects: it explains a result, it is not one.

    python benchmarks/att_siamese_cnn_curves.py --split 0 --epochs 12    # 4 runs, ~6 min
"""

import argparse
import json
import time

import numpy as np
from att_siamese_cnn import image_pairs, load_att_56x46, test_subjects

from metricfit.learners.siamese_cnn import SiameseCNN

RUNS = [{}, {"learning_rate": 1e-3}, {"loss": "contrastive"},
        {"loss": "contrastive", "energy": "l2"}]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    images, labels, _ = load_att_56x46()
    test = np.isin(labels, test_subjects(args.split))
    pairs, y = image_pairs(images[~test], labels[~test], args.seed)
    watched = image_pairs(images[test], labels[test], args.seed)
    curves = []
    for params in RUNS:
        start = time.perf_counter()
        est = SiameseCNN(max_epochs=args.epochs, n_iter_no_change=None, random_state=args.seed,
                         **params).fit(pairs, y, validation_data=watched)
        curve = est.curves_["validation"]
        curves.append({"params": params, "unseen_maxDA": curve,
                       "seconds": time.perf_counter() - start})
        print(f"{json.dumps(params):45s} unseen maxDA by epoch: "
              + " ".join(f"{v:.3f}" for v in curve), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(curves, f, indent=1)


if __name__ == "__main__":
    main()
