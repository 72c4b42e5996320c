"""
DrLIM on digits: a 2-D map learned from a neighbourhood graph
=============================================================

DrLIM on scikit-learn's digits: a 2-D mapping learned from a neighbourhood graph, applied to
digits it never saw (seed 003, Hadsell, Chopra and LeCun's "Dimensionality Reduction by
Learning an Invariant Mapping").

No labels are used to learn the map. The training digits' 5-NN graph (Euclidean, on pixels)
gives the similar pairs; as many non-neighbour pairs are drawn as dissimilar
(:func:`metricfit.pairs.neighbourhood_pairs`). A siamese MLP (64 -> 20 -> 2, tanh) is trained
with the contrastive loss with margin 1 (``Siamese(loss='contrastive', mapping='mlp')``) on
those index pairs. Unlike Isomap or LLE, the result is a function: the held-out digits are
mapped by it. How well they land next to their class is measured by a 5-NN classifier fitted
on the training digits' 2-D embeddings (their labels are used only here), against the same
classifier on a 2-D PCA of the same data.

From the repository root (the figure of the results page is the ``--plot`` file)::

    python examples/linear/plot_drlim_digits.py [--plot docs/drlim_digits.png] [--seed 0]

The neighbour graph is computed on pixel values with exact ties, which BLAS round-off
breaks: with one BLAS thread (as the documentation build runs it) the graph has one pair
more than with two, and the held-out accuracy differs (see the results page).
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier

from metricfit import Siamese
from metricfit.pairs import neighbourhood_pairs


def knn_accuracy(Z_train, y_train, Z_test, y_test, k=5):
    return KNeighborsClassifier(n_neighbors=k).fit(Z_train, y_train).score(Z_test, y_test)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--plot", default=None, metavar="OUT.png")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-neighbors", type=int, default=5)
    p.add_argument("--max-iter", type=int, default=300)
    args = p.parse_args()

    digits = load_digits()
    X = digits.data / 16.0
    X_train, X_test, y_train, y_test = train_test_split(
        X, digits.target, test_size=0.3, stratify=digits.target, random_state=args.seed)
    index, s = neighbourhood_pairs(X_train, n_neighbors=args.n_neighbors,
                                   random_state=args.seed)
    start = time.perf_counter()
    drlim = Siamese(loss="contrastive", loss_params={"margin": 1.0}, mapping="mlp",
                    n_components=2, n_hidden=20, lam=1e-4, max_iter=args.max_iter,
                    preprocessor=X_train, random_state=args.seed).fit(index, s)
    seconds = time.perf_counter() - start
    pca = PCA(n_components=2).fit(X_train)
    embeddings = {"DrLIM (MLP + contrastive)": (drlim.transform(X_train), drlim.transform(X_test)),
                  "PCA": (pca.transform(X_train), pca.transform(X_test))}
    print(f"{len(X_train)} training digits, {len(X_test)} held out; {int((s == 1).sum())} "
          f"neighbour and {int((s == -1).sum())} non-neighbour pairs; DrLIM fit {seconds:.1f} s, "
          f"{drlim.n_iter_} L-BFGS iterations")
    print("5-NN accuracy of held-out digits in the 2-D embedding:")
    for name, (Z_train, Z_test) in embeddings.items():
        print(f"  {name:28s} {100 * knn_accuracy(Z_train, y_train, Z_test, y_test):5.1f} %")
    plot(args.plot, embeddings, y_train, y_test)


def plot(path, embeddings, y_train, y_test):
    """Draw both 2-D maps; save the figure to ``path`` when one is given."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(embeddings), figsize=(11, 5))
    for ax, (name, (Z_train, Z_test)) in zip(axes, embeddings.items(), strict=True):
        ax.scatter(*Z_train.T, c=y_train, cmap="tab10", s=4, alpha=0.15, vmin=0, vmax=9)
        for digit in range(10):
            Z = Z_test[y_test == digit]
            ax.scatter(*Z.T, color=plt.cm.tab10(digit), s=10, label=str(digit))
            ax.annotate(str(digit), np.median(Z, axis=0), fontsize=14, weight="bold")
        acc = knn_accuracy(Z_train, y_train, Z_test, y_test)
        ax.set_title(f"{name}: held-out 5-NN accuracy {100 * acc:.1f} %", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0].legend(markerscale=2, fontsize=8, loc="best", title="held out")
    fig.suptitle("digits mapped to 2-D: training digits faint, held-out digits solid")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=100)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
