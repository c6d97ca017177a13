#!/usr/bin/env bash
# The supervisor fed synthetic telemetry of 1,024 and 8,192 ranks (scale_bench.cpp): CPU per wall
# second, memory, event-log bytes per day, heartbeat-to-hang-decision time. Needs only the build
# (scripts/build.sh builds build/bench/supervisor-scale/scale_bench). Results: RESULTS.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${SCALE_BENCH:-$here/../../build/bench/supervisor-scale/scale_bench}
seconds=${1:-600}
for args in "--ranks 1024 --step-s 10" "--ranks 8192 --step-s 10" "--ranks 8192 --step-s 30" \
  "--ranks 8192 --step-s 10 --moe-layers 0"; do
  # shellcheck disable=SC2086
  "$bin" $args --seconds "$seconds" 2>/dev/null
done
