#!/usr/bin/env bash
# The one prepared run on a lent 16-core machine (issue 27): the thread-scaling table of the
# linear objectives, their kernel sections (after a GEMM, as in the objectives), the index-pair
# passes, the convnet, the descriptors, NCA and PLDA at 1, 2, 4 and 16 threads; the objectives,
# kernels and NCA again at 16 threads with OpenBLAS's own idle spin (OPENBLAS_THREAD_TIMEOUT=28
# against metricfit's 16); torch CPU's convnet at the same thread counts; each descriptor at
# each count, Gabor's GIL turns and the machine's ceiling (ceiling.py). Each step has its own
# time limit and its log under $OUT (default ./device_out); a failing step does not stop the
# others. The GPU benchmark (bench_gpu.py) and PLDA / NCA scaling were run on the same kind of
# machine by their own commands (docs/results/timing.md).
#
#     OUT=/tmp/out bash benchmarks/device_run.sh
#     COUNTS="1 2" OUT=/tmp/out bash benchmarks/device_run.sh   # a dry run on 2 cores
set -u
OUT=${OUT:-device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
step() {  # step NAME SECONDS COMMAND...
    local name=$1 limit=$2; shift 2
    echo "== $name ($(date -u +%T), limit ${limit}s): $*" | tee -a "$OUT/steps.log"
    local t0=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    echo "== $name rc=$? in $((SECONDS - t0)) s" | tee -a "$OUT/steps.log"
}
{
    lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket"
    python3 -c "import numpy, scipy, sklearn, numba; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'sklearn', sklearn.__version__, 'numba', numba.__version__)"
    python3 -c "import torch; print('torch', torch.__version__)"
} >"$OUT/machine.log" 2>&1
LINEAR="tsml_float64 tsml_float32 csml_float64 csml_float32 ddml_float64 ddml_float32
    ldml_float64 ldml_float32"
KERNELS="kernel_tsml_float64 kernel_tsml_float32 kernel_csml_float64 kernel_csml_float32
    kernel_ddml_float64 kernel_ddml_float32 kernel_ldml_float64 kernel_ldml_float32
    kernel_index_tsml_float64 kernel_index_tsml_float32 kernel_index_csml_float64
    kernel_index_csml_float32 kernel_index_ddml_float64 kernel_index_ddml_float32
    kernel_index_ldml_float64 kernel_index_ldml_float32"
# metricfit's default idle spin for OpenBLAS (OPENBLAS_THREAD_TIMEOUT=16, scaling.py's default)
# shellcheck disable=SC2086
COUNTS=${COUNTS:-1 2 4 16}  # thread counts; the last one is the A/B's
LAST=${COUNTS##* }
# shellcheck disable=SC2086
step scaling "${SCALING_LIMIT:-300}" python3 benchmarks/scaling.py --threads $COUNTS \
    --only $LINEAR $KERNELS convnet_step convnet_inference descriptors nca_iteration plda_em \
    --repeats 5 --timeout 150 --json "$OUT/scaling.json" --markdown "$OUT/scaling.md"
# the same at the last count with OpenBLAS's own spin (2^28 cycles): what the variable is worth
# shellcheck disable=SC2086
OPENBLAS_THREAD_TIMEOUT=28 step spin28 "${SPIN_LIMIT:-90}" python3 benchmarks/scaling.py \
    --threads "$LAST" --only $LINEAR $KERNELS nca_iteration --repeats 5 --timeout 80 \
    --json "$OUT/spin28.json" --markdown "$OUT/spin28.md"
# shellcheck disable=SC2086
step blas_spin "${SPIN_KERNEL_LIMIT:-60}" python3 benchmarks/blas_spin.py --threads $COUNTS
step torch "${TORCH_LIMIT:-50}" python3 -c "
import sys; sys.path.insert(0, 'benchmarks')
import bench_cnn
for t in map(int, '$COUNTS'.split()):
    r = bench_cnn.torch_seconds(t, 10)
    print(f'torch CPU convnet, {t:2d} threads: train {1e3 * r[\"train\"]:.1f} ms, inference {1e3 * r[\"infer\"]:.1f} ms', flush=True)
"
# each descriptor at every count (which one stops scaling), and how often Gabor takes the GIL
# back on one thread (each turn a hand-off between threads when many run it)
step descriptors "${DESCRIPTORS_LIMIT:-120}" python3 benchmarks/bench_descriptors.py --synthetic \
    --n 1024 --threads "$(echo $COUNTS | tr ' ' ',')" --no-cold
step gil_waits "${GIL_LIMIT:-40}" python3 benchmarks/gil_waits.py --n 256
# the machine's own ceiling: a compute-only and a memory-streaming workload with no serial part
# shellcheck disable=SC2086
step ceiling "${CEILING_LIMIT:-60}" python3 benchmarks/ceiling.py --threads $COUNTS
cat "$OUT/machine.log" "$OUT/scaling.md" "$OUT/spin28.md" "$OUT/blas_spin.log" \
    "$OUT/torch.log" "$OUT/descriptors.log" "$OUT/gil_waits.log" "$OUT/ceiling.log" 2>/dev/null
