"""The convnet kernels' inner loops as a CPU model sees them (issue 27): ``llvm-mca``'s cycles
per vector multiply-add of each single-block loop of the compiled convolution kernels.

A *model*, not a measurement: it is for CPUs this project cannot run on (the lent 16-core
machines are Intel Xeons; this machine is an AMD EPYC). Compile for the CPU with numba's own
setting, then give llvm-mca the same CPU:

    NUMBA_CPU_NAME=sapphirerapids NUMBA_CACHE_DIR=$(mktemp -d) \\
        python benchmarks/mca_loops.py --mcpu sapphirerapids

A vector product is one ``vfmadd`` or one ``vmulp[sd]`` (then an add). Loops of fewer than
four products or without a ymm/zmm register are left out. Needs ``llvm-mca`` on the PATH
(Debian: the ``llvm`` package); the code runs on any x86-64 CPU that has the target's
instructions in the loops (AVX-512 here), but only the asm is inspected.
"""

import metricfit  # noqa: F401  (before NumPy: the package's thread settings)

# isort: split
import argparse
import re
import shutil
import subprocess
import tempfile

import numpy as np

from metricfit.cnn import _conv_kernels, lenet_table

LABEL = re.compile(r"^(\.LBB\d+_\d+):")


def single_block_loops(asm):
    """``(label, instructions)`` of each basic block that ends by jumping to its own label."""
    lines, loops = asm.splitlines(), []
    for i, line in enumerate(lines):
        match = LABEL.match(line)
        if not match:
            continue
        body, back_edge = [], re.compile(r"^j\w+\s+" + re.escape(match.group(1)) + r"$")
        for other in lines[i + 1:]:
            if LABEL.match(other):
                break
            text = other.strip()
            if text and not text.startswith((".", "#")):
                body.append(text)
                if back_edge.match(text):
                    loops.append((match.group(1), body))
                    break
    return loops


def vector_products(body):
    """(fused multiply-adds, multiplies) among the loop's instructions."""
    return (sum("vfmadd" in s for s in body),
            sum(re.match(r"vmulp[sd]\s", s) is not None for s in body))


def mca_cycles(body, mcpu, iterations=300):
    """llvm-mca's cycles per iteration of the loop body (its back edge left out)."""
    with tempfile.NamedTemporaryFile("w", suffix=".s") as f:
        f.write("\n".join(body[:-1]) + "\n")
        f.flush()
        out = subprocess.run(["llvm-mca", f"-mcpu={mcpu}", f"-iterations={iterations}", f.name],
                             capture_output=True, text=True, check=True).stdout
    return int(re.search(r"Total Cycles:\s+(\d+)", out).group(1)) / iterations


def compile_kernels():
    """The float32 convolution kernels on LeNet-sized maps (C1: 1 -> 15 maps of 7x7 on 56x46;
    C3: 15 -> 45 maps of 6x5 on 25x20, its backward pass): numba compiles them for its target."""
    rng = np.random.default_rng(0)
    f32 = np.float32
    X, W = rng.normal(size=(2, 1, 56, 46)).astype(f32), rng.normal(size=(15, 1, 7, 7)).astype(f32)
    _conv_kernels.conv2d_forward(X, W, np.zeros(15, f32), np.ones((15, 1), np.uint8), True)
    X3 = rng.normal(size=(2, 15, 25, 20)).astype(f32)
    W3 = rng.normal(size=(45, 15, 6, 5)).astype(f32)
    table = lenet_table(15, 45).astype(np.uint8)
    Y3 = _conv_kernels.conv2d_forward(X3, W3, np.zeros(45, f32), table, True)
    _conv_kernels.conv2d_backward(X3, W3, table, rng.normal(size=Y3.shape).astype(f32), True, Y3)
    return {"conv2d_forward_into": _conv_kernels.conv2d_forward_into,
            "_weight_grad_maps": _conv_kernels._weight_grad_maps,
            "_input_grad_into": _conv_kernels._input_grad_into}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mcpu", default="sapphirerapids", help="llvm-mca's CPU model")
    args = parser.parse_args(argv)
    if shutil.which("llvm-mca") is None:
        raise SystemExit("llvm-mca is not on the PATH")
    from numba.core.registry import cpu_target

    print("numba compiles for:", cpu_target.target_context.codegen().magic_tuple()[1],
          "| llvm-mca model:", args.mcpu)
    for name, kernel in compile_kernels().items():
        asm = "".join(kernel.inspect_asm().values())
        for label, body in single_block_loops(asm):
            fma, mul = vector_products(body)
            width = "zmm" if any("zmm" in s for s in body) else "ymm"
            if fma + mul < 4 or not any(r in s for s in body for r in ("ymm", "zmm")):
                continue
            cycles = mca_cycles(body, args.mcpu)
            print(f"{name:20s} {label:10s} {len(body):3d} instructions, {fma:2d} fma {mul:2d} "
                  f"mul ({width}): {cycles:6.2f} cycles an iteration, "
                  f"{cycles / (fma + mul):.3f} a vector product")


if __name__ == "__main__":
    main()
