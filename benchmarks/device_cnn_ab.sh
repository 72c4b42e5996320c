#!/usr/bin/env bash
# A second prepared call on a lent 16-core machine (issue 27), after device_16core.sh:
#   1. the convnet's passes on numba's drivers against the package pool, alternating call by
#      call at 1, 4, 8 and 16 threads, with a bit-for-bit check (cnn_launchers.py);
#   2. the per-layer times at 16 threads, pool and drivers (bench_cnn.py), torch at 1, 4, 16;
#   3. PLDA's EM iteration at 16 threads with BLAS held to 1, 2, 4, 8, 16 threads (at 16
#      threads it ran slower than at 1: 7.8 against 6.1 ms);
#   4. NCA per iteration against scikit-learn's at 1 and 16 threads.
# Each step has its own time limit; a failing step does not stop the others. Logs in $OUT.
#
#     OUT=/tmp/out bash benchmarks/device_cnn_ab.sh
#     COUNTS="1 2" OUT=/tmp/out bash benchmarks/device_cnn_ab.sh   # a dry run on 2 cores
set -u
OUT=${OUT:-device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
COUNTS=${COUNTS:-1 4 8 16}
LAST=${COUNTS##* }
LOG=$OUT/session.log
# shellcheck source=benchmarks/_log_steps.sh
source "$(dirname "$0")/_log_steps.sh"  # step NAME SECONDS COMMAND...
{ lscpu | grep -E "Model name|^CPU\(s\)"; env | grep "^NUMBA_" || echo "no NUMBA_* variable"; } \
    >"$LOG" 2>&1
# shellcheck disable=SC2086
step launchers 120 python3 benchmarks/cnn_launchers.py --threads $COUNTS --rounds 15
for mode in pool numba; do
    step "layers $mode" 45 env METRICFIT_KERNEL_THREADS=$mode python3 benchmarks/bench_cnn.py \
        --threads "$LAST" --repeats 9 --no-compile --no-torch --json "$OUT/cnn_$mode.json"
done
step torch 45 python3 -c "
import sys; sys.path.insert(0, 'benchmarks')
import bench_cnn
for t in sorted({1, 4, $LAST}):
    r = bench_cnn.torch_seconds(t, 7)
    print(f'torch CPU convnet, {t:2d} threads: train {1e3 * r[\"train\"]:.1f} ms, inference {1e3 * r[\"infer\"]:.1f} ms', flush=True)
"
step plda 90 python3 -c "
import sys; sys.path.insert(0, 'benchmarks')
import metricfit
from threadpoolctl import threadpool_limits
from bench_plda import _em, core, median_time, synthetic
X, codes = synthetic(100_000, 256, per_identity=10)
for t in (1, $LAST):
    with metricfit.threads(t):
        counts, means, _, scatter = core.class_statistics(X, codes)
        for k in ([1] if t == 1 else sorted({1, 2, 4, 8, $LAST})):
            with threadpool_limits(k, user_api='blas'):
                _em(counts, means, scatter, 1)
                t1 = median_time(lambda: _em(counts, means, scatter, 1), 5)
                t6 = median_time(lambda: _em(counts, means, scatter, 6), 5)
            print(f'PLDA EM iteration, metricfit threads {t:2d}, BLAS {k:2d}: '
                  f'{1e3 * max(t6 - t1, 0) / 5:.2f} ms', flush=True)
"
step nca 90 python3 -c "
import sys; sys.path.insert(0, 'benchmarks')
import bench_nca
for t in (1, $LAST):
    ours, theirs = bench_nca.time_iteration(t), bench_nca.time_sklearn_iteration(t)
    print(f'NCA on digits, {t:2d} threads: metricfit {1e3 * ours:.1f} ms, scikit-learn '
          f'{1e3 * theirs:.1f} ms per iteration ({theirs / ours:.2f}x)', flush=True)
"
grep -vE "^\|---|^$" "$LOG"
