"""Gradient timing: one TSML / CSML / DDML / LDML cost-and-gradient call (the per-iteration cost
of a fit).

Prepared ``objective(X1, X2, s)(A)`` and stateless ``cost_grad`` (lam = 0), float64 and float32,
next to the two-GEMM bound ``(Z @ A.T).T @ Z`` and torch autograd of the same costs (own process,
same seeded data, run in lockstep after an idle gap so the two thread pools never overlap).
DDML (T = 10, tau = 1) works on Z = X1 - X2, so it has the same bound as TSML. LDML (prepared,
on theta = [M.ravel(), b], M (d, d)) has its own two-GEMM bound ``Z @ M`` and ``(w * Z).T @ Z``.
Each repeat calls every variant once, round-robin, so noise hits all alike; "paired" ratios are
medians of per-repeat ratios. Also: BLAS/threads, numba compile and cached first-call times, and
a torch gradient check. Under CPU contention multi-threaded BLAS stalls: compare --threads 1.

    python benchmarks/bench_gradients.py [--n 4800] [--d 300] [--k 300] [--repeats 25]
        [--json benchmarks/results/bench_gradients.json] [--no-torch] [--threads N]
"""

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DTYPES = ("float64", "float32")
VARIANTS = ("gemm_bound", "tsml_prepared", "tsml_cost_grad", "csml_prepared", "csml_cost_grad",
            "ddml_prepared", "ddml_cost_grad", "ldml_bound", "ldml_prepared",
            "torch_tsml", "torch_csml", "torch_ddml")
TORCH_LOSSES = ("tsml", "csml", "ddml")
BOUND_OF = {"ldml_bound": "ldml_bound", "ldml_prepared": "ldml_bound"}  # else gemm_bound
DDML_T, DDML_TAU = 10.0, 1.0
WARMUP = 2  # untimed rounds
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "bench_gradients.json"
# (label, numerator, denominator, target); "x" alone is compared per dtype as "x/float64", ...
RATIOS = (
    ("TSML prepared / GEMM bound", "tsml_prepared", "gemm_bound", ("<=", 1.25)),
    ("torch TSML / TSML prepared", "torch_tsml", "tsml_prepared", (">=", 2.0)),
    ("CSML prepared / TSML prepared", "csml_prepared", "tsml_prepared", (">=", 1.6)),
    ("TSML prepared f64 / f32", "tsml_prepared/float64", "tsml_prepared/float32", (">=", 1.7)),
    ("TSML cost_grad / TSML prepared", "tsml_cost_grad", "tsml_prepared", None),
    ("torch CSML / CSML prepared", "torch_csml", "csml_prepared", None),
    ("GEMM bound f64 / f32", "gemm_bound/float64", "gemm_bound/float32", None),
    ("DDML prepared / GEMM bound", "ddml_prepared", "gemm_bound", ("<=", 1.25)),
    ("torch DDML / DDML prepared", "torch_ddml", "ddml_prepared", (">=", 1.5)),
    ("DDML cost_grad / DDML prepared", "ddml_cost_grad", "ddml_prepared", None),
    ("LDML prepared / LDML bound", "ldml_prepared", "ldml_bound", ("<=", 1.25)),
)
COMPILE_SNIPPET = r"""
import json, time
t0 = time.perf_counter()
import metricfit
from metricfit.losses import csml, ddml, ldml, tsml
out = {"import_metricfit": time.perf_counter() - t0}
import numpy as np
rng = np.random.default_rng(0)
for dt in ("float64", "float32"):
    X1, X2 = (rng.standard_normal((16, 5)).astype(dt) for _ in range(2))
    s, A = np.array([1.0, -1.0] * 8, dtype=dt), np.eye(4, 5, dtype=dt)
    for name, mod in (("tsml", tsml), ("csml", csml), ("ddml", ddml)):
        t0 = time.perf_counter()
        mod.objective(X1, X2, s)(A)
        out[f"first_call_{name}_{dt}"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ldml.objective(X1, X2, s)(ldml.pack(np.eye(5, dtype=dt), 1.0))
    out[f"first_call_ldml_{dt}"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def make_data(n, d, k, dtype, seed):
    """X1, X2 standard normal (n, d), s half +1 half -1 shuffled, A = I (k, d) + small noise.

    Drawn in float64 and then cast: both dtypes, and the torch process, see the same values.
    """
    rng = np.random.default_rng(seed)
    X1, X2 = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    s = rng.permutation(np.where(np.arange(n) < n // 2, 1.0, -1.0))
    A = np.eye(k, d) + 0.01 * rng.standard_normal((k, d))
    return tuple(np.ascontiguousarray(x, dtype=dtype) for x in (X1, X2, s, A))


def make_ldml_params(d, dtype, seed):
    """theta = [M.ravel(), b] with M = I (d, d) + small noise and b = 2 d, the mean squared
    distance of two standard normal vectors: the pair probabilities are spread around 1/2."""
    rng = np.random.default_rng(seed + 1)
    M = np.eye(d) + 0.01 * rng.standard_normal((d, d))
    return np.append(M.ravel(), 2.0 * d).astype(dtype)


LINEAR_LOSSES = ("tsml", "csml", "ddml", "ldml")


def prepared_and_bound(loss, dtype, n=4800, d=300, k=300, seed=0):
    """``(call, bound)``: one prepared cost-and-gradient call of ``loss`` (lam = 0) on this
    benchmark's data and the GEMMs it cannot do without, as zero-argument callables.

    The bounds: TSML and DDML two (n x d x k) GEMMs (``gemm_bound``); CSML two GEMMs on the
    stacked (2n x d) pairs ``[X1; X2]`` (its four GEMMs, stacked); LDML its two (n x d x d)
    GEMMs on D = X1 - X2 (``ldml_bound``). Shared with ``benchmarks/scaling.py``.
    """
    from metricfit.losses import csml, ddml, ldml, tsml

    X1, X2, s, A = make_data(n, d, k, dtype, seed)
    if loss == "ldml":
        f, theta = ldml.objective(X1, X2, s), make_ldml_params(d, dtype, seed)
        D, (M, _) = X1 - X2, ldml.unpack(theta, d)
        w = np.random.default_rng(seed).uniform(-1, 1, n).astype(dtype)
        return (lambda: f(theta)), (lambda: (D @ M, (w[:, None] * D).T @ D))
    if loss == "csml":
        Z = np.concatenate([X1, X2])  # (2n, d)
    else:
        Z = X1 + s[:, None] * X2  # (n, d)
    kwargs = {"T": DDML_T, "tau": DDML_TAU} if loss == "ddml" else {}
    f = {"tsml": tsml, "csml": csml, "ddml": ddml}[loss].objective(X1, X2, s, **kwargs)
    return (lambda: f(A)), (lambda: (Z @ A.T).T @ Z)


def time_round(fns, r):
    """{key: seconds}: every fn called once, round-robin starting r places along."""
    keys, out = list(fns), {}
    for key in keys[r % len(keys):] + keys[:r % len(keys)]:
        t0 = time.perf_counter()
        fns[key]()
        out[key] = time.perf_counter() - t0
    return out


def numpy_variants(n, d, k, seed):
    from metricfit.losses import csml, ddml, ldml, tsml

    fns = {}
    for dt in DTYPES:
        X1, X2, s, A = make_data(n, d, k, dt, seed)
        f_tsml, f_csml = tsml.objective(X1, X2, s), csml.objective(X1, X2, s)
        f_ddml = ddml.objective(X1, X2, s, T=DDML_T, tau=DDML_TAU)
        f_ldml, theta = ldml.objective(X1, X2, s), make_ldml_params(d, dt, seed)
        Z = X1 + s[:, None] * X2  # (n, d): the matrix the prepared TSML multiplies with
        fns[f"gemm_bound/{dt}"] = lambda Z=Z, A=A: (Z @ A.T).T @ Z
        fns[f"tsml_prepared/{dt}"] = lambda f=f_tsml, A=A: f(A)
        fns[f"tsml_cost_grad/{dt}"] = lambda a=(A, X1, X2, s): tsml.cost_grad(*a)
        fns[f"csml_prepared/{dt}"] = lambda f=f_csml, A=A: f(A)
        fns[f"csml_cost_grad/{dt}"] = lambda a=(A, X1, X2, s): csml.cost_grad(*a)
        fns[f"ddml_prepared/{dt}"] = lambda f=f_ddml, A=A: f(A)
        fns[f"ddml_cost_grad/{dt}"] = lambda a=(A, X1, X2, s): ddml.cost_grad(
            *a, T=DDML_T, tau=DDML_TAU)
        # LDML's bound: its two n x d x d GEMMs on D = X1 - X2 (the weights w held fixed)
        D, (M, _) = X1 - X2, ldml.unpack(theta, d)
        w = np.random.default_rng(seed).uniform(-1, 1, n).astype(dt)
        fns[f"ldml_bound/{dt}"] = lambda D=D, M=M, w=w: (D @ M, (w[:, None] * D).T @ D)
        fns[f"ldml_prepared/{dt}"] = lambda f=f_ldml, th=theta: f(th)
    return fns


def torch_cost_grad(loss, X1, X2, s, A):
    """The cost written the naive way (TSML eq. 7, CSML mean(-s cos), DDML seed 004 eqs. 5-6 with
    the stable softplus); autograd gradient."""
    import torch

    A = A.detach().requires_grad_(True)
    a, b = X1 @ A.T, X2 @ A.T
    if loss == "ddml":
        z = 1 - s * (DDML_TAU - ((a - b) ** 2).sum(1))
        Ji = 0.5 * torch.logaddexp(torch.zeros_like(z), DDML_T * z) / DDML_T
    elif loss == "tsml":
        c = a + s[:, None] * b
        Ji = 0.5 * (a * a).sum(1) + 0.5 * (b * b).sum(1) - torch.linalg.vector_norm(c, dim=1) + 1
    else:
        norms = torch.linalg.vector_norm(a, dim=1) * torch.linalg.vector_norm(b, dim=1)
        Ji = -s * (a * b).sum(1) / norms
    J = Ji.mean()
    J.backward()
    return J.detach(), A.grad


def torch_worker(args):
    """Subprocess main, one JSON line per stdin line: "run r" -> one timed round {key: seconds},
    "grad" -> the float64 costs and gradients {loss: [J, G as nested lists]}."""
    try:
        import torch
    except ImportError as exc:
        return print(json.dumps({"skipped": f"torch not importable: {exc}"}), flush=True)
    torch.set_num_threads(args.threads)
    fns, data = {}, {}
    for dt in DTYPES:
        data[dt] = [torch.from_numpy(x) for x in make_data(args.n, args.d, args.k, dt, args.seed)]
        for loss in TORCH_LOSSES:
            fns[f"torch_{loss}/{dt}"] = lambda loss=loss, x=data[dt]: torch_cost_grad(loss, *x)
    for r in range(WARMUP):
        time_round(fns, r)
    info = {"torch_version": torch.__version__, "torch_threads": torch.get_num_threads()}
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        if line.startswith("run"):
            print(json.dumps(time_round(fns, int(line.split()[1]))), flush=True)
        elif line.startswith("grad"):
            out = {loss: torch_cost_grad(loss, *data["float64"]) for loss in TORCH_LOSSES}
            print(json.dumps({k: [float(J), G.tolist()] for k, (J, G) in out.items()}), flush=True)


class TorchWorker:
    """The torch subprocess: its own thread pool (its OpenBLAS held to 1 thread), same data."""

    def __init__(self, args, threads):
        cmd = [sys.executable, __file__, "--torch-worker", f"--threads={threads}"]
        cmd += [f"--{name}={getattr(args, name)}" for name in ("n", "d", "k", "seed")]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS=str(threads))
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, env=env)

    def ask(self, request=None):
        if request is not None:
            self.proc.stdin.write(request + "\n")
            self.proc.stdin.flush()
        if not (line := self.proc.stdout.readline()):
            self.stderr.seek(0)
            raise RuntimeError(f"torch subprocess died: {self.stderr.read().strip()[-500:]}")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def start_torch(args, threads):
    """(worker or None, torch info or {"skipped": why})."""
    if args.no_torch or importlib.util.find_spec("torch") is None:
        return None, {"skipped": "--no-torch" if args.no_torch else "torch not installed"}
    worker = TorchWorker(args, threads)
    try:
        info = worker.ask()
    except RuntimeError as exc:
        info = {"skipped": str(exc)}
    return (worker.close() if "skipped" in info else worker), info


def run_benchmark(args, threads):
    """Timings {key: [seconds] * repeats} of all variants, and the torch info + gradient check."""
    fns = numpy_variants(args.n, args.d, args.k, args.seed)
    worker, torch_out = start_torch(args, threads)
    for r in range(WARMUP):
        time_round(fns, r)
    raw = {}
    for r in range(args.repeats):
        rounds = [time_round(fns, r)]
        if worker is not None:
            time.sleep(args.settle)
            rounds.append(worker.ask(f"run {r}"))
            time.sleep(args.settle)
        for key, t in (kv for times in rounds for kv in times.items()):
            raw.setdefault(key, []).append(t)
    if worker is not None:
        torch_out["grad_check"] = grad_check(args, worker.ask("grad"))
        worker.close()
    return raw, torch_out


def grad_check(args, torch_J_G):
    """Relative error of torch's float64 gradients against the prepared objectives'."""
    from metricfit.losses import csml, ddml, tsml

    X1, X2, s, A = make_data(args.n, args.d, args.k, "float64", args.seed)
    out = {}
    f_ddml = ddml.objective(X1, X2, s, T=DDML_T, tau=DDML_TAU)
    for loss, f in (("tsml", tsml.objective(X1, X2, s)), ("csml", csml.objective(X1, X2, s)),
                    ("ddml", f_ddml)):
        J, G = f(A)
        J_torch, G_torch = torch_J_G[loss]
        rel = float(np.linalg.norm(np.array(G_torch) - G) / np.linalg.norm(G))
        out[loss] = {"grad_rel_err": rel, "ok": rel < 1e-6, "J_metricfit": float(J),
                     "J_torch": J_torch}
    return out


def compile_times():
    """Two fresh processes on one empty NUMBA_CACHE_DIR: the first compiles, the second loads."""
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        for label in ("empty cache", "warm cache"):
            proc = subprocess.run([sys.executable, "-c", COMPILE_SNIPPET], capture_output=True,
                                  text=True, env=dict(os.environ, NUMBA_CACHE_DIR=cache))
            out[label] = (json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0
                          else {"error": proc.stderr.strip()[-500:]})
    return out


def cpu_clock():
    """(CPU seconds used by the whole machine (None without /proc/stat), by this process and its
    waited-for children, wall seconds): their differences tell how busy other processes were."""
    own = sum(os.times()[:4])
    try:
        with open("/proc/stat") as fh:
            ticks = [int(v) for v in fh.readline().split()[1:9]]
    except OSError:
        return None, own, time.monotonic()
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK"), own, time.monotonic()


def environment():
    import numba
    from threadpoolctl import threadpool_info

    env = {"python": platform.python_version(), "numpy": np.__version__,
           "numba": numba.__version__, "numba_threads": numba.get_num_threads(),
           "cpu_count": os.cpu_count(), "loadavg_start": os.getloadavg(), "cpu": "unknown",
           "vars": {v: os.environ.get(v) for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                                   "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}}
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as fh:
            names = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        env["cpu"] = names[0] if names else "unknown"
    env["threadpools"] = threadpool_info()
    return env


def summarise(raw):
    quartiles = {key: np.percentile(np.asarray(ts) * 1e3, [25, 50, 75]) for key, ts in raw.items()}
    return {key: {"median_ms": q[1], "iqr_ms": q[2] - q[0], "raw_ms": [t * 1e3 for t in raw[key]]}
            for key, q in quartiles.items()}


def ratios(stats, raw):
    """Ratio of medians and median of per-repeat ratios (all variants share each repeat)."""
    rows = []
    for label, num, den, target in RATIOS:
        pairs = [(num, den, "")] if "/" in num else [(f"{num}/{dt}", f"{den}/{dt}", f" [{dt}]")
                                                     for dt in DTYPES]
        for kn, kd, tag in pairs:
            if kn in stats and kd in stats:
                value = stats[kn]["median_ms"] / stats[kd]["median_ms"]
                met = None if target is None else (
                    value <= target[1] if target[0] == "<=" else value >= target[1])
                rows.append({"ratio": label + tag, "value": value, "met": met,
                             "paired": float(np.median(np.divide(raw[kn], raw[kd]))),
                             "target": "" if target is None else f"{target[0]} {target[1]}"})
    return rows


def report(env, comp, stats, ratio_rows, torch_out):
    print(f"== cpu {env['cpu']} ({env['cpu_count']} logical), python {env['python']}, numpy "
          f"{env['numpy']}, numba {env['numba']} ({env['numba_threads']} threads)")
    for pool in env["threadpools"]:
        print(f"{pool['user_api']}: {pool['internal_api']} {pool.get('version') or ''} kernel "
              f"{pool.get('architecture') or '-'}, {pool['num_threads']} threads")
    print(", ".join(f"{k}={v if v is not None else 'unset'}" for k, v in env["vars"].items()))
    busy = env["other_processes_cpu_share"]
    print(f"load average at start {env['loadavg_start']}; other processes used "
          f"{'?' if busy is None else f'{busy:.0%}'} of the CPU during the run")
    if busy is not None and busy > 0.1:
        print("WARNING: other processes competed for the CPU; expect noisy, inflated timings")
    print("== import and first call, s (fresh process, empty then warm NUMBA_CACHE_DIR)")
    for label, vals in comp.items():
        print(f"{label}: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k}: {v}"
                                       for k, v in vals.items()))
    if "skipped" in torch_out:
        print(f"== torch skipped: {torch_out['skipped']}")
    else:
        print(f"== torch {torch_out['torch_version']}, {torch_out['torch_threads']} threads, own "
              "process; float64 gradient vs metricfit:")
        for loss, chk in torch_out["grad_check"].items():
            print(f"  {loss}: rel. err {chk['grad_rel_err']:.1e} ({'ok' if chk['ok'] else 'FAIL'}),"
                  f" J {chk['J_metricfit']:.10g} (metricfit) {chk['J_torch']:.10g} (torch)")
    print(f"== one cost+gradient call (x bound: LDML rows over ldml_bound, others over gemm_bound)"
          f"\n{'variant':15s} {'dtype':8s} {'median ms':>10s} {'IQR ms':>8s} {'x bound':>13s}")
    for dt in DTYPES:
        for var in VARIANTS:
            if (st := stats.get(f"{var}/{dt}")) is not None:
                bound = BOUND_OF.get(var, "gemm_bound")
                x = st["median_ms"] / stats[f"{bound}/{dt}"]["median_ms"]
                print(f"{var:15s} {dt:8s} {st['median_ms']:10.2f} {st['iqr_ms']:8.2f} {x:13.2f}")
    print("== ratios (of medians; paired = median of per-repeat ratios)")
    for row in ratio_rows:
        verdict = "" if row["met"] is None else ("met" if row["met"] else "NOT MET")
        print(f"{row['ratio']:40s} {row['value']:6.2f}  paired {row['paired']:5.2f}  "
              f"{row['target']:8s} {verdict}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in (("n", 4800), ("d", 300), ("k", 300), ("repeats", 25), ("seed", 0)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--json", type=Path, default=DEFAULT_JSON)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--threads", type=int, help="BLAS and torch threads (default: BLAS's)")
    p.add_argument("--settle", type=float, default=0.2,
                   help="idle seconds at each switch between this process and torch's")
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.torch_worker:
        return torch_worker(args)
    if args.threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=args.threads, user_api="blas")  # for the rest of the process
    clock0 = cpu_clock()
    comp = compile_times()
    env = environment()
    blas = [pool["num_threads"] for pool in env["threadpools"] if pool["user_api"] == "blas"]
    threads = args.threads or (blas[0] if blas else os.cpu_count())
    raw, torch_out = run_benchmark(args, threads)
    (machine0, own0, wall0), (machine1, own1, wall1) = clock0, cpu_clock()
    env["other_processes_cpu_share"] = None if machine0 is None else max(
        0.0, (machine1 - machine0 - (own1 - own0)) / ((wall1 - wall0) * os.cpu_count()))
    stats = summarise(raw)
    ratio_rows = ratios(stats, raw)
    report(env, comp, stats, ratio_rows, torch_out)
    config = {k: v for k, v in vars(args).items() if k != "torch_worker"}
    result = {"config": {**config, "json": str(args.json), "threads": threads},
              "environment": env, "compile_s": comp, "timings": stats, "ratios": ratio_rows,
              "torch": torch_out}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, default=lambda o: o.item()))  # numpy scalars
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
