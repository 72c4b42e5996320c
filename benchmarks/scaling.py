"""Scaling table: each workload at 1, 2, 4, ... threads, its speed-up and its ratio to its bound.

Every thread count runs in a fresh subprocess with ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
``MKL_NUM_THREADS``, ``NUMBA_NUM_THREADS`` and ``METRICFIT_NUM_THREADS`` set to it (so BLAS,
numba and metricfit's pools start with that many threads, as a user's process would). In the
subprocess each workload is timed as the median of ``--repeats`` calls after one warm-up call;
a workload with a bound (the GEMMs it cannot do without) times the bound in the same rounds,
alternating with it, and reports the median of the per-round ratios. The table gives the
median time, the speed-up over the same workload on 1 thread, and the ratio to the bound.
``--rounds R`` runs the thread counts R times, alternated: then the median over the rounds
and the range of the rounds' own speed-ups. The worker gets ``OPENBLAS_THREAD_TIMEOUT=16``
(metricfit's default, :mod:`metricfit._blas_env`) unless the caller's environment sets it:
``OPENBLAS_THREAD_TIMEOUT=28`` gives OpenBLAS's own.

Workloads (``--only NAME ...`` selects; ``--list`` prints them):

* ``tsml|csml|ddml|ldml_float64|float32``: one prepared cost-and-gradient call, n = 4800 pairs,
  d = k = 300, against its two-GEMM bound (``bench_gradients.prepared_and_bound``);
* ``kernel_*``: the fused per-pair kernel section of each linear objective alone (no GEMM), and
  ``kernel_index_tsml`` (float64) and ``kernel_index_{loss}_{dtype}`` pass 2 of index pairs;
* ``convnet_step``, ``convnet_inference``: the siamese convnet of seed 000, 64 pairs of 56x46
  (as ``bench_cnn.py``); ``plda_em``: one EM iteration of PLDA on 1e5 x 256 against its two GEMMs
  (as ``bench_plda.py``); ``nca_iteration``: one L-BFGS iteration of NCA on digits (as
  ``bench_nca.py``); ``descriptors``: LBP, OCLBP, DenseSIFT, Gabor and HOG of 1,024 synthetic
  62x47 images (as ``bench_descriptors.py``, without LFW);
* ``lmnn_evaluation``, ``mlkr_evaluation``: one cost-and-gradient call of LMNN and MLKR at
  ``L = I`` on digits (PCA to 30-d), float64; ``lmnn_dense_evaluation``: LMNN at ``L = 0.2 I``,
  where 139,885 triples are active (1,521 at ``L = I``) and its serial impostor steps weigh.

Registry: ``WORKLOADS = {name: callable(repeats) -> {"ms": ..., "bound_ms": ..., "x_bound":
...}}``. The hooks import their script lazily and use, in this order: a module-level dict
``SCALING`` of such callables (e.g. ``bench_cnn.SCALING["convnet_step"]``); the script's
named entry points (``bench_cnn.time_training_step`` / ``time_inference``,
``bench_plda.time_em_iteration`` against ``time_em_gemms``, ``bench_nca.time_iteration``, each
``(threads, ..., repeats)`` returning seconds); else the small synthetic workloads written
here against the public API. Nothing needs torch or a data folder.

    python benchmarks/scaling.py [--threads 1 2 4 8 16] [--only tsml_float64 ...]
        [--repeats 5] [--rounds 1] [--json out.json] [--markdown out.md] [--timeout 300]
"""

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
               "METRICFIT_NUM_THREADS")
# OpenBLAS's idle spin (metricfit._blas_env): read when OpenBLAS loads, so set for the worker
SPIN_VAR, SPIN_DEFAULT = "OPENBLAS_THREAD_TIMEOUT", "16"
LINEAR = ("tsml", "csml", "ddml", "ldml")
DTYPES = ("float64", "float32")


def _script(name):
    """A benchmark script of this folder as a module (imported on first use only)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return importlib.import_module(name)


def _timed(call, repeats, bound=None, setup=None):
    """Median ms of ``call()`` (and of ``bound()``, alternating, with the median per-round
    ratio); ``setup()`` runs untimed before each call. One untimed warm-up round first."""
    times, bounds = [], []
    for _ in range(repeats + 1):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
        if bound is not None:
            bound()
            bounds.append(time.perf_counter() - t1)
        times.append(t1 - t0)
    times, bounds = times[1:], bounds[1:]
    out = {"ms": 1e3 * float(np.median(times))}
    if bound is not None:
        out["bound_ms"] = 1e3 * float(np.median(bounds))
        out["x_bound"] = float(np.median(np.divide(times, bounds)))
    return out


# -- the linear objectives (bench_gradients.py's data and bounds) --------------------------


def _linear(loss, dtype):
    def run(repeats):
        call, bound = _script("bench_gradients").prepared_and_bound(loss, dtype)
        return _timed(call, repeats, bound)
    return run


def _kernel(loss, dtype, n=4800, d=300, k=300):
    """The fused kernel section alone, on the embeddings of the benchmark's data, each call
    right after the GEMM(s) that make its input (untimed), as in the objective: its input is
    the product just written, and BLAS's idle workers may still be polling."""

    def run(repeats):
        from metricfit.losses import csml, ddml, ldml, tsml
        bench = _script("bench_gradients")
        X1, X2, s, A = bench.make_data(n, d, k, dtype, 0)
        if loss == "ldml":
            D = X1 - X2
            M, b = ldml.unpack(bench.make_ldml_params(d, dtype, 0), d)
            inputs, factors = [D], M

            def call():
                ldml._weights_inplace(work[0], D, s, float(b))
        elif loss == "ddml":
            inputs, factors = [X1 - X2], A.T

            def call():
                ddml._delta_grad_inplace(work[0], s, bench.DDML_T, bench.DDML_TAU)
        elif loss == "tsml":
            inputs, factors = [X1 + s[:, None] * X2], A.T

            def call():
                tsml._normalise_rows_inplace(work[0])
        else:
            inputs, factors = [X1, X2], A.T

            def call():
                csml._embedding_grad_inplace(work[0], work[1], s)

        work = [np.empty((x.shape[0], factors.shape[1]), dtype=dtype) for x in inputs]

        def setup():  # the objective's GEMM(s), writing the kernel's input
            for x, w in zip(inputs, work, strict=True):
                np.matmul(x, factors, out=w)

        return _timed(call, repeats, setup=setup)
    return run


def _kernel_index(loss="tsml", dtype="float64", n_points=2000, n_pairs=8192, k=300):
    """Pass 2 of a linear loss over index pairs (costs and scalars of the pairs, then the
    scatter-add of their gradients onto the points; LDML: distances and weights, then ``w_i
    delta_i``, on rows ``[X M, X]`` of width 2k), on a kept IndexChunk as an objective runs it."""

    def run(repeats):
        from metricfit.losses import _index, csml, ddml, ldml, tsml
        from metricfit.pairs.index import IndexChunk

        rng = np.random.default_rng(0)
        width = 2 * k if loss == "ldml" else k
        points = rng.standard_normal((n_points, k)).astype(dtype)
        A = (rng.standard_normal((width, k)) * ((0.05 if loss == "ldml" else 1.0) / k ** 0.5)
             ).astype(dtype)
        E = np.empty((n_points, width), dtype=dtype)  # entries ~ N(0, 1) (LDML: 0.05^2)
        index = IndexChunk(rng.integers(0, n_points, size=(n_pairs, 2)))
        s = np.where(rng.random(n_pairs) < 0.5, 1.0, -1.0).astype(dtype)
        R = np.zeros((n_points, k), dtype=dtype)

        def setup():  # pass 1's GEMM (untimed) right before pass 2, as in the objective
            R.fill(0)
            np.matmul(points, A.T, out=E)
        if loss == "ldml":
            def call():
                ldml._index_pair_block(E, index, s, R, 2.0 * k * 0.005)
        else:
            kernel = {"tsml": tsml._embedding_grad_inplace, "csml": csml._embedding_grad_inplace,
                      "ddml": ddml._bind(10.0, 1.0)}[loss]

            def call():
                _index.linear_pair_block(E, index, s, R, kernel)
        return _timed(call, repeats, setup=setup)
    return run


# -- hooks for the other rooms (a script's own entry point wins) ---------------------------


def _threads():
    import metricfit

    return metricfit.get_threads()


def _hook(script, name, entry, fallback):
    """The workload ``name``: the script's ``SCALING[name]`` if it has one, else ``entry(module,
    repeats)`` when the script's named functions exist (``entry`` returns None when they do
    not), else ``fallback(repeats)``, written here against the public API."""

    def run(repeats):
        try:
            module = _script(script)
        except Exception:  # a script that does not import here (data, optional packages)
            module = None
        own = getattr(module, "SCALING", {}).get(name) if module is not None else None
        if own is not None:
            return own(repeats)
        row = entry(module, repeats) if module is not None else None
        return fallback(repeats) if row is None else row
    return run


def _cnn_entry(kind):
    """bench_cnn's ``time_training_step`` / ``time_inference(threads, repeats)`` (seconds)."""

    def entry(module, repeats):
        fn = getattr(module, "time_training_step" if kind == "step" else "time_inference", None)
        return None if fn is None else {"ms": 1e3 * fn(_threads(), repeats=repeats)}
    return entry


def _plda_entry(module, repeats):
    """bench_plda's ``time_em_iteration`` against ``time_em_gemms`` (its two GEMMs)."""
    em, gemms = (getattr(module, f, None) for f in ("time_em_iteration", "time_em_gemms"))
    if em is None or gemms is None:
        return None
    t, bound = em(_threads(), repeats=repeats), gemms(_threads(), repeats=repeats)
    return {"ms": 1e3 * t, "bound_ms": 1e3 * bound, "x_bound": t / bound}


def _nca_entry(module, repeats):
    """bench_nca's ``time_iteration(threads, iters, repeats)`` (seconds per iteration)."""
    fn = getattr(module, "time_iteration", None)
    return None if fn is None else {"ms": 1e3 * fn(_threads(), iters=5, repeats=repeats)}


def _no_entry(module, repeats):
    return None


def _convnet(kind, n_pairs=64, shape=(56, 46)):
    def run(repeats):
        from metricfit.cnn import ConvNetwork, SiameseObjective, network_spec

        net = ConvNetwork(network_spec(shape))
        theta = net.init(0)
        pairs = np.random.default_rng(0).normal(size=(n_pairs, 2) + shape).astype(np.float32)
        if kind == "step":
            objective = SiameseObjective(net, pairs, np.where(np.arange(n_pairs) % 2, -1, 1))
            rows = np.arange(n_pairs)
            return _timed(lambda: objective.batch(theta, rows), repeats)
        images = np.concatenate([pairs[:, 0], pairs[:, 1]])
        return _timed(lambda: net.transform(theta, images, 2 * n_pairs), repeats)
    return run


def _plda_em(repeats, n=100_000, d=256):
    bench = _script("bench_plda")
    X, codes = bench.synthetic(n, d)
    counts, means, _, scatter = bench.core.class_statistics(X, codes)
    B, W = bench.core.fit_two_covariance(counts, means, scatter, n_iter=3)
    T, _ = bench.core.plda_basis(B, W)
    U = means @ T.T
    R = U * 0.5
    return _timed(lambda: bench.core.fit_two_covariance(counts, means, scatter, n_iter=1),
                  repeats, bound=lambda: (U.T @ U, (R * counts[:, None]).T @ R))


def _nca_iteration(repeats, iters=4):
    bench = _script("bench_nca")
    X, y = bench.load_digits_data()
    times = [bench.fit_ours(X, y, iters, np.float64)[0] / iters for _ in range(repeats + 1)]
    return {"ms": 1e3 * float(np.median(times[1:]))}


def _catalogue(loss, dtype="float64", scale=1.0):
    """One cost-and-gradient evaluation of a metric-learn catalogue loss at ``L = scale I`` on
    digits (standardised, PCA to 30-d): ``lmnn`` (3 target neighbours a point, blocks of
    ``lmnn.default_block_rows``), ``mlkr`` (the digit as the regression target)."""

    def run(repeats):
        from sklearn.datasets import load_digits
        from sklearn.decomposition import PCA
        from sklearn.preprocessing import StandardScaler

        from metricfit.learners.lmnn import target_neighbors
        from metricfit.losses import lmnn, mlkr

        X, y = load_digits(return_X_y=True)
        X = PCA(30, random_state=0).fit_transform(StandardScaler().fit_transform(X))
        X, L = X.astype(dtype), scale * np.eye(30, dtype=dtype)
        if loss == "lmnn":
            codes = y.astype(np.int64)
            targets = target_neighbors(X, codes, 3)
            return _timed(lambda: lmnn.cost_grad(L, X, codes, targets), repeats)
        return _timed(lambda: mlkr.cost_grad(L, X, y.astype(dtype)), repeats)
    return run


def _descriptors(repeats, n_images=1024):
    descriptors = _script("bench_descriptors").DESCRIPTORS
    images = np.random.default_rng(0).random((n_images, 62, 47))
    fitted = [make().fit(images[:1]) for make in descriptors.values()]
    return _timed(lambda: [est.transform(images) for est in fitted], repeats)


WORKLOADS = {f"{loss}_{dt}": _linear(loss, dt) for loss in LINEAR for dt in DTYPES}
WORKLOADS.update({f"kernel_{loss}_{dt}": _kernel(loss, dt) for loss in LINEAR for dt in DTYPES})
WORKLOADS["kernel_index_tsml"] = _kernel_index()  # the name of the 2026-11-26 tables
WORKLOADS.update({f"kernel_index_{loss}_{dt}": _kernel_index(loss, dt) for loss in LINEAR
                  for dt in DTYPES})
WORKLOADS.update({
    "convnet_step": _hook("bench_cnn", "convnet_step", _cnn_entry("step"), _convnet("step")),
    "convnet_inference": _hook("bench_cnn", "convnet_inference", _cnn_entry("inference"),
                               _convnet("inference")),
    "plda_em": _hook("bench_plda", "plda_em", _plda_entry, _plda_em),
    "nca_iteration": _hook("bench_nca", "nca_iteration", _nca_entry, _nca_iteration),
    "descriptors": _hook("bench_descriptors", "descriptors", _no_entry, _descriptors),
})
WORKLOADS.update({f"{loss}_evaluation": _catalogue(loss) for loss in ("lmnn", "mlkr")})
WORKLOADS["lmnn_dense_evaluation"] = _catalogue("lmnn", scale=0.2)


# -- one thread count, in its own process ---------------------------------------------------


def environment():
    """BLAS and thread settings of this process (threadpoolctl), as the worker sees them."""
    import numba
    from threadpoolctl import threadpool_info

    import metricfit
    from metricfit.parallel import numba_target

    target = numba_target()
    return {"cpu_count": os.cpu_count(), "numpy": np.__version__, "numba": numba.__version__,
            "numba_target": {**target._asdict(), "narrower": target.narrower},
            "numba_threads": numba.config.NUMBA_NUM_THREADS,
            "metricfit_threads": metricfit.get_threads(),
            "pools": [{k: pool.get(k) for k in ("user_api", "internal_api", "version",
                                                 "architecture", "num_threads")}
                      for pool in threadpool_info()],
            "vars": {v: os.environ.get(v) for v in (*THREAD_VARS, SPIN_VAR)}}


def worker(names, repeats):
    """Print the environment, then one JSON line per workload (``error`` where it failed)."""
    print(json.dumps({"environment": environment()}), flush=True)
    for name in names:
        t0 = time.perf_counter()
        try:
            row = WORKLOADS[name](repeats)
        except Exception as exc:  # one broken workload must not lose the table
            row = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        row.update(name=name, wall_s=time.perf_counter() - t0)
        print(json.dumps(row), flush=True)


def thread_env(threads):
    """This process's environment with every thread variable (``THREAD_VARS``) at
    ``threads``, for a fresh subprocess."""
    env = dict(os.environ, **{var: str(threads) for var in THREAD_VARS})
    # the worker imports numpy before metricfit: give it metricfit's idle-spin default, as
    # the metricfit command has it (the caller's own value, e.g. 28 for OpenBLAS's, wins)
    env.setdefault(SPIN_VAR, SPIN_DEFAULT)
    # the caller's PYTHONPATH first (e.g. another metricfit to compare), then this checkout
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(HERE.parent)]))
    return env


def per_count_parser(description, rounds):
    """The command line of a script that :func:`json_at` runs once per thread count:
    ``--threads`` (the counts), ``--rounds`` and the child's hidden ``--one COUNT``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child's thread count
    return parser


def json_at(script, threads, *args):
    """The last line of ``python script --one threads *args``, run in a fresh process at
    ``threads`` threads, as JSON; ``{"error": ...}`` where it failed."""
    proc = subprocess.run([sys.executable, str(script), "--one", str(threads), *map(str, args)],
                          env=thread_env(threads), capture_output=True, text=True)
    if proc.returncode:
        return {"error": proc.stderr.strip()[-300:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_count(threads, names, repeats, timeout, extra=()):
    """``(environment, {name: row})`` of one subprocess at ``threads`` threads; workloads it
    did not reach (timeout, crash) get an ``error`` row."""
    env = thread_env(threads)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", *extra, "--repeats",
           str(repeats), "--only", *names]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        stdout, failure = proc.stdout, (proc.stderr.strip()[-300:] if proc.returncode else None)
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        failure = f"timed out after {timeout} s"
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    environment_ = next((x["environment"] for x in lines if "environment" in x), {})
    rows = {x["name"]: x for x in lines if "name" in x}
    for name in names:
        rows.setdefault(name, {"name": name, "error": failure or "no result"})
    return environment_, rows


def table(results, counts):
    """Rows of (workload, threads, ms, speed-up over 1 thread, x bound) in workload order;
    ``results[n]``: a ``(environment, {name: row})`` a round at ``n`` threads. ms, x bound:
    medians over the rounds; speed-up: the median (and range) of the rounds' own speed-ups
    (round r at n threads against round r at 1, run next to each other)."""
    out = []
    for name in results[counts[0]][0][1]:
        base = [rows[name].get("ms") for _, rows in results[1]] if counts[0] == 1 else None
        for n in counts:
            got = [rows[name] for _, rows in results[n]]
            ms = [row.get("ms") for row in got]
            ups = [b / m for b, m in zip(base, ms, strict=True) if b and m] if base else []
            out.append({"workload": name, "threads": n, "ms": _median(ms), "speedup": _median(ups),
                        "speedup_range": [min(ups), max(ups)] if len(ups) > 1 else None,
                        "x_bound": _median([row.get("x_bound") for row in got]),
                        "bound_ms": _median([row.get("bound_ms") for row in got]),
                        "wall_s": _median([row.get("wall_s") for row in got]),
                        "error": next((row["error"] for row in got if row.get("error")), None)})
    return out


def _median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def print_table(rows, environments):
    for n, env in environments.items():
        pools = ", ".join(f"{p['user_api']}: {p['internal_api']} {p.get('version') or ''} "
                          f"{p.get('architecture') or ''} x{p['num_threads']}"
                          for p in env.get("pools", []))
        target = env.get("numba_target", {})
        print(f"threads {n}: metricfit {env.get('metricfit_threads')}, numba "
              f"{env.get('numba_threads')}; {pools or 'no threadpool info'}; "
              f"{SPIN_VAR}={env.get('vars', {}).get(SPIN_VAR)}; numba compiles for "
              f"'{target.get('cpu_name')}' ({target.get('simd')}), the processor has "
              f"{target.get('host_simd')}" + (" (NARROWER)" if target.get("narrower") else ""))
    print(f"{'workload':<24} {'threads':>7} {'ms':>10} {'speed-up':>9} {'range':>11} "
          f"{'x bound':>8} {'wall s':>7}")
    for r in rows:
        tail = f"  ERROR {r['error']}" if r["error"] else ""
        print(f"{r['workload']:<24} {r['threads']:>7} {_fmt(r['ms'], '10.2f'):>10} "
              f"{_fmt(r['speedup'], '9.2f'):>9} {_range(r):>11} {_fmt(r['x_bound'], '8.2f'):>8} "
              f"{_fmt(r['wall_s'], '7.1f'):>7}{tail}")


def _range(row):
    return "-" if not row.get("speedup_range") else "{:.2f}-{:.2f}".format(*row["speedup_range"])


def markdown(rows, header):
    lines = [header, "", "| workload | threads | ms | speed-up over 1 thread (range) | x bound |",
             "|---|---|---|---|---|"]
    for r in rows:
        ms = "error: " + r["error"].replace("|", "/") if r["error"] else _fmt(r["ms"], ".2f")
        spread = f" ({_range(r)})" if r.get("speedup_range") else ""
        lines.append(f"| {r['workload']} | {r['threads']} | {ms} | {_fmt(r['speedup'], '.2f')}"
                     f"{spread} | {_fmt(r['x_bound'], '.2f')} |")
    return "\n".join(lines) + "\n"


def default_counts(cpus=None):
    """1, 2, 4, ... up to the CPU count (and the CPU count itself)."""
    cpus = cpus or os.cpu_count() or 1
    counts = [1]
    while counts[-1] * 2 <= cpus:
        counts.append(counts[-1] * 2)
    return counts + ([cpus] if counts[-1] != cpus else [])


def _count(text):
    if int(text) < 1:
        raise argparse.ArgumentTypeError(f"thread counts must be >= 1, got {text!r}")
    return int(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=_count, nargs="+", default=None,
                   help="thread counts (default: 1, 2, 4, ... up to the CPU count)")
    p.add_argument("--only", nargs="+", default=None, metavar="NAME",
                   help="workloads to run (default: all; --list shows them)")
    p.add_argument("--repeats", type=_count, default=3, help="timed calls per workload (median)")
    p.add_argument("--rounds", type=_count, default=1,
                   help="runs of every thread count, alternated (1, 2, 1, 2, ...): a noisy "
                        "machine's burst then spoils one round, not the table")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per thread count")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--markdown", type=Path, default=None)
    p.add_argument("--list", action="store_true", help="print the workloads and exit")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    names = list(WORKLOADS) if args.only is None else args.only
    unknown = [n for n in names if n not in WORKLOADS]
    if args.list or unknown:
        if unknown:
            print(f"unknown workload(s) {unknown}; known:", file=sys.stderr)
        print("\n".join(WORKLOADS), file=sys.stderr if unknown else sys.stdout)
        return 2 if unknown else 0
    if args.worker:
        return worker(names, args.repeats)
    counts = sorted(set(args.threads or default_counts()))
    results = {n: [] for n in counts}
    for round_ in range(args.rounds):
        for n in counts:
            results[n].append(run_count(n, names, args.repeats, args.timeout))
            print(f"... round {round_ + 1}: {n} thread(s) done", file=sys.stderr, flush=True)
    rows = table(results, counts)
    environments = {n: runs[0][0] for n, runs in results.items()}
    print_table(rows, environments)
    header = (f"Scaling, {os.cpu_count()} CPUs, median of {args.repeats}, {args.rounds} "
              f"round(s) (benchmarks/scaling.py --threads {' '.join(map(str, counts))})")
    if args.markdown:
        args.markdown.write_text(markdown(rows, header))
    if args.json:
        args.json.write_text(json.dumps({"counts": counts, "repeats": args.repeats,
                                         "rounds": args.rounds, "environments": environments,
                                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
