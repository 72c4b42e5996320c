"""The ``metricfit`` command.

``metricfit verify`` learns metrics on pairs and reports verification accuracy:

- ``--data digits`` (default, embedded: scikit-learn's bundled digits, no download): pairs
  drawn from half of the images train, pairs from the other images validate (lambda and
  threshold) and test. The classes are shared between the halves (ten digit classes are too
  few for an unseen-class protocol), the images are not. ``--setting`` does not apply.
- ``--data lfw``: LFW View 2 on $METRICFIT_DATA (or ``--data-home``), the ten experiments of
  seed 002 III.A (8 folds train, the next validates, the one after tests); ``lfw/pairs.txt``
  must parse and match the npz pairs. Restricted: the official pairs of the 8 folds train;
  unrestricted (seed 004 5.2.2): ``--pairs`` (3000) same-person and as many different-person
  pairs drawn from all images of the 8 folds' people. Official validation and test pairs.
- ``--data att|yale|PATH.npz`` (keys ``images`` (n, H, W) or ``X`` (n, d), and ``labels``
  (n,)): the identities go to min(10, n_identities // 3) folds (att: 10 of 4 subjects, yale: 5
  of 3); fixed pairs within each fold (all same-identity pairs, as many different-identity
  ones); the same rotation (n-2 folds train, 1 validates, 1 tests); unrestricted as for lfw.

Features (computed once on all images; no labels): pixels, sqrt, lbp (uniform LBP 8,1 on 10x10
blocks; ``--lbp-block``, ``--lbp-radius``; several values of either, e.g. ``--lbp-block 5,8,10
--lbp-radius 1,1+2``: each cell side x radius setting runs the whole protocol and one is
chosen per method and experiment by validation maxDA; ``1+2`` concatenates the histograms of
radii 1 and 2 of each cell), oclbp (seed 002's 3 configurations), dsift (dense SIFT, 3 scales),
gabor (5 scales x 8 orientations, 10x10 block means), hog (9 bins, 8x8 cells, 2x2 blocks),
and the square root of each (sqrt-lbp, ...); blocks at most half the image (digits: 4x4),
HOG cells at most a quarter, SIFT patches at most the image. Method aliases csml, tsml, ddml
= csml-i, tsml-i, ddml-i; ``--similar-only`` makes tsml-i, ddml-i, csml-i,
tsml-wccn their -sim variants. ``--fusion``: a row 'fusion', a linear SVM on the
methods' scores fitted on each validation fold (seed 002 IV.D). ``--methods cnn``: the siamese
convnet (SiameseCNN, contrastive loss, L2 energy, augmentation, weight decay, cosine schedule;
``--cnn-epochs``) on the raw image pairs, whatever ``--features``; early stopping and threshold
on the validation fold; no ``--snorm``. ``--experiments 0,1,2``: only those experiments of
the fold rotation (not digits). ``--plot OUT.png`` (matplotlib:
``pip install metricfit[plot]``): ROC and FA/FR curves, averaged over the experiments.

``metricfit score``: a back-end fitted on your labelled embeddings (``--train``: ``.npy`` +
ids, ``.npz`` or a text table) scores a trial list (``--trials``, ``enrol test`` lines) with
models enrolled from ``--enrol`` (N-vs-M) and segments of ``--test``; ``--norm s-norm|as-norm
--cohort``, ``--calibrate DEV_TRIALS --prior P`` (LLRs out). ``metricfit evaluate``: EER,
minDCF / actDCF at P_target 0.01, 0.001 and ``--prior`` (with the trial counts, the step of
one error and an interval), Cllr, minCllr, FNMR at FMR, ``--det``, strict ``--json``. A
``--data PATH.npz`` of verify takes your pairs and folds (``--pairs PAIRS.txt`` LFW style, or
``pairs`` / ``pair_labels`` / ``pair_folds`` arrays), ``--wpca none|N``, ``--baseline
raw|wpca`` and ``--prior``; see ``docs/user_guide/embeddings.rst``.

``metricfit bench``: one cost-and-gradient call of the prepared TSML / CSML / DDML objectives
against the two-GEMM bound (numpy only); with torch, LDML and JSON: ``benchmarks/
bench_gradients.py`` in the source repository.
"""

import os
import sys

from . import bench, evaluate, fuse, score, verify
from ._args import FEATURES, _parser  # noqa: F401  (docs/_apigen.py and the tests read _parser)
from ._output import strict_json  # noqa: F401
from .verify import _extractor, _features  # noqa: F401

__all__ = ["main"]
_COMMANDS = {"verify": verify.run, "fuse": fuse.run, "bench": bench.run, "score": score.run,
             "evaluate": evaluate.run}


def main(argv=None):
    """Run the command; user errors print one line ``metricfit: error: ...`` and return 2."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:  # argparse: --help (0) or a user error (2), already printed
        return exit_.code
    try:
        return _COMMANDS[args.command](args)
    except (FileNotFoundError, ValueError) as error:
        print(f"metricfit: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `metricfit verify | head`: the reader has gone, no traceback
        _silence_stdout()
        return 1


def _silence_stdout():
    """Point stdout at devnull, so that the interpreter's flush at exit raises no second
    BrokenPipeError (the recipe of Python's ``signal`` documentation, "Note on SIGPIPE")."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a captured or replaced stdout
        return
    os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
