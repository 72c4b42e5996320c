"""The ``metricfit`` command.

``metricfit verify`` learns metrics on pairs and reports verification accuracy:

- ``--data digits`` (default, embedded: scikit-learn's bundled digits, no download): pairs
  drawn from half of the images train, pairs from the other images validate (lambda and
  threshold) and test. The classes are shared between the halves (ten digit classes are too
  few for an unseen-class protocol), the images are not.
- ``--data lfw``: the LFW View 2 restricted protocol of seed 002 III.A on $METRICFIT_DATA
  (ten experiments: 8 folds train, the next validates, the one after tests).
"""

import argparse
import json
import sys
import time

import numpy as np

from . import verification


def _parser():
    parser = argparse.ArgumentParser(prog="metricfit", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser("verify", help="learn metrics on pairs, report verification")
    verify.add_argument("--data", choices=["digits", "lfw"], default="digits")
    verify.add_argument("--features", choices=["pixels", "sqrt"], default="pixels",
                        help="raw pixel values or their square root")
    verify.add_argument("--methods", default=",".join(verification.DEFAULT_METHODS),
                        help=f"comma-separated, from {','.join(verification.METHODS)}")
    verify.add_argument("--n-components", type=int, default=None,
                        help="WPCA dimension (default: 32 digits, 100 lfw)")
    verify.add_argument("--lams", default=",".join(map(str, verification.DEFAULT_LAMS)),
                        help="comma-separated lambda grid, chosen on the validation pairs")
    verify.add_argument("--repeats", type=int, default=5, help="digits: random splits")
    verify.add_argument("--max-iter", type=int, default=200)
    verify.add_argument("--threads", type=int, default=None,
                        help="BLAS threads (default: 1 for digits, whose GEMMs are too small "
                             "to share; the BLAS default for lfw)")
    verify.add_argument("--data-home", default=None, help="overrides $METRICFIT_DATA")
    verify.add_argument("--json", default=None, metavar="OUT", help="write results as JSON")
    verify.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def _parse_list(text, kind, allowed=None):
    items = [kind(t) for t in text.split(",") if t.strip()]
    unknown = [t for t in items if allowed is not None and t not in allowed]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(allowed)}.")
    return items


def _features(vectors, kind):
    vectors = np.asarray(vectors, dtype=np.float64)
    return np.sqrt(vectors) if kind == "sqrt" else vectors


def _run(args, methods, lams, progress):
    if args.data == "digits":
        from sklearn.datasets import load_digits

        images, labels = load_digits(return_X_y=True)
        experiments = verification.run_digits(
            _features(images, args.features), labels, methods, args.n_components or 32, lams,
            n_repeats=args.repeats, max_iter=args.max_iter, progress=progress)
        return experiments, "digits: train/val/test pairs on disjoint images, shared classes"
    from .datasets import load_lfw

    lfw = load_lfw(args.data_home)
    vectors = _features(lfw.images.reshape(len(lfw.images), -1), args.features)
    y = np.where(lfw.pairs_view2_label == 1, 1, -1)
    experiments = verification.run_lfw_restricted(
        vectors, lfw.pairs_view2, y, lfw.pairs_view2_fold, methods, args.n_components or 100,
        lams, max_iter=args.max_iter, progress=progress)
    return experiments, "LFW View 2 restricted (seed 002 III.A): 10 experiments, 8/1/1 folds"


def verify(args):
    methods = _parse_list(args.methods, str, verification.METHODS)
    lams = _parse_list(args.lams, float)
    start = time.perf_counter()

    def progress(experiment, result):
        if not args.quiet:
            print(f"  experiment {experiment + 1}: {result.method:<10} test accuracy "
                  f"{100 * result.accuracy:6.2f}%  (lambda {result.lam:g})",
                  file=sys.stderr, flush=True)

    threads = args.threads if args.threads is not None else (1 if args.data == "digits" else None)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(threads):
        experiments, protocol = _run(args, methods, lams, progress)
    rows = verification.summarise(experiments)
    seconds = time.perf_counter() - start
    print(f"{protocol}; features {args.features}; mean +- SEM over {len(experiments)}; "
          f"{seconds:.1f} s")
    print(verification.format_table(rows))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"data": args.data, "features": args.features, "protocol": protocol,
                       "seconds": seconds, "summary": rows,
                       "results": verification.as_records(experiments)}, out, indent=1)
    return 0


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        return verify(args)
    except (FileNotFoundError, ValueError) as error:
        print(f"metricfit: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
