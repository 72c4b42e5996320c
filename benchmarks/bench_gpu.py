"""metricfit's array-API path on a GPU (issue 30): cost + gradient of TSML / CSML / DDML next to
torch autograd of the same formulation and the GPU GEMM bound, a whole TSML fit, and PLDA.

For each size (n pairs, d, k), float32, on one device:

- ``metricfit``: the prepared objective of :mod:`metricfit.losses.xp_linear` called as L-BFGS
  calls it: ``A`` (k, d) NumPy on the host in, ``(J, G)`` on the host out (one k x d transfer
  each way, included in the time);
- ``torch autograd``: ``bench_gradients.torch_cost_grad`` (the benchmark's own naive torch
  formulation, imported), ``A`` a device tensor, ``J`` and ``G`` left on the device;
- ``GEMM bound``: the two n x d x k GEMMs alone, ``(Z A^T)^T Z`` with Z = X1 + s X2 (TSML) or
  X1 - X2 (DDML); CSML's own bound is its four half-size GEMMs (``P1 = X1 A^T``,
  ``P2 = X2 A^T``, ``P1^T X1 + P2^T X2``), printed too.

Each time is the median of ``--repeats`` (>= 10) calls after warm-up, with
``torch.cuda.synchronize()`` before and after each call. Then one whole
``TSML(n_components=k).fit`` on 1e6 pairs x 256 (device tensors, dispatch on) timed end to end
(validation, preparation, L-BFGS, threshold calibration), and PLDA through
``bench_plda.time_plda_fit_gpu`` when that function exists. Every section runs in its own
try/except: an error is printed and the script goes on.

    python benchmarks/bench_gpu.py [--device cuda|cpu] [--sizes full|small] [--repeats 10]
        [--json benchmarks/results/bench_gpu.json] [--no-fit] [--no-plda] [--compile]

Without CUDA (and without ``--device cpu``) it says so and exits 0. ``--device cpu --sizes
small`` runs every section on torch CPU tensors at small sizes (a check that the script works
end to end, not a measurement of interest). ``--compile`` also times ``torch.compile`` of the
TSML step (compile time and per call; off by default).
"""

import argparse
import inspect
import json
import platform
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DEFAULT_JSON = HERE / "results" / "bench_gpu.json"
SIZES = {"full": [(4800, 300, 300), (200_000, 256, 128), (1_000_000, 256, 128)],
         "small": [(4800, 300, 300), (20_000, 64, 32), (50_000, 64, 32)]}
FIT_SIZE = {"full": (1_000_000, 256, 128), "small": (20_000, 64, 32)}
LOSSES = {"tsml": "triangular", "csml": "cosine", "ddml": "ddml"}
WARMUP = 3
TARGETS = {"bound": 1.5, "autograd": 3.0, "fit_s": 5.0}


def synchronize(device):
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_time(fn, device, repeats, warmup=WARMUP):
    """Median seconds of ``fn()`` over ``repeats`` calls after ``warmup``, synchronised."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    times = []
    for _ in range(repeats):
        synchronize(device)
        t0 = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def make_pairs(n, d, k, device, seed=0):
    """Float32 pairs on the device (drawn there): X2 near X1 for the first half (similar),
    independent for the rest; labels ±1 shuffled alike; A = I (k, d) + small noise (host)."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    X1 = torch.randn(n, d, device=device, generator=g)
    X2 = torch.randn(n, d, device=device, generator=g)
    half = n // 2
    X2[:half] = X1[:half] + 0.5 * X2[:half]
    s = torch.ones(n, device=device)
    s[half:] = -1
    rng = np.random.default_rng(seed)
    A = (np.eye(k, d) + 0.01 * rng.standard_normal((k, d))).astype(np.float32)
    return X1, X2, s, A


def bench_cost_grad(device, sizes, repeats):
    """Rows {loss, n, d, k, metricfit_ms, autograd_ms, bound_ms, csml_bound_ms, ...}."""
    import torch

    rows = []
    for n, d, k in sizes:
        try:
            rows.extend(_one_size(device, n, d, k, repeats))
        except Exception:  # noqa: BLE001 - one failing size must not stop the run
            print(f"[cost+grad n={n} d={d} k={k}] FAILED:\n{traceback.format_exc()}", flush=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows


def _bound_time(Z, At, device, repeats):
    """The two GEMMs of the prepared TSML / DDML objectives alone: ``(Z A^T)^T Z``."""
    return median_time(lambda: (Z @ At.T).T @ Z, device, repeats)


def _one_size(device, n, d, k, repeats):
    import array_api_compat
    import torch
    from bench_gradients import torch_cost_grad

    from metricfit.losses import xp_linear

    X1, X2, s, A = make_pairs(n, d, k, device)
    xp = array_api_compat.array_namespace(X1)
    At = torch.asarray(A, device=device)
    bound = _bound_time(X1 + s[:, None] * X2, At, device, repeats)  # Z freed after
    csml_bound = median_time(lambda: ((X1 @ At.T).T @ X1, (X2 @ At.T).T @ X2), device, repeats)
    rows = []
    for name, loss in LOSSES.items():
        params = {"T": 10.0, "tau": 1.0} if name == "ddml" else {}
        f = xp_linear.xp_objective(xp, loss, X1, X2, s, **params)
        ours = median_time(lambda f=f: f(A), device, repeats)
        theirs = median_time(lambda name=name: torch_cost_grad(name, X1, X2, s, At), device,
                             repeats)
        J, G = f(A)
        Jt, Gt = torch_cost_grad(name, X1, X2, s, At)
        rows.append({"loss": name, "n": n, "d": d, "k": k, "metricfit_ms": 1e3 * ours,
                     "autograd_ms": 1e3 * theirs, "bound_ms": 1e3 * bound,
                     "csml_bound_ms": 1e3 * csml_bound,
                     "J_rel_diff": float(abs(J - float(Jt)) / abs(float(Jt))),
                     "G_rel_diff": float(np.abs(G - Gt.cpu().numpy()).max() / np.abs(G).max())})
        print(_row_line(rows[-1]), flush=True)
        del f
    return rows


def _row_line(r):
    return (f"{r['loss']:5s} n={r['n']:>9,} d={r['d']} k={r['k']}: metricfit "
            f"{r['metricfit_ms']:.3f} ms, autograd {r['autograd_ms']:.3f} ms, GEMM bound "
            f"{r['bound_ms']:.3f} ms (CSML's 4 GEMMs {r['csml_bound_ms']:.3f}); |dG|/|G| "
            f"{r['G_rel_diff']:.1e}")


def bench_fit(device, n, d, k):
    """A whole TSML fit on device pairs, end to end."""
    import torch

    import metricfit
    from metricfit import TSML

    X1, X2, s, _ = make_pairs(n, d, k, device, seed=1)
    pairs = torch.stack([X1, X2], dim=1)
    del X1, X2
    synchronize(device)
    with metricfit.array_api_dispatch():
        few = torch.cat([torch.arange(500), torch.arange(n - 500, n)]).to(device)
        TSML(n_components=k, max_iter=3).fit(pairs[few], s[few])  # warm-up (imports)
        synchronize(device)
        t0 = time.perf_counter()
        est = TSML(n_components=k).fit(pairs, s)
        synchronize(device)
        seconds = time.perf_counter() - t0
        scores = est.pair_score(pairs[:20000])
    accuracy = float(np.mean((scores.cpu().numpy() >= est.threshold_) == (s[:20000].cpu().numpy()
                                                                         > 0)))
    return {"n": n, "d": d, "k": k, "seconds": seconds, "n_iter": est.n_iter_,
            "ms_per_iter": 1e3 * seconds / max(est.n_iter_, 1),
            "train_accuracy_first_20000": accuracy}


def bench_compile(device, n, d, k, repeats):
    """torch.compile of the TSML device step (C = U A^T, row norms, C_hat^T U): compile time
    and per call, next to the same step uncompiled."""
    import torch

    X1, X2, s, A = make_pairs(n, d, k, device)
    U = X1 + s[:, None] * X2
    At = torch.asarray(A, device=device)

    def step(U, A):
        C = U @ A.T
        norms = torch.linalg.vector_norm(C, dim=1)
        inv = torch.where(norms > 0, 1 / torch.where(norms > 0, norms, 1), 0)
        return norms.sum(), (C * inv[:, None]).T @ U

    eager = median_time(lambda: step(U, At), device, repeats)
    compiled = torch.compile(step)
    t0 = time.perf_counter()
    compiled(U, At)
    synchronize(device)
    compile_s = time.perf_counter() - t0
    ms = median_time(lambda: compiled(U, At), device, repeats)
    return {"n": n, "d": d, "k": k, "eager_ms": 1e3 * eager, "compiled_ms": 1e3 * ms,
            "compile_s": compile_s}


def bench_plda(device):
    try:
        import bench_plda
    except Exception as error:  # noqa: BLE001
        return {"status": f"bench_plda not importable: {error!r}"}
    fn = getattr(bench_plda, "time_plda_fit_gpu", None)
    if fn is None:
        return {"status": "missing: bench_plda.time_plda_fit_gpu does not exist (issue 30's "
                          "PLDA part, helper i27-plda)"}
    wanted = {"device": str(device), "n": 1_000_000, "d": 256, "n_identities": 100_000}
    accepted = inspect.signature(fn).parameters
    kwargs = {key: value for key, value in wanted.items() if key in accepted}
    return {"status": "ran", "kwargs": kwargs, "result": fn(**kwargs)}


def environment(device):
    import torch

    import metricfit

    env = {"python": platform.python_version(), "numpy": np.__version__,
           "torch": torch.__version__, "metricfit": getattr(metricfit, "__version__", "?"),
           "device": str(device), "machine": platform.machine(), "cpu": platform.processor()}
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
        env["cuda"] = torch.version.cuda
    return env


def table(rows):
    lines = ["| loss | pairs | d | k | metricfit (ms) | torch autograd (ms) | GEMM bound (ms) | "
             "metricfit / bound | autograd / metricfit |", "|---|---:|---:|---:|---:|---:|---:|"
             "---:|---:|"]
    for r in rows:
        bound = r["csml_bound_ms"] if r["loss"] == "csml" else r["bound_ms"]
        lines.append(f"| {r['loss'].upper()} | {r['n']:,} | {r['d']} | {r['k']} | "
                     f"{r['metricfit_ms']:.3f} | {r['autograd_ms']:.3f} | {r['bound_ms']:.3f} | "
                     f"{r['metricfit_ms'] / r['bound_ms']:.2f} (own bound "
                     f"{r['metricfit_ms'] / bound:.2f}) | "
                     f"{r['autograd_ms'] / r['metricfit_ms']:.2f} |")
    return "\n".join(lines)


def targets(rows, fit):
    out = []
    largest = max((r["n"] for r in rows), default=0)
    for r in rows:
        if r["n"] != largest:
            continue
        ratio, speedup = r["metricfit_ms"] / r["bound_ms"], r["autograd_ms"] / r["metricfit_ms"]
        out.append(f"{r['loss'].upper()} at {largest:,} pairs: metricfit / GEMM bound "
                   f"{ratio:.2f} (target <= {TARGETS['bound']}: "
                   f"{'met' if ratio <= TARGETS['bound'] else 'NOT MET'}); autograd / metricfit "
                   f"{speedup:.2f} (target >= {TARGETS['autograd']}: "
                   f"{'met' if speedup >= TARGETS['autograd'] else 'NOT MET'})")
    if fit:
        out.append(f"TSML fit {fit['n']:,} x {fit['d']} -> {fit['k']}: {fit['seconds']:.2f} s, "
                   f"{fit['n_iter']} iterations (target < {TARGETS['fit_s']} s: "
                   f"{'met' if fit['seconds'] < TARGETS['fit_s'] else 'NOT MET'})")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--sizes", default=None, choices=sorted(SIZES),
                        help="default: full on cuda, small on cpu")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--no-fit", action="store_true")
    parser.add_argument("--no-plda", action="store_true")
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("bench_gpu: torch is not installed; nothing to measure (pip install torch).")
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_gpu: no CUDA device here (torch.cuda.is_available() is False); skipped. "
              "Use --device cpu --sizes small to check the script on torch CPU tensors.")
        return 0
    try:
        import array_api_compat  # noqa: F401
    except ImportError:
        print("bench_gpu: array-api-compat is missing (pip install 'metricfit[array-api]').")
        return 1
    device = torch.device(args.device)
    sizes_key = args.sizes or ("full" if args.device == "cuda" else "small")
    repeats = max(args.repeats, 10)
    out = {"environment": environment(device), "sizes": sizes_key, "repeats": repeats}
    print("environment:", json.dumps(out["environment"]), flush=True)
    t_start = time.perf_counter()
    rows = bench_cost_grad(device, SIZES[sizes_key], repeats)
    out["cost_grad"] = rows
    fit = None
    if not args.no_fit:
        try:
            fit = bench_fit(device, *FIT_SIZE[sizes_key])
            print(f"TSML fit: {json.dumps(fit)}", flush=True)
        except Exception:  # noqa: BLE001
            print(f"[TSML fit] FAILED:\n{traceback.format_exc()}", flush=True)
    out["tsml_fit"] = fit
    if args.compile:
        try:
            out["compile"] = bench_compile(device, *FIT_SIZE[sizes_key], repeats)
            print(f"torch.compile of the TSML step: {json.dumps(out['compile'])}", flush=True)
        except Exception:  # noqa: BLE001
            print(f"[compile] FAILED:\n{traceback.format_exc()}", flush=True)
    if not args.no_plda:
        try:
            out["plda"] = bench_plda(device)
            print(f"PLDA: {out['plda']}", flush=True)
        except Exception:  # noqa: BLE001
            print(f"[PLDA] FAILED:\n{traceback.format_exc()}", flush=True)
    out["total_seconds"] = time.perf_counter() - t_start
    print()
    print(f"device: {out['environment'].get('gpu', args.device)}, torch "
          f"{out['environment']['torch']}, float32, median of {repeats} after {WARMUP} "
          "warm-up calls")
    print(table(rows))
    for line in targets(rows, fit):
        print("-", line)
    print(f"total {out['total_seconds']:.1f} s")
    path = args.json or DEFAULT_JSON
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=2))
        print(f"wrote {path}")
    except OSError as error:
        print(f"could not write {path}: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
