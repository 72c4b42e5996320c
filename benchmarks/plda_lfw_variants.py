"""PLDA variants on LFW View 2 restricted, chosen on the validation fold only.

For each of the ten experiments (8 folds train, the next validates, the one after tests; WPCA
to 100 fitted on the training pairs' images, as `metricfit verify`), 16 variants of
``LengthNormalizer(whiten) -> PLDA``: EM iterations 10 (Kaldi) or 50; the images of dissimilar
training pairs ignored or classes of one; two-covariance or simplified PLDA (rank 50);
length-normalisation whitening on or off. Each variant's threshold is chosen on the validation
fold (maxDA); prints each variant's mean validation and test accuracy and the test accuracy of
the variant with the best *validation* accuracy in each experiment (no test data in any
choice).

    python benchmarks/plda_lfw_variants.py pixels      # or sqrt-lbp (8x8-pixel LBP cells)
"""
import itertools
import sys

import numpy as np
from sklearn.pipeline import make_pipeline
from threadpoolctl import threadpool_limits

from metricfit.backend import LengthNormalizer
from metricfit.cli import _features
from metricfit.datasets import load_lfw_view2
from metricfit.learners.plda import PLDA
from metricfit.metrics import accuracy_at_threshold, max_decision_accuracy
from metricfit.pairs import FoldRotation
from metricfit.whitening import WPCA

feat = sys.argv[1]
data = load_lfw_view2(None)
vec = _features(data.images, feat, True, 8)
variants = {}
for it, dis, q, wh in itertools.product((10, 50), ("ignore", "singletons"), (None, 50),
                                        (True, False)):
    variants[(it, dis, q, wh)] = lambda it=it, dis=dis, q=q, wh=wh: make_pipeline(
        LengthNormalizer(whiten=wh), PLDA(n_iter=it, dissimilar_pairs=dis, n_components=q))
res = {k: [] for k in variants}
with threadpool_limits(1):
    rotation = FoldRotation(data.pair_fold, n_train_folds=8)
    for e in range(10):
        tr, (va,), te = rotation.rotation(e)
        f = data.pair_fold
        sp = [(data.pairs[np.isin(f, tr)], data.y[np.isin(f, tr)]),
              (data.pairs[f == va], data.y[f == va]), (data.pairs[f == te], data.y[f == te])]
        imgs = np.unique(sp[0][0])
        emb = WPCA(n_components=100).fit(vec[imgs]).transform(vec)
        d = [(emb[i], y) for i, y in sp]
        for k, make in variants.items():
            m = make().fit(*d[0])
            v, t = max_decision_accuracy(d[1][1], m.decision_function(d[1][0]))
            res[k].append((v, accuracy_at_threshold(d[2][1], m.decision_function(d[2][0]), t)))
        print(e, flush=True)
for k, r in res.items():
    r = np.array(r)
    print(k, "val %.2f test %.2f +- %.2f" % (100 * r[:, 0].mean(), 100 * r[:, 1].mean(),
                                             100 * r[:, 1].std(ddof=1) / np.sqrt(10)))
# per-experiment selection on validation
sel = []
keys = list(res)
for e in range(10):
    best = max(keys, key=lambda k: res[k][e][0])
    sel.append(res[best][e][1])
print("val-selected test %.2f" % (100*np.mean(sel)))
