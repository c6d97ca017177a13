#!/bin/bash
# `grpo-launch submit --engine verl` supervised through the LOCAL runner against the stand-in
# Ray and verl driver (tests/integration/verl_standin, documented there as stand-ins; docs/verl.md).
# A fake sbatch accepts the job; `grpo-launch supervise --local` then runs the run directory's
# verl-attempt.sh here. Modes:
#   crash     the driver crashes at step 3 once: restart, Ray torn down and started again, the
#             driver resumes from global_step_2 with trainer.resume_mode=auto (the script says
#             disable), the run succeeds at step 6; step lines counted as progress.
#   hang      the driver hangs at step 4 once: killed after --hang-timeout, restarted, resumes.
#   walltime  the job's end time (GRPO_VERL_END_TIME) 60 s away: every Ray node and the driver get
#             MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP and the driver saves before the end
#             (global_step_2, not a multiple of save_freq=100).
#   nodes     two Ray nodes (a stand-in srun starts the worker here): the head waits for both,
#             the worker is lost mid-run, the attempt stops, Ray is stopped on both nodes and a
#             new attempt resumes with resume_mode=auto.
# Usage: verl_local_test.sh MODE GRPO_LAUNCH SOURCE_DIR
source "$(dirname "$0")/lib.sh"
mode=$1 launch=$2 src=$3
standin=$src/tests/integration/verl_standin
cd "$TEST_TMP"
export GRPO_STANDIN_STATE=$TEST_TMP/state
cleanup() {
  PATH=$standin/bin:$PATH ray stop --force >/dev/null 2>&1 || true
  [[ -n ${GRPO_KEEP_TEST_TMP:-} ]] || rm -rf "$TEST_TMP"
}
trap cleanup EXIT

mkdir -p fake
printf '#!/bin/sh\necho 4242\n' >fake/sbatch
chmod +x fake/sbatch
script=$src/tests/data/verl/standin_run.sh
case $mode in
  walltime) sed 's/trainer.save_freq=2/trainer.save_freq=100/' "$script" >run.sh && script=$TEST_TMP/run.sh ;;
  nodes) sed 's/trainer.nnodes=1/trainer.nnodes=2/' "$script" >run.sh && script=$TEST_TMP/run.sh ;;
esac
PATH=$TEST_TMP/fake:$PATH "$launch" submit --engine verl "$script" --profile a100x8 \
  --run-dir "$TEST_TMP/run" --hang-timeout 3 --backoff 0.2 >submit.out ||
  fail "submit failed: $(cat submit.out)"
grep -q "Submitted batch job 4242" submit.out || fail "no job id: $(cat submit.out)"
bash -n run/job.sbatch || fail "job.sbatch is not valid bash"
bash -n run/verl-attempt.sh || fail "verl-attempt.sh is not valid bash"

export PATH=$standin/bin:$PATH PYTHONPATH=$standin/python GRPO_STANDIN_STEP_S=0.3
case $mode in
  crash) export GRPO_STANDIN_CRASH_AT=3 ;;
  hang) export GRPO_STANDIN_HANG_AT=4 ;;
  walltime)
    # The stand-in (verl's should_save_ckpt_esi) saves after a step once the time left is at most
    # 60 s + the longest step so far (0.3 s; none after step 1): with the end 60 s away (less the
    # second's fraction `date` drops) every step from 2 on qualifies, so the save is at step 2
    # however fast the run starts. (At 62 s a start under ~1 s put it at step 3.)
    export GRPO_VERL_END_TIME=$(($(date +%s) + 60))
    ;;
  nodes)
    export GRPO_VERL_NODES="n1 n2" SLURMD_NODENAME=n1  # srun: the stand-in, first on PATH
    export GRPO_STANDIN_WORKER_EXIT_AT_STEP=3
    ;;
esac
set +e
timeout 100 "$launch" --log-level info supervise --run-dir "$TEST_TMP/run" --local >sup.out 2>sup.err
rc=$?
set -e
[[ $rc == 0 ]] || fail "supervise exited $rc: $(tail -20 sup.err)"

# Every attempt's driver argv, in order (driver.jsonl, written by the stand-in driver).
py() { python3 - "$@"; }
py "$mode" "$TEST_TMP" <<'PYEOF' || fail "checks failed (see above)"
import json, os, sys
mode, tmp = sys.argv[1], sys.argv[2]
def lines(p):
    return [json.loads(l) for l in open(p) if l.strip()]
ev = lines(os.path.join(tmp, "run/events.jsonl"))
drivers = lines(os.path.join(tmp, "state/driver.jsonl"))
calls = lines(os.path.join(tmp, "state/calls.jsonl"))
bad = []
def check(cond, what):
    if not cond:
        bad.append(what)
steps = [e for e in ev if e["type"] == "step"]
attempts = [e for e in ev if e["type"] == "attempt_started"]
finished = [e for e in ev if e["type"] == "run_finished"]
check(finished and finished[-1].get("state") == "succeeded", "run succeeded: %r" % finished[-1:])
check(max(s["step"] for s in steps) == 6, "steps reach 6")
check(all("reward_mean" in s and "wall_s" in s and "pg_loss" in s for s in steps),
      "every step event carries reward_mean, wall_s, pg_loss")
check(any("val_reward" in s for s in steps), "a validation reward")
first = drivers[0]["argv"]
check(first[-1] == "trainer.resume_mode=disable", "attempt 1 keeps the script's resume_mode")
check("trainer.default_local_dir=ckpt" in first, "the script's checkpoint dir")
check(drivers[0]["env_probe"] == "exported by the script", "the script's export reaches the driver")
heads = [c for c in calls if c["argv"][:1] == ["start"] and "--head" in c["argv"]]
check(len(heads) == len(drivers), "one Ray head per attempt")
for h in heads:
    a = h["argv"]
    port = int([x for x in a if x.startswith("--port=")][0].split("=")[1])
    check(12000 <= port <= 32767 - 255, "GCS port in range: %d" % port)
    tdir = [x for x in a if x.startswith("--temp-dir=")][0].split("=", 1)[1]
    check(tdir.startswith("/tmp/grpo-ray-") and len(tdir) < 40, "short per-job temp dir " + tdir)
    for o in ("--num-cpus=", "--num-gpus=8", "--node-manager-port=", "--object-manager-port=",
              "--min-worker-port=", "--max-worker-port=", "--dashboard-port=", "--block"):
        check(any(x.startswith(o) for x in a), "ray start has " + o)
saved = [e["step"] for e in ev if e["type"] == "checkpoint_saved" and e.get("reason") == "verl"]
check(saved and max(saved) == 6, "verl's checkpoints reported as checkpoint_saved: %r" % saved)
stops = [c for c in calls if c["argv"][:1] == ["stop"]]
check(len(stops) >= len(drivers), "ray stop before every attempt (%d stops)" % len(stops))
if mode in ("crash", "hang", "nodes"):
    check(len(attempts) >= 2, "restarted")
    check(len(drivers) >= 2, "the driver ran again")
    check(drivers[-1]["argv"][-1] == "trainer.resume_mode=auto", "restart uses resume_mode=auto")
    failures = [e for e in ev if e["type"] == "failure"]
    check(failures, "a failure event")
    if mode == "hang":
        check(failures[0].get("class") == "hang", "the failure is a hang: %r" % failures[0])
    log2 = open(os.path.join(tmp, "run/logs/attempt-%d/rank-0.log" % len(attempts))).read()
    if mode in ("crash", "hang"):
        check("Resuming from" in log2 and "global_step_2" in log2, "attempt 2 resumed from global_step_2")
        after = failures[0]["attempt"] + 1
        resumed = [s["step"] for s in steps if s["attempt"] == after]
        check(min(resumed) == 3, "the resumed attempt starts at step 3: %r" % resumed)
        check(attempts[1].get("resume_step") == 2, "attempt 2 resumes from step 2 on disk")
if mode == "walltime":
    esi = drivers[0]["esi"]
    check(esi is not None and abs(float(esi) - float(os.environ["GRPO_VERL_END_TIME"])) < 1,
          "the driver got MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP = the end time")
    check(all(c["esi"] == esi for c in heads), "every Ray node got it too")
    log1 = open(os.path.join(tmp, "run/logs/attempt-1/rank-0.log")).read()
    check("Force saving checkpoint: ESI instance expiration approaching." in log1, "ESI save")
    check(os.path.isdir(os.path.join(tmp, "ckpt/global_step_2")), "saved before the end: global_step_2")
if mode == "nodes":
    workers = [c for c in calls if c["argv"][:1] == ["start"] and "--head" not in c["argv"]]
    check(workers and all(c["node"] == "n2" for c in workers), "the worker runs on n2")
    check(any("--address=" in " ".join(c["argv"]) for c in workers), "the worker joins the head")
    srun = open(os.path.join(tmp, "state/srun.log")).read()
    check("--nodelist=n2" in srun and "stop --force" in srun, "srun starts and stops Ray on n2")
    log1 = open(os.path.join(tmp, "run/logs/attempt-1/rank-0.log")).read()
    check("a Ray node ended" in log1, "the attempt saw the lost node")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PYEOF
echo "verl.local.$mode: ok"
