"""Fingerprint of the learners' fits, to show a refactor leaves results unchanged.

Fits TSML, CSML, DDML (linear and tanh), a contrastive MLP Siamese, LDML (free, PSD, SGD),
PLDA (two settings) and NCA (linear, mlp, tanh) on fixed digits pairs (PCA-20, scaled to
[-1, 1]), in float64 and float32, on vector pairs and on index pairs into a ``preprocessor``;
with ``--descriptors`` also LBP, OCLBP, HOG, DenseSIFT and Gabor on fixed random images; with
``--convnet`` a 3-epoch SiameseCNN and an L-BFGS Siamese on ``ConvNet`` on 8x8 digits. Saves
every test-pair score, prediction, threshold, ``n_iter_`` and fitted array to one ``.npz``;
``--compare A B`` reports which arrays differ and by how much (0 differ: bit-identical).

    python benchmarks/fit_fingerprint.py --save before.npz [--descriptors] [--convnet]
    # ... change the code ...
    python benchmarks/fit_fingerprint.py --save after.npz [--descriptors] [--convnet]
    python benchmarks/fit_fingerprint.py --compare before.npz after.npz

Run with one thread (``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1``): BLAS
rounds differently on other thread counts. About 20 s (70 s with both options).
"""

import argparse
import pickle
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA


def _pairs(labels, n, rng):
    """n index pairs over the points with these labels, half similar."""
    similar, dissimilar = [], []
    while len(similar) < n // 2:
        a = rng.randint(len(labels))
        b = rng.choice(np.flatnonzero(labels == labels[a]))
        if a != b:
            similar.append((a, b))
    while len(dissimilar) < n // 2:
        a, b = rng.randint(len(labels)), rng.randint(len(labels))
        if labels[a] != labels[b]:
            dissimilar.append((a, b))
    return np.array(similar + dissimilar), np.r_[np.ones(n // 2), -np.ones(n // 2)].astype(int)


def _record(out, name, est, points, index, y, test, kind):
    if kind == "index":
        est.set_params(preprocessor=points).fit(index, y)
        test_pairs = test
    else:
        est.fit(points[index], y)
        test_pairs = points[test]
    out[name + "/score"] = np.asarray(est.pair_score(test_pairs))
    out[name + "/pred"] = est.predict(test_pairs)
    out[name + "/threshold"] = np.array(est.threshold_)
    out[name + "/n_iter"] = np.array(getattr(est, "n_iter_", -1))
    for attr in ("components_", "params_", "metric_", "bias_"):
        if hasattr(est, attr):
            out[f"{name}/{attr}"] = np.asarray(getattr(est, attr))


def learner_fingerprint(out):
    from metricfit import CSML, DDML, LDML, NCA, PLDA, TSML
    from metricfit.learners import Siamese

    X, labels = load_digits(return_X_y=True)
    X = PCA(20, random_state=0).fit_transform(X)
    X = X / np.abs(X).max()
    rng = np.random.RandomState(0)
    index, y = _pairs(labels, 600, rng)
    test = np.array([(rng.randint(len(X)), rng.randint(len(X))) for _ in range(300)])
    learners = {
        "tsml": lambda: TSML(lam=1e-2, max_iter=50),
        "tsml-wccn": lambda: TSML(lam=1e-2, init="wccn", max_iter=50),
        "tsml-norm": lambda: TSML(lam=1e-2, normalize=True, max_iter=50),
        "tsml-sgd": lambda: TSML(lam=1e-2, solver="sgd", max_iter=400, random_state=0),
        "csml": lambda: CSML(lam=1e-2, max_iter=50),
        "csml-wccn-norm": lambda: CSML(lam=1e-2, init="wccn", normalize=True, max_iter=50),
        "ddml": lambda: DDML(lam=1e-2, max_iter=50),
        "ddml-tanh": lambda: DDML(lam=1e-2, mapping="tanh", n_components=10, max_iter=30,
                                  random_state=0),
        "contrastive-mlp-norm": lambda: Siamese(loss="contrastive", mapping="mlp",
                                                normalize=True, n_components=5, max_iter=30,
                                                random_state=0),
        "ldml": lambda: LDML(lam=1e-2, max_iter=50),
        "ldml-psd": lambda: LDML(lam=1e-2, constraint="psd", max_iter=50),
        "ldml-sgd": lambda: LDML(lam=1e-2, solver="sgd", max_iter=400, random_state=0),
        "plda": lambda: PLDA(),
        "plda-singletons": lambda: PLDA(dissimilar_pairs="singletons"),
    }
    for dtype in (np.float64, np.float32):
        points, dn = X.astype(dtype), np.dtype(dtype).name
        for kind in ("vector", "index"):
            for name, make in learners.items():
                _record(out, f"{name}/{dn}/{kind}", make(), points, index, y, test, kind)
        for mapping in ("linear", "mlp", "tanh"):
            est = NCA(n_components=5, mapping=mapping, max_iter=20, random_state=0)
            est.fit(points, labels)
            out[f"nca-{mapping}/{dn}/score"] = est.pair_score(points[test])
            out[f"nca-{mapping}/{dn}/threshold"] = np.array(est.threshold_)
            out[f"nca-{mapping}/{dn}/n_iter"] = np.array(est.n_iter_)


def descriptor_fingerprint(out):
    from metricfit.features import HOG, LBP, OCLBP, DenseSIFT, Gabor

    images = np.random.default_rng(0).random((300, 62, 47)) * 255
    pairs = images[:40].reshape(20, 2, 62, 47)
    descriptors = (LBP(), OCLBP(), HOG(), DenseSIFT(), Gabor(), LBP(block_size=(7, 9), radius=2))
    for i, est in enumerate(descriptors):
        name = f"{type(est).__name__.lower()}-{i}"
        est.fit(images)
        out[name + "/images"] = est.transform(images)
        out[name + "/pairs"] = est.transform(pairs)
        out[name + "/unpickled"] = pickle.loads(pickle.dumps(est)).transform(images[:5])


def convnet_fingerprint(out):
    from metricfit.learners import Siamese
    from metricfit.learners.siamese_cnn import SiameseCNN
    from metricfit.mappings import ConvNet

    X, labels = load_digits(return_X_y=True)
    X = (X / 16.0).reshape(-1, 8, 8)
    rng = np.random.RandomState(0)
    index, y = _pairs(labels, 400, rng)
    test = np.array([(rng.randint(len(X)), rng.randint(len(X))) for _ in range(200)])
    for dtype in ("float32", "float64"):
        est = SiameseCNN(n_components=10, n_maps=(4, 8, 30), max_epochs=3, dtype=dtype,
                         random_state=0, n_jobs=1).fit(X[index], y)
        out[f"siamese-cnn/{dtype}/score"] = est.pair_score(X[test])
        out[f"siamese-cnn/{dtype}/threshold"] = np.array(est.threshold_)
        flat = X.reshape(len(X), -1).astype(dtype)
        est = Siamese(loss="ddml", mapping=ConvNet((8, 8), 10, n_maps=(4, 8, 30)), max_iter=15,
                      random_state=0).fit(flat[index], y)
        out[f"siamese-convnet/{dtype}/score"] = est.pair_score(flat[test])
        out[f"siamese-convnet/{dtype}/n_iter"] = np.array(est.n_iter_)


def compare(path_a, path_b):
    """Print the arrays that differ between two fingerprints; return how many."""
    a, b = np.load(path_a), np.load(path_b)
    only = set(a.files) ^ set(b.files)
    if only:
        print("in one file only:", ", ".join(sorted(only)))
    differ = 0
    for key in sorted(set(a.files) & set(b.files)):
        x, y = a[key], b[key]
        if x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y):
            continue
        differ += 1
        if x.shape == y.shape and x.dtype.kind == "f":
            diff = np.abs(x.astype(np.float64) - y)
            rel = diff / np.maximum(np.abs(x.astype(np.float64)), np.finfo(np.float64).tiny)
            print(f"{key}: max abs diff {diff.max():.3g}, max rel diff {rel.max():.3g}")
        else:
            print(f"{key}: differs ({x.dtype}{x.shape} vs {y.dtype}{y.shape})")
    print(f"{len(set(a.files) & set(b.files))} arrays compared, {differ} differ")
    return differ + len(only)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", help="write the fingerprint to this .npz")
    parser.add_argument("--descriptors", action="store_true")
    parser.add_argument("--convnet", action="store_true")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = parser.parse_args()
    if args.compare:
        raise SystemExit(1 if compare(*args.compare) else 0)
    if not args.save:
        parser.error("give --save FILE or --compare A B")
    warnings.simplefilter("ignore")  # convergence warnings of the short fits
    out = {}
    learner_fingerprint(out)
    if args.descriptors:
        descriptor_fingerprint(out)
    if args.convnet:
        convnet_fingerprint(out)
    np.savez(args.save, **out)
    print(f"{len(out)} arrays saved to {args.save}")


if __name__ == "__main__":
    main()
