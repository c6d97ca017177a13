#!/usr/bin/env bash
# Fused vs reference GRPO log-prob + loss, forward + backward, on the CPU: each measurement in a
# fresh process, REPEATS of each, alternating; prints a Markdown table of medians and keeps the
# raw JSON lines. ~8 GiB and ~1-2 minutes per reference run: run it on a quiet machine.
#   usage: bench/kernels/run_logprob.sh [BUILD_DIR] [REPEATS] [OUT.jsonl]
#   env:   TOKENS HIDDEN VOCAB THREADS (defaults 4096 2048 151936 2); PYTHON_REFERENCE=0 skips
#          the Python/LibTorch reference; PYTHON (default /usr/bin/python3, Debian's, which has
#          python3-torch) runs it
# Needs: scripts/install-deps.sh --bench (python3-torch for the Python reference) and
# kernels_logprob_bench built in BUILD_DIR; ~8 GiB of free memory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
repeats=${2:-3}
out=${3:-$(mktemp --suffix=.jsonl)}
bench=$build/bench/kernels/kernels_logprob_bench
[[ -x $bench ]] || { echo "missing $bench: build the target kernels_logprob_bench" >&2; exit 2; }
args=(--tokens "${TOKENS:-4096}" --hidden "${HIDDEN:-2048}" --vocab "${VOCAB:-151936}"
      --threads "${THREADS:-2}")
impls=(fused reference)
py=${PYTHON:-/usr/bin/python3}
if [[ ${PYTHON_REFERENCE:-1} != 0 ]] && "$py" -c 'import torch' 2>/dev/null; then
  impls+=(python)
else
  echo "no Python reference: $py cannot import torch (apt-get install python3-torch)" >&2
fi
export OMP_WAIT_POLICY=PASSIVE
: > "$out"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1; r <= repeats; ++r)); do
  for impl in "${impls[@]}"; do
    if [[ $impl == python ]]; then
      "$py" "$here/logprob_reference.py" "${args[@]}" >> "$out"
    else
      "$bench" --impl "$impl" "${args[@]}" >> "$out"
    fi
    echo "run $r $impl: $(tail -n1 "$out")" >&2
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["impl"], []).append(r)
ref = statistics.median(r["total_s"] for r in by.get("reference", rows))
print("| implementation | runs | peak above inputs, fwd (GiB) | peak above inputs, fwd+bwd (GiB) | forward s | backward s | total s | speed vs C++ reference |")
print("|---|---|---|---|---|---|---|---|")
for impl, rs in by.items():
    med = lambda k: statistics.median(r[k] for r in rs)
    print(f"| {impl} | {len(rs)} | {med('peak_above_inputs_fwd_gib'):.2f} | {med('peak_above_inputs_gib'):.2f} | "
          f"{med('forward_s'):.1f} | {med('backward_s'):.1f} | {med('total_s'):.1f} | {ref / med('total_s'):.2f}x |")
print()
print("inputs: %.2f GiB; loss per implementation: %s" % (rows[0]["inputs_gib"],
      ", ".join(f"{i} {statistics.median(r['loss'] for r in rs):.7g}" for i, rs in by.items())))
PY
echo "raw results: $out" >&2
