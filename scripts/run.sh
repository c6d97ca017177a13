#!/usr/bin/env bash
# The main job on the embedded default: installs, builds, and runs a short supervised GRPO
# training of tiny-moe on this machine (profile local-cpu, 2 ranks, about a minute) with faults
# injected: rank 1 is killed (SIGKILL) at step 120 and the update of step 370 runs out of
# memory. The supervisor restarts from the newest checkpoint each time and halves the micro
# batch after the OOM; training completes by itself. Then it prints `grpo-launch status` and
# writes the HTML report. Extra arguments go to `grpo-launch run` (e.g. --fault, --set, --model).
# The plan of a real cluster: build/bin/grpo-launch --profile a100x8 --model qwen3-30b-moe --dry-run
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/build.sh >&2
bin=$root/build/bin/grpo-launch
export PATH="$root/build/bin:$PATH"
run_dir=${GRPO_RUN_DIR:-runs/demo-$(date -u +%Y%m%dT%H%M%SZ)}
rc=0
"$bin" run --profile local-cpu --model tiny-moe --run-dir "$run_dir" \
  --fault 'sigkill@step=120,rank=1' --fault 'oom@step=370,phase=update,rank=0' "$@" || rc=$?
echo
"$bin" status "$run_dir" || true
"$bin" report "$run_dir" -o "$run_dir/report.html" && echo "report: $run_dir/report.html"
exit "$rc"
