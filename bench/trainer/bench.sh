#!/usr/bin/env bash
# Throughput of a full GRPO step (rollout + old/reference log-probs + update) of grpo-trainer, one
# rank, for tiny-dense and tiny-moe, 1 and 2 threads, with and without the KV cache.
# Prints a Markdown table (median over the measured steps; the first 2 steps are warm-up).
#   usage: bench/trainer/bench.sh [STEPS]   (GRPO_TRAINER=path/to/grpo-trainer)
# Needs: scripts/install-deps.sh --bench and a built grpo-trainer; python3 (standard library) for
# the table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
trainer=${GRPO_TRAINER:-$root/build/bin/grpo-trainer}
steps=${1:-8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| model | threads | KV cache | tokens/s (step) | generated tok/s (rollout) | step s | rollout s | old+ref log-prob s | update s | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for model in tiny-dense tiny-moe; do
  for threads in 1 2; do
    for kv in true false; do
      run="$work/$model-$threads-$kv"
      env -u RANK -u WORLD_SIZE OMP_WAIT_POLICY=PASSIVE "$trainer" --model "$model" --run-dir "$run" \
        --resume none --log-level warn \
        --set trainer.sft_warmup_steps=0 --set trainer.total_training_steps="$steps" \
        --set trainer.val_before_train=false --set trainer.test_freq=-1 --set trainer.save_freq=-1 \
        --set trainer.threads="$threads" --set actor_rollout_ref.rollout.use_kv_cache="$kv" \
        --set data.max_response_length=16 \
        > "$run.jsonl" 2> "$run.log"
      python3 - "$run.jsonl" "$model" "$threads" "$kv" <<'PY'
import json, statistics, sys
path, model, threads, kv = sys.argv[1:]
steps = [e for e in map(json.loads, open(path)) if e["type"] == "step"][2:]
med = lambda k: statistics.median(e[k] for e in steps)
gen = statistics.median(e["generated_tokens"] / e["rollout_s"] for e in steps)
print(f"| {model} | {threads} | {'on' if kv == 'true' else 'off'} | {med('tokens_per_s'):.0f} | {gen:.0f} | "
      f"{med('step_s'):.3f} | {med('rollout_s'):.3f} | {med('old_logprob_s') + med('ref_logprob_s'):.3f} | "
      f"{med('update_s'):.3f} | {max(e['peak_rss_mib'] for e in steps):.0f} |")
PY
    done
  done
done
