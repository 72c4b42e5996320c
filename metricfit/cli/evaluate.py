"""``metricfit evaluate``: the back-end's report of a score file against a key.

EER; minDCF and actDCF at P_target 0.01, 0.001 and the user's ``--prior`` values (C_miss =
C_fa = 1), each with the numbers of target and non-target trials it rests on, how far one
false accept and one miss move it, and an interval; Cllr and minCllr; FNMR at FMR 1e-2 and
1e-3; a DET plot (``--det``, matplotlib); strict JSON (``--json``: undefined values are null,
with the reason beside them). actDCF and Cllr read the scores as natural-log likelihood
ratios (``metricfit score --calibrate`` writes them); on raw scores they measure
miscalibration, not the system.

The interval of a minDCF: at its threshold the DCF is ``w_miss P_miss + w_fa P_fa``
(normalised weights); each rate gets its 95 % Clopper-Pearson interval from its counts, and
the DCF interval is their weighted sum (coverage at least 90 %; the threshold itself chosen
on the same trials makes minDCF optimistic, which the interval does not include). When one
false accept moves minDCF by more than :data:`STEP_WARNING` the report says so: too few
non-target trials to measure that operating point.
"""

import json
import sys

import numpy as np
from scipy.stats import beta

from ..backend.trials import read_scores, read_trials
from ..metrics import act_dcf, cllr, equal_error_rate, fnmr_at_fmr, min_cllr, min_dcf
from ._output import strict_json

__all__ = ["PRIORS", "FMRS", "STEP_WARNING", "evaluation_report", "match_scores", "run"]

PRIORS = (0.01, 0.001)
FMRS = (1e-2, 1e-3)
STEP_WARNING = 0.05


def match_scores(score_file, key_file):
    """``(y, scores, n_extra)``: the score of every trial of the key (in key order), and how
    many scored trials the key does not hold; ValueError naming the file when a trial of the
    key has no score, or a trial is given twice."""
    enrol, test, values = read_scores(score_file)
    table = {}
    for e, t, v in zip(enrol.tolist(), test.tolist(), values.tolist(), strict=True):
        if (e, t) in table:
            raise ValueError(f"{score_file}: trial '{e} {t}' is scored twice.")
        table[e, t] = v
    key_enrol, key_test, y = read_trials(key_file)
    seen, scores, missing = set(), [], []
    for e, t in zip(key_enrol.tolist(), key_test.tolist(), strict=True):
        if (e, t) in seen:
            raise ValueError(f"{key_file}: trial '{e} {t}' is listed twice.")
        seen.add((e, t))
        if (e, t) not in table:
            missing.append(f"{e} {t}")
        scores.append(table.get((e, t), np.nan))
    if missing:
        raise ValueError(f"{score_file}: no score for {len(missing)} trial(s) of the key "
                         f"{key_file}, e.g. '{missing[0]}'.")
    return y, np.asarray(scores), len(table) - len(seen)


def _weights(prior):
    norm = min(prior, 1 - prior)
    return prior / norm, (1 - prior) / norm


def _clopper_pearson(k, n, level=0.95):
    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def dcf_entry(y, scores, prior):
    """minDCF / actDCF at ``prior`` with its counts, the step of one error and an interval."""
    value, threshold = min_dcf(y, scores, prior)
    tar, non = scores[y == 1], scores[y != 1]
    misses, false_accepts = int(np.sum(tar < threshold)), int(np.sum(non >= threshold))
    w_miss, w_fa = _weights(prior)
    lo_m, hi_m = _clopper_pearson(misses, tar.size)
    lo_f, hi_f = _clopper_pearson(false_accepts, non.size)
    entry = {"prior": prior, "min_dcf": value, "act_dcf": act_dcf(y, scores, prior),
             "threshold": threshold, "n_target": int(tar.size), "n_nontarget": int(non.size),
             "misses": misses, "false_accepts": false_accepts,
             "one_false_accept": w_fa / non.size, "one_miss": w_miss / tar.size,
             "interval": [w_miss * lo_m + w_fa * lo_f, min(w_miss * hi_m + w_fa * hi_f,
                                                           w_miss + w_fa)],
             "warning": None}
    if entry["one_false_accept"] > STEP_WARNING:
        entry["warning"] = (f"one false accept moves minDCF({prior:g}) by "
                            f"{entry['one_false_accept']:.3g}: {non.size} non-target trials "
                            f"are too few for this operating point (about "
                            f"{int(np.ceil(w_fa / STEP_WARNING))} keep the step under "
                            f"{STEP_WARNING:g})")
    return entry


def evaluation_report(y, scores, priors=PRIORS, fmrs=FMRS):
    """The numbers of ``metricfit evaluate`` as a dict (NaN where undefined, with a reason).

    Examples
    --------
    >>> import numpy as np
    >>> from metricfit.cli.evaluate import evaluation_report
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([1, -1], [100, 300])
    >>> scores = np.where(y == 1, 2.0, -2.0) + rng.normal(size=400)
    >>> report = evaluation_report(y, scores)
    >>> report["n_target"], report["n_nontarget"], round(report["dcf"][0]["one_false_accept"], 2)
    (100, 300, 0.33)
    >>> report["fnmr_at_fmr"][1]["fnmr"], report["fnmr_at_fmr"][1]["reason"][:30]
    (nan, 'needs at least 1000 non-target')
    """
    y, scores = np.asarray(y), np.asarray(scores, dtype=np.float64)
    n_tar, n_non = int(np.sum(y == 1)), int(np.sum(y != 1))
    if n_tar == 0 or n_non == 0:
        raise ValueError(f"the key needs target and non-target trials, got {n_tar} target and "
                         f"{n_non} non-target.")
    priors = list(dict.fromkeys(float(p) for p in priors))
    fnmr = []
    for fmr in fmrs:
        needed = int(np.ceil(1 / fmr))
        if n_non < needed:
            fnmr.append({"fmr": fmr, "fnmr": np.nan, "reason": (
                f"needs at least {needed} non-target trials to measure an FMR of {fmr:g}, "
                f"the key has {n_non}")})
        else:
            fnmr.append({"fmr": fmr, "fnmr": float(fnmr_at_fmr(y, scores, fmr)),
                         "reason": None})
    return {"n_target": n_tar, "n_nontarget": n_non,
            "eer": equal_error_rate(y, scores)[0],
            "dcf": [dcf_entry(y, scores, p) for p in priors],
            "cllr": cllr(y, scores), "min_cllr": min_cllr(y, scores),
            "fnmr_at_fmr": fnmr,
            "note": "actDCF and Cllr read the scores as natural-log LLRs"}


def _number(value, form):
    return "n/a" if value is None or not np.isfinite(value) else format(value, form)


def format_report(report, header):
    lines = [header,
             f"{report['n_target']} target and {report['n_nontarget']} non-target trials",
             f"EER {100 * report['eer']:.2f} %   Cllr {_number(report['cllr'], '.4f')}   "
             f"minCllr {_number(report['min_cllr'], '.4f')}  (actDCF and Cllr read the scores "
             "as LLRs)",
             f"{'P_target':>9} {'minDCF':>8} {'95% interval':>17} {'actDCF':>8} "
             f"{'1 FA moves':>10} {'1 miss moves':>12}"]
    for d in report["dcf"]:
        lo, hi = d["interval"]
        lines.append(f"{d['prior']:>9g} {d['min_dcf']:8.4f} {f'[{lo:.3f}, {hi:.3f}]':>17} "
                     f"{d['act_dcf']:8.4f} {d['one_false_accept']:10.3g} {d['one_miss']:12.3g}")
    for f in report["fnmr_at_fmr"]:
        value = "n/a (" + f["reason"] + ")" if f["reason"] else f"{100 * f['fnmr']:.2f} %"
        lines.append(f"FNMR at FMR {f['fmr']:g}: {value}")
    lines += [f"warning: {d['warning']}" for d in report["dcf"] if d["warning"]]
    return "\n".join(lines)


def _plot(path, y, scores, name):
    from matplotlib.figure import Figure

    from ..metrics import plot_det

    fig = Figure(figsize=(5.5, 5.5))
    plot_det({name: (y, scores)}, fig.subplots())
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def run(args):
    """Read, match, compute, print (or write JSON), plot."""
    if args.det:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ValueError("--det: plots need matplotlib: pip install metricfit[plot]") \
                from None
    y, scores, n_extra = match_scores(args.scores, args.trials)
    report = evaluation_report(y, scores, PRIORS + tuple(args.prior or ()))
    report.update(scores=args.scores, trials=args.trials, n_unused_scores=n_extra)
    if args.json == "-":
        json.dump(strict_json(report), sys.stdout, indent=1, allow_nan=False)
        print()
    else:
        extra = f"; {n_extra} scored trial(s) not in the key ignored" if n_extra else ""
        print(format_report(report, f"{args.scores} against {args.trials}{extra}"))
        if args.json:
            with open(args.json, "w") as out:
                json.dump(strict_json(report), out, indent=1, allow_nan=False)
    if args.det:
        _plot(args.det, y, scores, args.scores)
    return 0
