#!/usr/bin/env bash
# What numba compiles for on a lent machine, and what it costs (issue 27). On the 2-core AMD
# machine NUMBA_CPU_NAME=generic (plain x86-64, SSE2) gives about the 16-core Xeon's convnet
# times at one thread (140.5 / 49.9 ms against the Xeon's 138.2 / 55.0 ms; 53.5 / 19.4 ms
# compiled for the host); on the next Xeon numba compiled for its AVX-512 all the same
# (device_16core.sh, which does this script's work in less time). This script records, on
# the lent machine: numba's own report of the
# processor (`numba -s`), the NUMBA_* variables, /proc/cpuinfo's model and vector flags and
# metricfit.parallel.numba_target(); then the convnet at one thread (bench_cnn.py, torch
# included when installed) and the prepared float32 objectives (scaling.py, 1 thread) compiled
# as numba chooses, for x86-64-v4 (AVX-512) and with NUMBA_ENABLE_AVX=1, each with its own
# empty numba cache. Each step has its own time limit; a failing step does not stop the
# others.
#
#     OUT=/tmp/out bash benchmarks/device_codegen.sh
#     QUICK=1 OUT=/tmp/out bash benchmarks/device_codegen.sh   # fewer repeats (a dry run)
set -u
OUT=${OUT:-device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
REPEATS=${QUICK:+3}
REPEATS=${REPEATS:-9}
CACHES=$(mktemp -d)
LOG=$OUT/codegen.log
# shellcheck source=benchmarks/_log_steps.sh
source "$(dirname "$0")/_log_steps.sh"  # step NAME SECONDS COMMAND...
{
    lscpu | grep -E "Model name|^CPU\(s\)|Flags" | sed -E 's/(Flags: *).*/\1(below)/'
    grep -m1 "^flags" /proc/cpuinfo | tr ' ' '\n' | grep -E "^(sse4_2|avx|avx2|avx512f|fma)$" \
        | tr '\n' ' '
    echo
    env | grep "^NUMBA_" || echo "no NUMBA_* variable set"
} >"$LOG" 2>&1
step "numba -s" 60 bash -c "python3 -m numba -s | sed -n '/__Hardware Information__/,/__OS Information__/p'"
step target 60 python3 -c "
from metricfit.parallel import codegen_warning, numba_target
print(numba_target()); print(codegen_warning())"
run_as() {  # run_as LABEL [VAR=VALUE ...]: the convnet and the float32 objectives, 1 thread
    local label=$1; shift
    mkdir -p "$CACHES/$label"
    step "cnn $label" 240 env NUMBA_CACHE_DIR="$CACHES/$label" "$@" python3 \
        benchmarks/bench_cnn.py --threads 1 --repeats "$REPEATS" --no-compile \
        --json "$OUT/cnn_$label.json"
    step "objectives $label" 150 env NUMBA_CACHE_DIR="$CACHES/$label" "$@" python3 \
        benchmarks/scaling.py --threads 1 --only tsml_float32 ddml_float32 ldml_float32 \
        --repeats "$REPEATS" --timeout 140
}
run_as default
run_as x86-64-v4 NUMBA_CPU_NAME=x86-64-v4 NUMBA_CPU_FEATURES=+avx512f
run_as enable-avx NUMBA_ENABLE_AVX=1
grep -E "^==|numba compiles|warning|NumbaTarget|CPU Name|CPU Features|metricfit \(numba|PyTorch CPU|ratio|_float32 " \
    "$LOG"
