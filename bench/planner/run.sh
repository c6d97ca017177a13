#!/usr/bin/env bash
# Planner speed: the full search for qwen3-235b-moe on a 1024-node x 8-GPU profile must finish in
# under 100 ms. Measures in process (Google Benchmark) and the whole command (hyperfine: process
# start, profile loading, search, rendering). Writes bench/planner/RESULTS.md.
# Needs: scripts/install-deps.sh --bench (hyperfine; Google Benchmark) and a configured build/,
# where it builds planner_bench and grpo-launch.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cmake --build build --target planner_bench grpo-launch >/dev/null
out=bench/planner/RESULTS.md
cli=(build/bin/grpo-launch plan --profile moe-8node --model qwen3-235b-moe
     --set nodes=1024 --set grpo.gpu_memory_utilization=0.8)
{
  echo "# Planner benchmark"
  echo
  echo "Machine: $(nproc) cores, $(uname -sr), $(date -u +%Y-%m-%d). Command: \`bench/planner/run.sh\`."
  echo
  echo "## In process (make_plan only)"
  echo '```'
  build/bench/planner/planner_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null
  echo '```'
  echo
  echo "## Whole command"
  echo "\`${cli[*]}\`"
  echo '```'
  hyperfine --warmup 3 --runs 20 -N --style basic "${cli[*]}" 2>&1
  echo '```'
} > "$out"
cat "$out"
