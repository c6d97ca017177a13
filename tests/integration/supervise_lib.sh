# shellcheck shell=bash
# Shared by the supervisor's fault tests (local and Slurm): a tiny, fast training configuration,
# waiting on the event log, and the reference weights of an uninterrupted run.

# 6 SFT + 4 GRPO steps of tiny-moe, a checkpoint every 2 steps, one thread per rank. The batch
# sizes divide by 1 and 2 ranks; with 4 samples per rank per mini batch and a micro batch of 16
# (the plan's) or 8 (after OOM remediation) there is one micro batch either way, so the numbers
# do not change with the remediation.
GRPO_TRAINER_SETS=(
  --set trainer.sft_warmup_steps=6 --set trainer.total_training_steps=4
  --set trainer.sft_batch_size=8 --set trainer.save_freq=2 --set trainer.test_freq=-1
  --set trainer.val_before_train=false --set data.val_size=8 --set data.train_size=256
  --set data.train_batch_size=4 --set actor_rollout_ref.actor.ppo_mini_batch_size=4
  --set actor_rollout_ref.rollout.n=2 --set data.max_response_length=4
  --set trainer.threads=1 --set trainer.heartbeat_interval_s=0.5
)
GRPO_TOTAL_STEPS=10

# Seconds since the epoch, with fractions.
now_s() { echo "${EPOCHREALTIME}"; }

# events RUN TYPE: that type's events, one JSON object per line (empty when none yet).
events_of() {
  [[ -f "$1/events.jsonl" ]] || return 0
  grep -F "\"type\":\"$2\"" "$1/events.jsonl" 2>/dev/null || true
}

# wait_step RUN STEP SECONDS [PID]: until a step event >= STEP is in the log (fails after SECONDS,
# or when PID, the supervisor, is gone).
wait_step() {
  local run=$1 want=$2 limit=$3 pid=${4:-} deadline
  deadline=$(($(now_ms) + limit * 1000))
  while :; do
    if events_of "$run" step | python3 -c '
import json, sys
want = int(sys.argv[1])
sys.exit(0 if any(json.loads(l)["step"] >= want for l in sys.stdin if l.strip()) else 1)' "$want"; then
      return 0
    fi
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then fail "the supervisor ended before step $want"; fi
    (($(now_ms) < deadline)) || fail "no step $want within ${limit}s"
    sleep 0.05
  done
}

# rank_pid RUN RANK: the pid of RANK in the newest attempt (its `start` event).
rank_pid() {
  python3 - "$1" "$2" <<'PY'
import json, sys
run, rank = sys.argv[1], int(sys.argv[2])
pid = None
for line in open(f"{run}/events.jsonl"):
    e = json.loads(line)
    if e["type"] == "start" and e.get("rank") == rank:
        pid = e.get("pid")
print(pid or "")
PY
}

# The final weights of a reference run (run_dir's done event).
final_sha() {
  python3 -c '
import json, sys
shas = {json.loads(l).get("weights_sha256") for l in open(sys.argv[1] + "/events.jsonl")
        if "\"type\":\"done\"" in l}
print(shas.pop() if len(shas) == 1 else "")' "$1"
}
