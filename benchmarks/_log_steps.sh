# shellcheck shell=bash
# step NAME SECONDS COMMAND...: COMMAND under its own time limit, its output appended to $LOG
# between two lines that name it, its exit status and its time; a failing step returns 0, so
# that the next ones still run. Sourced by the device_*.sh scripts that keep one log.
step() {
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS rc
    echo "== $name ($(date -u +%T), limit ${limit}s)" >>"$LOG"
    timeout "$limit" "$@" >>"$LOG" 2>&1
    rc=$?
    echo "== $name rc=$rc in $((SECONDS - t0)) s" >>"$LOG"
}

# torch_step SECONDS COUNTS...: torch CPU's convnet (bench_cnn.torch_seconds, 7 repeats) at each
# thread count, as one step; fails (rc 1, said in the log) where torch is not installed.
torch_step() {
    local limit=$1; shift
    step torch "$limit" env PYTHONPATH="$PWD" python3 -c "
import sys; sys.path.insert(0, 'benchmarks')
import bench_cnn
for t in map(int, '$*'.split()):
    r = bench_cnn.torch_seconds(t, 7)
    if r is None:
        sys.exit('torch is not installed')
    print(f'torch CPU convnet, {t:2d} threads: train {1e3 * r[\"train\"]:.1f} ms, inference '
          f'{1e3 * r[\"infer\"]:.1f} ms', flush=True)
"
}
