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
