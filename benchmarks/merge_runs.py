"""Join ``metricfit verify`` runs made on disjoint experiments (``--experiments``) of one protocol.

``--scores``: write one score file of all the runs' columns
(:func:`metricfit.experiments.scores.merge_score_files`: the experiment numbers in the keys let
files of disjoint experiments join; an experiment in two files is an error), optionally of some
methods only, for ``metricfit fuse``. ``--json``: print mean +- SEM over all experiments of the
runs' JSON records (test accuracy, maxDA, EER %), per method, as ``metricfit verify`` would for
one run.

    python benchmarks/merge_runs.py --scores cnn_r10.npz cnn_restricted.npz cnn_restricted_3-9.npz
    python benchmarks/merge_runs.py --scores cnn_only_r10.npz --methods cnn cnn_restricted.npz ...
    python benchmarks/merge_runs.py --json cnn_restricted.json cnn_restricted_3-9.json
"""

import argparse
import json
from types import SimpleNamespace

from metricfit.experiments.verification import format_table, merge_score_files, summarise


def summary(paths):
    """Lines of mean +- SEM per method over the records of the JSON files, as
    ``metricfit verify`` prints them (:func:`metricfit.experiments.verification.summarise`)."""
    records = [r for path in paths for r in json.load(open(path))["results"]]
    numbers = sorted({r["experiment"] for r in records})
    if len(numbers) * len({r["method"] for r in records}) != len(records):
        raise ValueError("the runs overlap or hold different methods.")
    experiments = [[SimpleNamespace(**r) for r in records if r["experiment"] == e]
                   for e in numbers]
    return [f"experiments {','.join(map(str, numbers))}",
            format_table(summarise(experiments))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", metavar="OUT.npz", help="write the joined score file")
    parser.add_argument("--methods", help="with --scores: comma-separated methods to keep")
    parser.add_argument("--json", action="store_true", help="the inputs are --json records")
    parser.add_argument("inputs", nargs="+")
    args = parser.parse_args()
    if args.json:
        print("\n".join(summary(args.inputs)))
    elif args.scores:
        merge_score_files(args.scores, args.inputs,
                          None if args.methods is None else set(args.methods.split(",")))
    else:
        parser.error("give --scores OUT.npz or --json")


if __name__ == "__main__":
    main()
