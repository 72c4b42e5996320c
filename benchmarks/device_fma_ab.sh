#!/usr/bin/env bash
# The convnet with and without fused multiply-adds, on a lent 16-core machine (issue 27): the
# code before the FMA intrinsics (a copy of its metricfit/ in $BEFORE) against this tree, in
# one call, alternating, so that both run on the same machine (the lent Xeons differed by 30%
# from one call to the next). llvm-mca's model of a Sapphire Rapids core puts the convolution
# loops at 0.54-0.63 cycles a vector product with FMA against 1.00 without; the AMD machine
# of this project gains 3-6% (docs/results/timing.md, "FMA in the convolution intrinsics").
#   1. the numba target and the per-layer times at 1 thread, before / after, twice;
#   2. the training step and inference at 4 and 16 threads, before / after;
#   3. torch at 1, 4 and 16 threads (when installed).
# Each step has its own time limit; a failing step does not stop the others. Log in $OUT.
#
#     git archive 27a6088 metricfit | tar -x -C before_fma   # the tree before, carried along
#     BEFORE=before_fma OUT=/tmp/out bash benchmarks/device_fma_ab.sh
#     COUNTS="1 2" BEFORE=before_fma OUT=/tmp/out bash benchmarks/device_fma_ab.sh  # dry run
set -u
OUT=${OUT:-device_out}
BEFORE=${BEFORE:?set BEFORE to a directory holding the metricfit/ package before the FMA change}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
COUNTS=${COUNTS:-4 16}
LOG=$OUT/fma_ab.log
# shellcheck source=benchmarks/_log_steps.sh
source "$(dirname "$0")/_log_steps.sh"  # step NAME SECONDS COMMAND...
{ lscpu | grep -E "Model name|^CPU\(s\)"; env | grep "^NUMBA_" || echo "no NUMBA_* variable"; } \
    >"$LOG" 2>&1
step target 60 env PYTHONPATH="$PWD" python3 -c "
from numba.core.registry import cpu_target
from metricfit.cnn import _simd
context = cpu_target.target_context
print(context.codegen().magic_tuple()[1], 'fma', _simd.fused_multiply_add(context), 'wide',
      _simd.wide_registers(context))"
run() {  # run LABEL TREE THREADS: the convnet timings of bench_cnn.py on TREE's metricfit
    step "$1 $3 threads" 60 env PYTHONPATH="$2" python3 benchmarks/bench_cnn.py --threads "$3" \
        --repeats 9 --no-compile --no-torch
}
for round in 1 2; do
    run "before (round $round)" "$BEFORE" 1
    run "after (round $round)" "$PWD" 1
done
for t in $COUNTS; do
    run before "$BEFORE" "$t"
    run after "$PWD" "$t"
done
# shellcheck disable=SC2086
torch_step 60 1 $COUNTS
grep -vE "^\|---|^$" "$LOG"
