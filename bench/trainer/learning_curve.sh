#!/usr/bin/env bash
# Learning curve of grpo-trainer: tiny-moe on 2 ranks (torchrun environment on 127.0.0.1), SFT
# warm-start then GRPO on 1-2 digit addition. Writes <out>/rank{0,1}.jsonl, the human logs and
# <out>/curve.csv (one row per step; val_reward where validation ran).
#   usage: bench/trainer/learning_curve.sh [OUT_DIR]   (GRPO_TRAINER=path/to/grpo-trainer)
# Needs: scripts/install-deps.sh --bench and a built grpo-trainer; python3 (standard library) for
# curve.csv.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
trainer=${GRPO_TRAINER:-$root/build/bin/grpo-trainer}
out=${1:-$here/results/learning-curve}
rm -rf "$out" && mkdir -p "$out"
port=$((20000 + RANDOM % 20000))
args=(--model tiny-moe --run-dir "$out/run"
      --set trainer.sft_warmup_steps=300 --set trainer.sft_batch_size=64 --set trainer.sft_lr=1e-3
      --set trainer.total_training_steps=100
      --set data.train_batch_size=32 --set actor_rollout_ref.rollout.n=8
      --set actor_rollout_ref.actor.ppo_mini_batch_size=32
      --set actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=32
      --set actor_rollout_ref.actor.ppo_epochs=2
      --set actor_rollout_ref.actor.optim.lr=3e-5
      --set actor_rollout_ref.actor.optim.lr_warmup_steps=10
      --set data.val_size=256 --set trainer.test_freq=10 --set trainer.save_freq=50
      --set trainer.threads=1)
start=$(date +%s)
for r in 0 1; do
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
  OMP_WAIT_POLICY=PASSIVE "$trainer" "${args[@]}" > "$out/rank$r.jsonl" 2> "$out/rank$r.log" &
done
wait
end=$(date +%s)
echo "wall seconds: $((end - start))" | tee "$out/wall.txt"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
rows, start_val = [], None
for line in open(f"{out}/rank0.jsonl"):
    e = json.loads(line)
    if e["type"] == "validation" and e.get("when") == "grpo_start":
        start_val = e["val_reward"]
    if e["type"] != "step":
        continue
    rows.append(e)
cols = ["step", "phase", "reward", "reward_std", "val_reward", "sft_loss", "loss", "pg_loss", "kl",
        "entropy", "clip_frac", "grad_norm", "aux_loss", "response_length", "tokens_per_s", "step_s"]
with open(f"{out}/curve.csv", "w") as f:
    f.write(",".join(cols) + "\n")
    for e in rows:
        vals = {"reward": e.get("reward_mean")}
        f.write(",".join("" if (vals.get(c, e.get(c)) is None) else
                         (f"{vals.get(c, e.get(c)):.6g}" if isinstance(vals.get(c, e.get(c)), float)
                          else str(vals.get(c, e.get(c)))) for c in cols) + "\n")
vals = [(e["step"], e["val_reward"]) for e in rows if "val_reward" in e and e["phase"] == "grpo"]
print(f"val_reward at GRPO start: {start_val}")
print("val_reward during GRPO: " + " ".join(f"{s}:{v:.3f}" for s, v in vals))
PY
