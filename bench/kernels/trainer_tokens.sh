#!/usr/bin/env bash
# grpo-trainer's throughput with kernels=fused vs kernels=reference: tiny-dense and tiny-moe, one
# rank, KV cache on, the settings of bench/trainer/bench.sh (32 prompts x 8 responses, responses
# of up to 16 tokens, 2 PPO epochs, random initialization); median over steps 3..STEPS. Each
# (model, threads) pair runs fused and reference back to back.
#   usage: bench/kernels/trainer_tokens.sh [STEPS] [THREADS...]   (GRPO_TRAINER=path/to/grpo-trainer)
# Needs: scripts/install-deps.sh --bench and a built grpo-trainer; python3 (standard library) for
# the table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
trainer=${GRPO_TRAINER:-$root/build/bin/grpo-trainer}
steps=${1:-8}
shift || true
threads_list=("${@:-1}")
[[ ${#threads_list[@]} -gt 0 ]] || threads_list=(1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "| model | threads | kernels | tokens/s (step) | step s | rollout s | old+ref log-prob s | update s | peak RSS MiB | final loss |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for model in tiny-dense tiny-moe; do
  for threads in "${threads_list[@]}"; do
    for kernels in fused reference; do
      run="$work/$model-$threads-$kernels"
      env -u RANK -u WORLD_SIZE OMP_WAIT_POLICY=PASSIVE "$trainer" --model "$model" --run-dir "$run" \
        --resume none --log-level warn \
        --set trainer.sft_warmup_steps=0 --set trainer.total_training_steps="$steps" \
        --set trainer.val_before_train=false --set trainer.test_freq=-1 --set trainer.save_freq=-1 \
        --set trainer.threads="$threads" --set actor_rollout_ref.rollout.use_kv_cache=true \
        --set data.max_response_length=16 --set kernels="$kernels" \
        > "$run.jsonl" 2> "$run.log"
      python3 - "$run.jsonl" "$model" "$threads" "$kernels" <<'PY'
import json, statistics, sys
path, model, threads, kernels = sys.argv[1:]
steps = [e for e in map(json.loads, open(path)) if e["type"] == "step"]
last = steps[-1]
steps = steps[2:]
med = lambda k: statistics.median(e[k] for e in steps)
print(f"| {model} | {threads} | {kernels} | {med('tokens_per_s'):.0f} | {med('step_s'):.3f} | "
      f"{med('rollout_s'):.3f} | {med('old_logprob_s') + med('ref_logprob_s'):.3f} | "
      f"{med('update_s'):.3f} | {max(e['peak_rss_mib'] for e in steps):.0f} | {last['loss']:.6f} |")
PY
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
