#!/usr/bin/env bash
# Gabor by separable convolution against the FFT before it, on a lent 16-core machine (issue
# 27), in one call: the tree before (a copy of its metricfit/ in $BEFORE) and this tree,
# alternated, twice; this tree also with its blocks on the package pool forced
# (METRICFIT_KERNEL_THREADS=pool: the same as the default for Gabor, which has no numba
# driver; the variable mattered for the driver tried and dropped); then every descriptor
# before / after, the scaling table of the convnet and the descriptors, and torch's convnet.
# Each step has its own time limit; a failing step does not stop the others. Log in $OUT.
#
#     git archive a20dc1a metricfit | tar -x -C before_gabor   # the tree before, carried
#     BEFORE=before_gabor OUT=/tmp/out bash benchmarks/device_gabor_ab.sh
#     COUNTS="1 2" BEFORE=before_gabor OUT=/tmp/out bash benchmarks/device_gabor_ab.sh  # dry run
set -u
OUT=${OUT:-device_out}
BEFORE=$(cd "${BEFORE:?set BEFORE to a directory holding the metricfit/ package before}" && pwd)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
COUNTS=${COUNTS:-1 4 16}
CSV=$(echo "$COUNTS" | tr ' ' ',')
LOG=$OUT/gabor_ab.log
# shellcheck source=benchmarks/_log_steps.sh
source "$(dirname "$0")/_log_steps.sh"  # step NAME SECONDS COMMAND...
{ lscpu | grep -E "Model name|^CPU\(s\)"; } >"$LOG" 2>&1
for round in 1 2; do
    step "gabor before (FFT) $round" 90 env PYTHONPATH="$BEFORE" python3 \
        benchmarks/gabor_threads.py --n 512 --threads "$CSV"
    step "gabor after (separable) $round" 90 env PYTHONPATH="$PWD" python3 \
        benchmarks/gabor_threads.py --n 512 --threads "$CSV"
    step "gabor after (separable, pool forced) $round" 60 env METRICFIT_KERNEL_THREADS=pool \
        PYTHONPATH="$PWD" python3 benchmarks/gabor_threads.py --n 512 --threads "$CSV"
done
for tree in before after; do
    path=$([ "$tree" = before ] && echo "$BEFORE" || echo "$PWD")
    step "descriptors $tree" 90 env PYTHONPATH="$path" python3 benchmarks/bench_descriptors.py \
        --synthetic --n 512 --threads "$CSV" --no-cold
done
# shellcheck disable=SC2086
step scaling "${SCALING_LIMIT:-200}" env PYTHONPATH="$PWD" python3 benchmarks/scaling.py \
    --threads $COUNTS --only convnet_step convnet_inference descriptors --repeats 5 \
    --timeout 80 --json "$OUT/scaling.json" --markdown "$OUT/scaling.md"
cat "$OUT/scaling.md" >>"$LOG" 2>/dev/null
# shellcheck disable=SC2086
torch_step 45 $COUNTS
grep -vE "^\|---|^$" "$LOG"
