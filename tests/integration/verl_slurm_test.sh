#!/usr/bin/env bash
# `grpo-launch submit --engine verl` on the real Slurm test cluster: the generated batch script
# runs `grpo-launch supervise` in the allocation, verl-attempt.sh starts the stand-in Ray head on
# the batch host and a worker on the second node through the real srun, and the stand-in verl
# driver (tests/integration/verl_standin) trains steps of 2 s, each save taking 3 s. The job has a
# 2-minute time limit, no USR2, --end-margin 45: the supervisor exports end - 45 s to verl
# (MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP), verl saves before it by its own rule, the
# supervisor waits for a save in progress and requeues before the limit. Checked: the newest
# checkpoint is within one step of the last step line, the job never reaches TIMEOUT, no `ray
# stop`, the worker ran on the other node, and the requeued job resumes from that checkpoint
# (resume_mode=auto, the script says disable). docs/verl.md "The save before the end".
#   verl_slurm_test.sh GRPO_LAUNCH SOURCE_DIR
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/supervise_lib.sh
source "$(dirname "$0")/supervise_lib.sh"
require_cluster
launch=$1 src=$2
standin=$src/tests/integration/verl_standin
cdir=${GRPO_TEST_CLUSTER_DIR:?}
run=$TEST_TMP/run
JOB=""
cleanup() {
  [[ -n "$JOB" ]] && scancel "$JOB" 2>/dev/null || true
  if [[ -f $run/ray-temp-dirs ]]; then
    while read -r d; do
      [[ -n $d ]] || continue
      pkill -u "$(id -u)" -f -- "$d" 2>/dev/null || true
      rm -rf -- "$d"
    done <"$run/ray-temp-dirs"
  fi
  [[ -n ${GRPO_KEEP_TEST_TMP:-} ]] || rm -rf "$TEST_TMP"
}
trap cleanup EXIT
cd "$TEST_TMP"

# Only `ray` from the stand-ins: srun is Slurm's own.
mkdir -p bin
ln -s "$standin/bin/ray" bin/ray
export PATH=$TEST_TMP/bin:$PATH PYTHONPATH=$standin/python GRPO_STANDIN_STATE=$TEST_TMP/state
export GRPO_STANDIN_STEP_S=2 GRPO_STANDIN_SAVE_S=3
sed -e 's/trainer.nnodes=1/trainer.nnodes=2/' -e 's/trainer.n_gpus_per_node=8/trainer.n_gpus_per_node=2/' \
  -e 's/trainer.save_freq=2/trainer.save_freq=1000/' -e 's/trainer.total_training_steps=6/trainer.total_training_steps=1000/' \
  -e 's#Qwen/Qwen2.5-7B-Instruct#Qwen/Qwen2.5-0.5B-Instruct#' -e 's/tensor_model_parallel_size=2/tensor_model_parallel_size=1/' \
  "$src/tests/data/verl/standin_run.sh" >run.sh
out=$("$launch" --profile-dir "$src/tests/data/profiles" submit --engine verl run.sh -p slurm-test \
  --set device.bf16=true --set device.peak_bf16_tflops=1 --set slurm.time=00:02:00 \
  --set slurm.signal_lead_seconds=0 --end-margin 45 --run-dir "$run" --backoff 0.2 2>&1) ||
  fail "submit failed: $out"
JOB=$(sed -n 's/^Submitted batch job \([0-9][0-9]*\):.*/\1/p' <<<"$out")
[[ -n "$JOB" ]] || fail "no job id in: $out"
t0=$(now_ms)

show() {
  scontrol show job "$JOB" >&2 || true
  tail -n 40 "$run"/slurm-*.err >&2 2>/dev/null || true
}
# The job's end as Slurm has it (seconds since the epoch), read once it runs.
end=""
for _ in $(seq 600); do
  rec=$(scontrol show job -o "$JOB" 2>/dev/null || true)
  if grep -q "JobState=RUNNING" <<<"$rec"; then
    end=$(date -d "$(sed -n 's/.* EndTime=\([^ ]*\) .*/\1/p' <<<"$rec")" +%s)
    break
  fi
  sleep 0.2
done
[[ -n $end ]] || { show; fail "job $JOB did not start"; }
# Until the requeued job's attempt says where it resumed from (two run_started, two resume events).
deadline=$(($(now_ms) + 230 * 1000))
while :; do
  n=$(events_of "$run" resume | wc -l)
  ((n >= 2)) && break
  (($(now_ms) < deadline)) || { show; fail "no second attempt after the requeue within 230 s"; }
  sleep 0.5
done
scancel "$JOB"
JOB_DONE=$JOB
JOB=""
if grep "^JobId=$JOB_DONE " "$cdir/jobcomp.log" | grep -q "JobState=TIMEOUT"; then
  fail "the job reached its time limit"
fi

python3 - "$run" "$TEST_TMP/state" "$end" <<'PY' || { show; fail "checks failed (see above)"; }
import json, os, sys
run, state, end = sys.argv[1], sys.argv[2], float(sys.argv[3])
ev = [json.loads(l) for l in open(run + "/events.jsonl")]
drivers = [json.loads(l) for l in open(state + "/driver.jsonl")]
calls = [json.loads(l) for l in open(state + "/calls.jsonl")]
bad = []
def check(cond, what):
    print(("ok  " if cond else "FAIL") + " " + what)
    if not cond:
        bad.append(what)
decision = next((e for e in ev if e["type"] == "decision" and e["kind"] == "requeue"), None)
check(decision is not None and "end time" in decision.get("reason", ""), "requeued at the end time: %r" % decision)
first = [e for e in ev if e.get("attempt") == 1]
steps = [e["step"] for e in first if e["type"] == "step"]
saved = [e["step"] for e in first if e["type"] == "checkpoint_saved"]
print("attempt 1: last step line %s, checkpoints %s, decision at end - %.1f s"
      % (steps[-1:] , saved[-3:], end - decision["time"]))
check(saved and steps and saved[-1] >= steps[-1] - 1, "the newest checkpoint is within one step of the last step line")
check(decision["time"] <= end - 15 + 1, "yielded before the deadline (end - 15 s)")
esi = float(drivers[0]["esi"])
check(abs(esi - (end - 45)) <= 1, "verl was told end - 45 s: %.0f vs %.0f" % (esi, end - 45))
check(not [c for c in calls if c["argv"][:1] == ["stop"]], "no `ray stop`")
workers = [c for c in calls if c["argv"][:1] == ["start"] and "--head" not in c["argv"]]
heads = [c for c in calls if c["argv"][:1] == ["start"] and "--head" in c["argv"]]
check(workers and all(w["node"] and w["node"] != h["node"] for w in workers for h in heads[:1]),
      "the worker ran on the other node (srun): %r" % [(w["node"], h["node"]) for w in workers for h in heads[:1]])
resumes = [e for e in ev if e["type"] == "resume"]
check(resumes[0]["resume_mode"] == "disable", "attempt 1: the script's resume_mode")
check(resumes[1]["resume_mode"] == "auto" and resumes[1]["step"] == saved[-1],
      "the requeued job resumes from the newest checkpoint: %r" % resumes[1])
sys.exit(1 if bad else 0)
PY
echo "ok: verl walltime in $(($(now_ms) - t0)) ms"
