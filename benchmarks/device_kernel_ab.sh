#!/usr/bin/env bash
# The kernel sections on a lent 16-core machine (issue 27): the linear objectives, their kernel
# sections and the index-pair passes at 1, 2, 4 and 16 threads with the kernel sections on
# numba's threads (the default where numba's threading layer is thread-safe); the same at the
# last count on the package pool (METRICFIT_KERNEL_THREADS=pool) and with OpenBLAS's own idle
# spin (OPENBLAS_THREAD_TIMEOUT=20 and 28); the cost of one hand-off each way (handoff.py); NCA per
# iteration against scikit-learn's at 1 thread and the last count. Each step has its own time
# limit and log under $OUT; a failing step does not stop the others. (device_run.sh is the
# full table: convnet, descriptors, PLDA, torch too.)
#
#     OUT=/tmp/out bash benchmarks/device_kernel_ab.sh
#     COUNTS="1 2" OUT=/tmp/out bash benchmarks/device_kernel_ab.sh   # a dry run on 2 cores
set -u
OUT=${OUT:-device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
LOGS=$(mktemp -d)  # each step's own log (the lent machine returns few files: tails below)
step() {  # step NAME SECONDS COMMAND...
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS rc
    timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1
    rc=$?
    echo "== $name ($(date -u +%T), limit ${limit}s) rc=$rc in $((SECONDS - t0)) s" \
        >>"$OUT/steps.log"
    [ "$rc" = 0 ] || tail -5 "$LOGS/$name.log" >>"$OUT/steps.log"
}
COUNTS=${COUNTS:-1 2 4 16}
LAST=${COUNTS##* }
WORK=""
for loss in tsml csml ddml ldml; do
    for dt in float64 float32; do
        WORK="$WORK ${loss}_$dt kernel_${loss}_$dt kernel_index_${loss}_$dt"
    done
done
{
    lscpu | grep -E "Model name|^CPU\(s\)"
    python3 -c "import numpy, numba; print('numpy', numpy.__version__, 'numba', numba.__version__)"
} >"$OUT/steps.log" 2>&1
step handoff 60 python3 benchmarks/handoff.py --threads 1 2 4 8 "$LAST"
cp "$LOGS/handoff.log" "$OUT/"
# shellcheck disable=SC2086
step numba 200 python3 benchmarks/scaling.py --threads $COUNTS --only $WORK --repeats 7 \
    --timeout 190 --json "$OUT/numba.json" --markdown "$OUT/numba.md"
# shellcheck disable=SC2086
METRICFIT_KERNEL_THREADS=pool step pool 60 python3 benchmarks/scaling.py --threads "$LAST" \
    --only $WORK --repeats 7 --timeout 55 --markdown "$OUT/pool.md"
for spin in 20 28; do  # OpenBLAS's workers spinning through the kernel sections (16: not)
    # shellcheck disable=SC2086
    OPENBLAS_THREAD_TIMEOUT=$spin step "spin$spin" 60 python3 benchmarks/scaling.py \
        --threads "$LAST" --only $WORK --repeats 7 --timeout 55 --markdown "$OUT/spin$spin.md"
done
step nca 90 python3 -c "
import sys; sys.path.insert(0, 'benchmarks')
import bench_nca
for t in (1, $LAST):
    ours, theirs = bench_nca.time_iteration(t), bench_nca.time_sklearn_iteration(t)
    print(f'NCA on digits, {t:2d} threads: metricfit {1e3 * ours:.1f} ms, scikit-learn '
          f'{1e3 * theirs:.1f} ms per iteration ({theirs / ours:.2f}x)', flush=True)
"
cp "$LOGS/nca.log" "$OUT/"
cat "$OUT/steps.log" "$OUT/handoff.log" "$OUT/numba.md" "$OUT/pool.md" "$OUT/spin20.md" \
    "$OUT/spin28.md" "$OUT/nca.log" 2>/dev/null | grep -v "^|---|\|^| workload\|^$"
