"""``metricfit fuse``: fuse the saved scores of several ``metricfit verify`` runs."""

from pathlib import Path

from ..experiments import verification
from ._output import _write_json


def run(args):
    """Seed 002 IV.D across descriptors: fuse saved score columns, print each and the fusion."""
    columns = {}
    for path in args.files:
        for (source, method), cells in verification.load_scores(path).items():
            if (source, method) in columns:  # e.g. two runs of one descriptor, other settings
                source = f"{source}@{Path(path).stem}"
            columns[(source, method)] = cells
    wanted = None if args.methods is None else set(verification.resolve_methods(args.methods))
    columns = {key: value for key, value in columns.items()
               if key[1] != "fusion" and (wanted is None or key[1] in wanted)}
    singles = verification.saved_results(columns)
    fused = verification.fuse_saved(columns, args.classifier, select=args.select)
    experiments = [row + f for row, f in zip(singles, fused, strict=True)]
    rows = verification.summarise(experiments)
    how = ("columns, classifier and C chosen by 5-fold CV inside each validation fold"
           if args.select else f"{args.classifier} fusion")
    print(f"{how} of {len(columns)} score columns fitted on each validation fold; mean +- SEM "
          f"over {len(experiments)} experiments")
    if args.select:
        for e, (result,) in enumerate(fused):
            c = result.choice
            print(f"experiment {e + 1}: {c['classifier']} C={c['C']:g}, {c['n_columns']} "
                  f"columns: {', '.join(c['columns'])}")
    print(verification.format_table(rows))
    if args.json:
        _write_json(args.json, {"files": args.files, "classifier": args.classifier,
                                "select": args.select,
                                "summary": rows, "results": verification.as_records(experiments)})
    return 0
