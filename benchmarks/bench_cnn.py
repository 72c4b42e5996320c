"""Timing of the siamese convnet of seed 000 (metricfit.cnn, numba kernels) next to PyTorch CPU.

One training step is forward + backward of a batch of 64 pairs (128 images of 56x46) through
C1-S2-C3-S4-C5-F6 with the L1 energy and the loss of eq. 8; inference is the forward pass of
the same 128 images. Reported: median milliseconds per batch and images per second, a per-layer
breakdown of metricfit's step, the first-call numba compile time (a fresh process with an empty
cache) and the time of a first call that loads the cache.

PyTorch (only when installed) runs the same architecture in its own process, after metricfit's
timings, with the same thread count (``torch.set_num_threads``): C3's connection table is a
mask on a dense 45x15 kernel, so torch computes all 675 kernels (metricfit computes the 196
connected ones); subsampling is ``avg_pool2d`` times a per-map coefficient plus a bias. The
torch process also checks its loss and gradient against metricfit's on the same weights.

The table gives medians of wall time; the lines under it the fastest repeat of each and the
median process CPU time (on a shared machine the median wall time carries the other processes'
load, the minimum less so; with one thread the CPU time is the cost of the work itself).

    python benchmarks/bench_cnn.py [--threads 1] [--repeats 15] [--no-torch] [--no-compile]
        [--json /tmp/cnn/bench_cnn.json]

For a scaling harness (``benchmarks/scaling.py``): :func:`time_training_step` and
:func:`time_inference` return metricfit's median seconds at a thread count, on synthetic
images (no data folder); :func:`torch_seconds` the same for torch, in its own process.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_PAIRS = 64
SHAPE = (56, 46)

COMPILE_SNIPPET = r"""
import time, numpy as np
from metricfit.cnn import ConvNetwork, SiameseObjective, network_spec
net = ConvNetwork(network_spec((56, 46)))
theta = net.init(0)
rng = np.random.default_rng(0)
pairs = rng.normal(size=(4, 2, 56, 46)).astype(np.float32)
obj = SiameseObjective(net, pairs, np.array([1, -1, 1, -1]))
t = time.perf_counter(); obj.batch(theta, np.arange(4)); first = time.perf_counter() - t
t = time.perf_counter(); obj.batch(theta, np.arange(4)); second = time.perf_counter() - t
print(first, second)
"""

TORCH_SNIPPET = r"""
import json, sys, time
import numpy as np, torch
import torch.nn.functional as F
threads, repeats, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
torch.set_num_threads(threads)
d = np.load(path)
w = {k: torch.tensor(d[k], requires_grad=True) for k in d.files if k not in ("x", "s", "mask")}
mask = torch.tensor(d["mask"])
x, s = torch.tensor(d["x"]), torch.tensor(d["s"])

def subsample(h, coef, bias, window):
    return F.avg_pool2d(h, window) * coef[None, :, None, None] + bias[None, :, None, None]

def G(x):
    h = torch.tanh(F.conv2d(x, w["C1.W"], w["C1.b"]))
    h = torch.tanh(subsample(h, w["S2.coef"], w["S2.bias"], (2, 2)))
    h = torch.tanh(F.conv2d(h, w["C3.W"] * mask, w["C3.b"]))
    h = torch.tanh(subsample(h, w["S4.coef"], w["S4.bias"], (4, 3)))
    h = torch.tanh(F.linear(h.flatten(1), w["C5.W"], w["C5.b"]))
    return torch.tanh(F.linear(h, w["F6.W"], w["F6.b"]))

def loss():
    g = G(x)
    n = g.shape[0] // 2
    E = (g[:n] - g[n:]).abs().sum(1)
    Y, Q = (1 - s) / 2, 100.0
    return ((1 - Y) * 2 / Q * E**2 + Y * 2 * Q * torch.exp(-2.77 * E / Q)).mean()

def step():
    for v in w.values():
        v.grad = None
    J = loss(); J.backward(); return J

def infer():
    with torch.no_grad():
        return G(x)

out = {"J": float(step()), "grads": {k: v.grad.numpy().tolist() for k, v in w.items()}}
for name, fn in [("train", step), ("infer", infer)]:
    for _ in range(2):
        fn()
    times, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t); cpu.append(time.process_time() - c)
    out[name], out[name + "_cpu"] = times, cpu
print(json.dumps(out))
"""


def _env(threads):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS"):
        env[var] = str(threads)
    return env


def _limit_threads(threads):
    """Limit this process's BLAS threads (threadpoolctl when installed; else the caller must
    set OPENBLAS_NUM_THREADS before starting Python)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    return threadpool_limits(threads)


def _workload():
    """The benchmark's network, weights, siamese objective and 128 images (seeded)."""
    from metricfit.cnn import ConvNetwork, SiameseObjective, network_spec

    net = ConvNetwork(network_spec(SHAPE))
    theta = net.init(0)
    rng = np.random.default_rng(0)
    pairs = rng.normal(size=(N_PAIRS, 2) + SHAPE).astype(np.float32)
    s = np.where(np.arange(N_PAIRS) % 2 == 0, 1, -1)
    images = np.concatenate([pairs[:, 0], pairs[:, 1]])
    return net, theta, SiameseObjective(net, pairs, s), images


def _median_seconds(fn, threads, repeats):
    from metricfit import threads as package_threads

    with package_threads(threads):  # the layers' threads and BLAS alike
        fn()  # compile or load the cache, warm the workspace
        times = []
        for _ in range(max(1, int(repeats))):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return float(np.median(times))


def time_training_step(threads, repeats=10):
    """Median seconds of one training step (forward + backward, 64 pairs) on ``threads``."""
    net, theta, objective, _ = _workload()
    rows = np.arange(N_PAIRS)
    return _median_seconds(lambda: objective.batch(theta, rows), threads, repeats)


def time_inference(threads, repeats=10):
    """Median seconds of the forward pass of the 128 images on ``threads``."""
    net, theta, _, images = _workload()
    return _median_seconds(lambda: net.transform(theta, images, 2 * N_PAIRS), threads, repeats)


def torch_seconds(threads, repeats=10):
    """``{'train': s, 'infer': s}``: torch's median seconds on the same workload and weights,
    in its own process with ``threads`` threads (None when torch is not installed)."""
    if importlib.util.find_spec("torch") is None:
        return None
    net, theta, objective, images = _workload()
    J, grad = objective.batch(theta.astype(np.float64), np.arange(N_PAIRS))
    ours = {"net": net, "theta": theta, "images": images, "J": J, "grad": grad,
            "s": np.where(np.arange(N_PAIRS) % 2 == 0, 1, -1)}
    result = torch_timings(ours, argparse.Namespace(threads=threads, repeats=repeats))
    return {"train": result["train_ms"] / 1e3, "infer": result["infer_ms"] / 1e3}


convnet_step = time_training_step  # the names the scaling registry imports
convnet_inference = time_inference


def compile_times(threads):
    """(first call with an empty numba cache, first call loading the cache), in seconds."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(_env(threads), NUMBA_CACHE_DIR=cache)
        runs = [subprocess.run([sys.executable, "-c", COMPILE_SNIPPET], env=env, check=True,
                               capture_output=True, text=True).stdout.split()
                for _ in range(2)]
    return float(runs[0][0]), float(runs[1][0])


def _median_ms(fn, repeats, cpu=None):
    """Median wall ms of ``fn()`` and the wall times; the process CPU times (all threads) are
    appended to ``cpu`` when given."""
    fn()
    times = []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        if cpu is not None:
            cpu.append(time.process_time() - c)
    return 1e3 * float(np.median(times)), times


def layer_breakdown(net, theta, images, repeats):
    """Median ms of each layer's forward and backward in one training step (BLAS on one
    thread, as in the network's passes)."""
    from metricfit.cnn.threads import blas_single_threaded

    with blas_single_threaded():
        return _layer_breakdown(net, theta, images, repeats)


def _layer_breakdown(net, theta, images, repeats):
    params = net.unpack(theta, images.dtype)
    out, caches, inputs = np.ascontiguousarray(images[:, None]), {}, {}
    rows = {}
    for name, layer in net.layers.items():
        inputs[name] = out
        rows[name] = [_median_ms(lambda layer=layer, name=name: layer.forward(
            params[name], inputs[name]), repeats)[0]]
        out, caches[name] = layer.forward(params[name], out)
    d = np.ones_like(out)
    for name in reversed(list(net.layers)):
        layer = net.layers[name]
        first = name == "C1"
        rows[name].append(_median_ms(
            lambda layer=layer, name=name, d=d, first=first: layer.backward(
                params[name], caches[name], d, input_grad=not first), repeats)[0])
        d, _ = layer.backward(params[name], caches[name], d, input_grad=not first)
    return rows


def metricfit_timings(args):
    from metricfit.cnn import ConvNetwork, SiameseObjective, network_spec, num_threads

    with num_threads(args.threads):
        return _metricfit_timings(args, ConvNetwork, SiameseObjective, network_spec)


def _metricfit_timings(args, ConvNetwork, SiameseObjective, network_spec):

    net = ConvNetwork(network_spec(SHAPE))
    theta = net.init(0)
    rng = np.random.default_rng(0)
    pairs = rng.normal(size=(N_PAIRS, 2) + SHAPE).astype(np.float32)
    s = np.where(np.arange(N_PAIRS) % 2 == 0, 1, -1)
    objective = SiameseObjective(net, pairs, s)
    rows = np.arange(N_PAIRS)
    images = np.concatenate([pairs[:, 0], pairs[:, 1]])
    train_cpu, infer_cpu = [], []
    train, train_raw = _median_ms(lambda: objective.batch(theta, rows), args.repeats, train_cpu)
    infer, infer_raw = _median_ms(lambda: net.transform(theta, images, 2 * N_PAIRS),
                                  args.repeats, infer_cpu)
    J, grad = objective.batch(theta.astype(np.float64), rows)
    return {"train_ms": train, "infer_ms": infer, "train_raw": train_raw, "infer_raw": infer_raw,
            "train_cpu": train_cpu, "infer_cpu": infer_cpu,
            "layers_ms": layer_breakdown(net, theta, images, args.repeats),
            "J": J, "grad": grad, "net": net, "theta": theta, "images": images, "s": s}


def torch_timings(ours, args):
    net = ours["net"]
    params = net.unpack(ours["theta"], np.float32)
    arrays = {f"{n}.{k}": v for n, p in params.items() for k, v in p.items()}
    arrays.update(x=ours["images"][:, None], s=ours["s"].astype(np.float32),
                  mask=net.layers["C3"].table[:, :, None, None].astype(np.float32))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "weights.npz"
        np.savez(path, **arrays)
        time.sleep(1.0)  # let metricfit's BLAS threads go idle first
        out = subprocess.run([sys.executable, "-c", TORCH_SNIPPET, str(args.threads),
                              str(args.repeats), str(path)], env=_env(args.threads),
                             check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    torch_grad = net.pack({name: {k: np.asarray(result["grads"][f"{name}.{k}"])
                                  for k in layer.shapes} for name, layer in net.layers.items()})
    ours_grad = ours["grad"]
    result["grad_rel_err"] = float(np.linalg.norm(torch_grad - ours_grad)
                                   / np.linalg.norm(ours_grad))
    result["loss_rel_err"] = float(abs(result["J"] - ours["J"]) / abs(ours["J"]))
    return {"train_ms": 1e3 * float(np.median(result["train"])),
            "infer_ms": 1e3 * float(np.median(result["infer"])),
            "train_raw": result["train"], "infer_raw": result["infer"],
            "train_cpu": result["train_cpu"], "infer_cpu": result["infer_cpu"],
            "grad_rel_err": result["grad_rel_err"], "loss_rel_err": result["loss_rel_err"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--no-compile", action="store_true",
                        help="skip the two fresh processes that time the first call")
    parser.add_argument("--json", default="/tmp/cnn/bench_cnn.json")
    args = parser.parse_args(argv)
    os.environ.update(_env(args.threads))  # for the subprocesses
    limits = _limit_threads(args.threads)  # this process's BLAS pool
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs, threads={args.threads}")
    from metricfit.cli.bench import print_target

    print_target()  # numba's code: built for this processor's vector units, or narrower
    first, cached = (None, None) if args.no_compile else compile_times(args.threads)
    if first is not None:
        print(f"first call: {first:.2f} s with an empty numba cache (compile), {cached:.2f} s "
              "loading the cache")
    ours = metricfit_timings(args)
    have_torch = importlib.util.find_spec("torch") is not None and not args.no_torch
    theirs = torch_timings(ours, args) if have_torch else None
    images = 2 * N_PAIRS
    print(f"\n| batch of {N_PAIRS} pairs ({images} images 56x46), float32 | "
          "train fwd+bwd ms | train img/s | inference ms | inference img/s |")
    print("|---|---|---|---|---|")
    for name, r in [("metricfit (numba + NumPy)", ours), ("PyTorch CPU", theirs)]:
        if r is None:
            print(f"| {name} | torch not installed or --no-torch: skipped | | | |")
            continue
        print(f"| {name} | {r['train_ms']:.1f} | {1e3 * images / r['train_ms']:.0f} | "
              f"{r['infer_ms']:.1f} | {1e3 * images / r['infer_ms']:.0f} |")
    if theirs is not None:
        best = {k: (1e3 * min(ours[k + "_raw"]), 1e3 * min(theirs[k + "_raw"]))
                for k in ("train", "infer")}
        print(f"fastest of the {args.repeats} repeats (less sensitive to other processes): "
              f"train {best['train'][0]:.1f} vs torch {best['train'][1]:.1f} ms "
              f"({best['train'][0] / best['train'][1]:.2f}x), inference {best['infer'][0]:.1f} "
              f"vs {best['infer'][1]:.1f} ms ({best['infer'][0] / best['infer'][1]:.2f}x)")
        cpu = {k: (1e3 * np.median(ours[k + "_cpu"]), 1e3 * np.median(theirs[k + "_cpu"]))
               for k in ("train", "infer")}
        print(f"median process CPU time, all threads (with --threads 1 the cost without the "
              f"other processes' share of the cores): train {cpu['train'][0]:.1f} vs torch "
              f"{cpu['train'][1]:.1f} ms ({cpu['train'][0] / cpu['train'][1]:.2f}x), inference "
              f"{cpu['infer'][0]:.1f} vs {cpu['infer'][1]:.1f} ms "
              f"({cpu['infer'][0] / cpu['infer'][1]:.2f}x)")
        print(f"\nratio metricfit / torch: train {ours['train_ms'] / theirs['train_ms']:.2f}x, "
              f"inference {ours['infer_ms'] / theirs['infer_ms']:.2f}x; torch vs metricfit on "
              f"the same weights: loss rel. err {theirs['loss_rel_err']:.1e}, gradient rel. err "
              f"{theirs['grad_rel_err']:.1e}")
    print("\nmetricfit per layer (median ms, forward / backward):")
    for name, (fwd, bwd) in ours["layers_ms"].items():
        print(f"  {name:7s} {fwd:7.2f} / {bwd:7.2f}")
    print(f"load average after: {os.getloadavg()}")
    record = {"threads": args.threads, "compile_first_call_s": first, "cache_first_call_s": cached,
              "metricfit": {k: v for k, v in ours.items()
                            if k in ("train_ms", "infer_ms", "train_raw", "infer_raw",
                                     "train_cpu", "infer_cpu", "layers_ms")},
              "torch": theirs, "load_average_end": os.getloadavg()}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(record, indent=1))
    del limits


if __name__ == "__main__":
    main()
