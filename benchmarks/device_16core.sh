#!/usr/bin/env bash
# One prepared call on a lent 16-core machine (issue 27), in order of what it decides:
#   1. what numba compiles for there: the NUMBA_* variables, `numba -s`'s hardware section,
#      metricfit.parallel.numba_target(), /proc/cpuinfo's vector flags;
#   2. the convnet at one thread (bench_cnn.py, torch beside it) compiled four ways, each with
#      its own empty numba cache: as the machine's environment leaves numba ("as-is"), for the
#      host with every NUMBA_CPU_* variable unset and AVX on ("host"), for x86-64-v4 (AVX-512)
#      and for plain x86-64 ("generic", the slow reference);
#   3. the scaling table at COUNTS (default 1 4 16) under the fastest of as-is / host / v4,
#      named in the log: the linear objectives, convnet, descriptors, NCA, PLDA;
#   4. C5's forward blocks at COUNTS (dense_units.py); torch CPU's convnet at COUNTS; the
#      machine's ceiling (ceiling.py) and each descriptor at COUNTS.
# Each step has its own time limit; a failing step does not stop the others. The limits add up
# to 655 s, over the device's 600 s a command: where every step ran to its limit the last one
# (descriptors) would be cut (SCALING_LIMIT=150 keeps the sum under). Logs and JSON land in
# $OUT (default ./device_out).
#
#     OUT=/tmp/out bash benchmarks/device_16core.sh
#     COUNTS="1 2" OUT=/tmp/out bash benchmarks/device_16core.sh   # a dry run on 2 cores
set -u
OUT=${OUT:-device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
COUNTS=${COUNTS:-1 4 16}
LOG=$OUT/session.log
CACHES=$(mktemp -d)
# shellcheck source=benchmarks/_log_steps.sh
source "$(dirname "$0")/_log_steps.sh"  # step NAME SECONDS COMMAND...
{
    lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket"
    grep -m1 "^flags" /proc/cpuinfo | tr ' ' '\n' | grep -E "^(sse4_2|avx|avx2|avx512f|fma)$" \
        | tr '\n' ' '
    echo
    env | grep "^NUMBA_" || echo "no NUMBA_* variable set"
    python3 -c "import numpy, scipy, sklearn, numba, llvmlite; print('numpy', numpy.__version__, 'scipy', scipy.__version__, 'sklearn', sklearn.__version__, 'numba', numba.__version__, 'llvmlite', llvmlite.__version__)"
    python3 -c "import torch; print('torch', torch.__version__)"
} >"$LOG" 2>&1
step "numba -s" 40 bash -c "python3 -m numba -s | sed -n '/__Hardware Information__/,/__OS Information__/p' | grep -v '^$'"
step target 30 python3 -c "
from metricfit.parallel import codegen_warning, numba_target
print(numba_target()); print(codegen_warning())"
# 2. the convnet at one thread, compiled four ways
declare -A SETTING=(
    [as-is]=""
    [host]="-u NUMBA_CPU_NAME -u NUMBA_CPU_FEATURES NUMBA_ENABLE_AVX=1"
    [v4]="NUMBA_CPU_NAME=x86-64-v4 NUMBA_CPU_FEATURES=+avx512f,+avx512bw,+avx512vl,+avx512dq,+avx2,+fma"
    [generic]="NUMBA_CPU_NAME=generic"
)
for label in as-is host v4 generic; do
    mkdir -p "$CACHES/$label"
    # shellcheck disable=SC2086
    step "cnn $label" 60 env ${SETTING[$label]} NUMBA_CACHE_DIR="$CACHES/$label" python3 \
        benchmarks/bench_cnn.py --threads 1 --repeats 5 --no-compile \
        $([ "$label" = as-is ] || echo --no-torch) --json "$OUT/cnn_$label.json"
done
BEST=$(python3 - "$OUT" <<'EOF'
import json, os, sys
times = {}
for label in ("as-is", "host", "v4"):
    try:
        with open(os.path.join(sys.argv[1], f"cnn_{label}.json")) as f:
            times[label] = json.load(f)["metricfit"]["train_ms"]
    except Exception:
        pass
print(min(times, key=times.get) if times else "as-is")
EOF
)
echo "== chosen for the table: $BEST (${SETTING[$BEST]:-the environment as it is})" >>"$LOG"
# 3. the scaling table under that setting (numba's cache from step 2 is reused)
LINEAR="tsml_float64 tsml_float32 csml_float64 csml_float32 ddml_float64 ddml_float32
    ldml_float64 ldml_float32"
# shellcheck disable=SC2086
step scaling "${SCALING_LIMIT:-210}" env ${SETTING[$BEST]} NUMBA_CACHE_DIR="$CACHES/$BEST" \
    python3 benchmarks/scaling.py --threads $COUNTS --only $LINEAR convnet_step \
    convnet_inference descriptors nca_iteration plda_em lmnn_evaluation mlkr_evaluation \
    lmnn_dense_evaluation \
    --repeats 5 --timeout 65 \
    --json "$OUT/scaling.json" --markdown "$OUT/scaling.md"
cat "$OUT/scaling.md" >>"$LOG" 2>/dev/null
# C5's forward product in 64 blocks (on numba's driver from 12 threads) against the 8 NumPy
# blocks it replaced (docs/results/timing.md, "C5's forward product in 64 fixed blocks"); its
# backward blocks on at most 4 threads (layers.GEMM_PER_THREAD) against every thread
# shellcheck disable=SC2086
step dense 20 env ${SETTING[$BEST]} NUMBA_CACHE_DIR="$CACHES/$BEST" python3 \
    benchmarks/dense_units.py --threads $COUNTS
# 4. torch at the same counts; the machine's ceiling; each descriptor at each count
step torch 40 python3 -c "
import sys; sys.path.insert(0, 'benchmarks')
import bench_cnn
for t in map(int, '$COUNTS'.split()):
    r = bench_cnn.torch_seconds(t, 7)
    print(f'torch CPU convnet, {t:2d} threads: train {1e3 * r[\"train\"]:.1f} ms, inference {1e3 * r[\"infer\"]:.1f} ms', flush=True)
"
# shellcheck disable=SC2086
step ceiling 30 env ${SETTING[$BEST]} python3 benchmarks/ceiling.py --threads $COUNTS
# shellcheck disable=SC2086
step descriptors 45 env ${SETTING[$BEST]} NUMBA_CACHE_DIR="$CACHES/$BEST" python3 \
    benchmarks/bench_descriptors.py --synthetic --n 512 --threads "$(echo $COUNTS | tr ' ' ',')" \
    --no-cold
grep -vE "^\|---|^$" "$LOG"
