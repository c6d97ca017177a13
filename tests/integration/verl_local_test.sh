#!/bin/bash
# `grpo-launch submit --engine verl` supervised through the LOCAL runner against the stand-in
# Ray and verl driver (tests/integration/verl_standin, each behaviour cited there; docs/verl.md).
# A fake sbatch accepts the job; `grpo-launch supervise --local` then runs the run directory's
# verl-attempt.sh here. Every mode also checks: no `ray stop` (it would stop every Ray on the
# node), each attempt's Ray temp dir made by mktemp and gone after the run, and a Ray cluster of
# someone else on the machine (started before the run) still alive at the end. Modes:
#   crash     the driver crashes at step 3 once: restart, Ray started again, the driver resumes
#             from global_step_2 with trainer.resume_mode=auto (the script says disable: the run
#             has a checkpoint of its own now), the run succeeds at step 6; the validation line
#             before training (`step:2 - val-core/...`) is no step.
#   hang      the driver hangs at step 4 once: killed after --hang-timeout, restarted, resumes.
#   walltime  the job's end time (GRPO_VERL_END_TIME) 240 s away: every Ray node and the driver get
#             MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP = the end less the supervisor's
#             reserve (180 s) and the driver saves before it (global_step_2, save_freq=100).
#   nodes     two Ray nodes (a stand-in srun starts the worker here, with the node's CPUs): the
#             head waits for both, the worker is lost mid-run, the attempt stops, a new attempt
#             resumes with resume_mode=auto.
#   rules     trainer.logger without console, ray_kwargs.ray_init.num_cpus set, no save_freq:
#             submit adds console, drops num_cpus, sets save_freq (one note each) and the run
#             succeeds with step events (without: no step lines, ray.init refuses, no saves).
#   exit0     the driver exits 0 before its first step once: a failure (incomplete), not success.
#   older     resume_mode=disable over a checkpoint dir holding an older run's global_step_5 and
#             a crash before the first save: the restart keeps disable (never the older run's
#             checkpoint) and trains from step 1; the `resume` events say so.
# Usage: verl_local_test.sh MODE GRPO_LAUNCH SOURCE_DIR
source "$(dirname "$0")/lib.sh"
mode=$1 launch=$2 src=$3
standin=$src/tests/integration/verl_standin
cd "$TEST_TMP"
export GRPO_STANDIN_STATE=$TEST_TMP/state
foreign_pid=
cleanup() {
  [[ -n $foreign_pid ]] && kill "$foreign_pid" 2>/dev/null || true
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
  rules)
    sed -e "s/trainer.logger='\[\"console\"\]'/trainer.logger='[\"wandb\"]' ray_kwargs.ray_init.num_cpus=4/" \
      -e '/trainer.save_freq=2/d' "$script" >run.sh && script=$TEST_TMP/run.sh
    grep -q 'num_cpus=4' run.sh || fail "rules: the script was not rewritten"
    ;;
  older)
    # An older run's checkpoint, written before this run is submitted.
    mkdir -p ckpt/global_step_5/actor
    echo old >ckpt/global_step_5/actor/model_world_size_1_rank_0.pt
    echo 5 >ckpt/latest_checkpointed_iteration.txt
    touch -d '-1 hour' ckpt/latest_checkpointed_iteration.txt
    ;;
esac
PATH=$TEST_TMP/fake:$PATH "$launch" submit --engine verl "$script" --profile a100x8 \
  --run-dir "$TEST_TMP/run" --hang-timeout 3 --backoff 0.2 >submit.out 2>submit.err ||
  fail "submit failed: $(cat submit.out submit.err)"
if [[ $mode == rules ]]; then
  grep -q 'note: trainer.logger gets "console"' submit.err || fail "no logger note: $(cat submit.err)"
  grep -q 'note: ray_kwargs.ray_init.num_cpus=4 dropped' submit.err || fail "no num_cpus note: $(cat submit.err)"
  grep -q 'note: trainer.save_freq=1 (was -1)' submit.err || fail "no save_freq note: $(cat submit.err)"
fi
grep -q "Submitted batch job 4242" submit.out || fail "no job id: $(cat submit.out)"
bash -n run/job.sbatch || fail "job.sbatch is not valid bash"
bash -n run/verl-attempt.sh || fail "verl-attempt.sh is not valid bash"

export PATH=$standin/bin:$PATH PYTHONPATH=$standin/python GRPO_STANDIN_STEP_S=0.3
# Someone else's Ray on this machine (another job, another user's session): it must survive.
foreign_temp=$TEST_TMP/foreign-ray
ray start --head --port=6399 --temp-dir="$foreign_temp" --num-cpus=1 --num-gpus=0 --block \
  >foreign.out 2>&1 &
foreign_pid=$!
for _ in $(seq 50); do [[ -n $(ls "$GRPO_STANDIN_STATE/cluster-6399" 2>/dev/null) ]] && break; sleep 0.1; done
case $mode in
  crash) export GRPO_STANDIN_CRASH_AT=3 ;;
  exit0) export GRPO_STANDIN_EXIT0_AT=1 ;;
  older) export GRPO_STANDIN_CRASH_AT=1 ;;
  hang) export GRPO_STANDIN_HANG_AT=4 ;;
  walltime)
    # The supervisor exports the end less its reserve (180 s by default: self_save.h), 60 s
    # away. The stand-in (verl's should_save_ckpt_esi) saves after a step once the time left is
    # at most 60 s + the longest step so far (0.3 s; none after step 1): every step from 2 on
    # qualifies, so the save is at step 2 however fast the run starts.
    export GRPO_VERL_END_TIME=$(($(date +%s) + 240))
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
kill -0 "$foreign_pid" 2>/dev/null || fail "someone else's Ray was stopped"
[[ -n $(ls "$GRPO_STANDIN_STATE/cluster-6399") ]] || fail "someone else's Ray node is gone"

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
resumes = [e for e in ev if e["type"] == "resume"]
check(len(resumes) == len(attempts), "a resume event per attempt: %r" % resumes)
check(resumes[:1] and resumes[0]["resume_mode"] == "disable" and resumes[0]["step"] == -1,
      "attempt 1 keeps the script's resume_mode: %r" % resumes[:1])
heads = [c for c in calls if c["argv"][:1] == ["start"] and "--head" in c["argv"]
         and "--port=6399" not in c["argv"]]  # not the foreign Ray
check(len(heads) == len(drivers), "one Ray head per attempt")
for h in heads:
    a = h["argv"]
    port = int([x for x in a if x.startswith("--port=")][0].split("=")[1])
    check(12000 <= port <= 32767 - 255, "GCS port in range: %d" % port)
    tdir = [x for x in a if x.startswith("--temp-dir=")][0].split("=", 1)[1]
    check(tdir.startswith("/tmp/grpo-ray-") and len(tdir) == len("/tmp/grpo-ray-XXXXXX"),
          "a mktemp temp dir " + tdir)
    check(not os.path.exists(tdir), "the attempt's temp dir is removed: " + tdir)
    for o in ("--num-cpus=", "--num-gpus=8", "--node-manager-port=", "--object-manager-port=",
              "--min-worker-port=", "--max-worker-port=", "--dashboard-port=", "--block"):
        check(any(x.startswith(o) for x in a), "ray start has " + o)
saved = [e["step"] for e in ev if e["type"] == "checkpoint_saved" and e.get("reason") == "verl"]
check(saved and max(saved) == 6, "verl's checkpoints reported as checkpoint_saved: %r" % saved)
stops = [c for c in calls if c["argv"][:1] == ["stop"]]
check(not stops, "no `ray stop` (it stops every Ray process on the node): %r" % stops)
listed_file = os.path.join(tmp, "run/ray-temp-dirs")
listed = open(listed_file).read().split() if os.path.exists(listed_file) else []
check(len(listed) == len(heads), "every attempt's temp dir listed: %r" % listed)
check(all(s["step"] >= 1 for s in steps), "no step event for the validation before training")
if mode in ("crash", "hang", "nodes"):
    check(len(attempts) >= 2, "restarted")
    check(len(drivers) >= 2, "the driver ran again")
    check(drivers[-1]["argv"][-1] == "trainer.resume_mode=auto", "restart uses resume_mode=auto")
    check(resumes[-1:] and resumes[-1]["resume_mode"] == "auto" and resumes[-1]["step"] >= 2,
          "the last attempt resumes the run's checkpoint: %r" % resumes[-1:])
    failures = [e for e in ev if e["type"] == "failure"]
    check(failures, "a failure event")
    if mode == "hang":
        check(failures[0].get("class") == "hang", "the failure is a hang: %r" % failures[0])
    log2 = open(os.path.join(tmp, "run/logs/attempt-%d/rank-0.log" % len(attempts))).read()
    if mode in ("crash", "hang"):
        check("Resuming from" in log2 and "global_step_2" in log2, "attempt 2 resumed from global_step_2")
        check("step:2 - val-core" in log2, "attempt 2 validated before training (step:2)")
        after = failures[0]["attempt"] + 1
        resumed = [s["step"] for s in steps if s["attempt"] == after]
        check(min(resumed) == 3, "the resumed attempt starts at step 3: %r" % resumed)
        check(attempts[1].get("resume_step") == 2, "attempt 2 resumes from step 2 on disk")
if mode == "walltime":
    esi = drivers[0]["esi"]
    check(esi is not None and abs(float(esi) - (float(os.environ["GRPO_VERL_END_TIME"]) - 180)) < 1,
          "the driver got MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP = the end - 180 s: %r" % esi)
    check(all(c["esi"] == esi for c in heads), "every Ray node got it too")
    log1 = open(os.path.join(tmp, "run/logs/attempt-1/rank-0.log")).read()
    check("Force saving checkpoint: ESI instance expiration approaching." in log1, "ESI save")
    check(os.path.isdir(os.path.join(tmp, "ckpt/global_step_2")), "saved before the end: global_step_2")
if mode == "nodes":
    workers = [c for c in calls if c["argv"][:1] == ["start"] and "--head" not in c["argv"]]
    check(workers and all(c["node"] == "n2" for c in workers), "the worker runs on n2")
    check(any("--address=" in " ".join(c["argv"]) for c in workers), "the worker joins the head")
    srun = open(os.path.join(tmp, "state/srun.log")).read()
    check("--nodelist=n2" in srun and "--cpus-per-task=" in srun, "srun starts Ray on n2 with the node's CPUs")
    log1 = open(os.path.join(tmp, "run/logs/attempt-1/rank-0.log")).read()
    check("a Ray node ended" in log1, "the attempt saw the lost node")
if mode == "rules":
    a = drivers[0]["argv"]
    check('trainer.logger=["console","wandb"]' in a, "console added: %r" % a)
    check("trainer.save_freq=1" in a, "save_freq set")
    check(not any("num_cpus" in x for x in a), "num_cpus dropped")
    check(len(attempts) == 1, "one attempt")
if mode == "exit0":
    failures = [e for e in ev if e["type"] == "failure"]
    check(failures and failures[0].get("class") == "incomplete", "exit 0 without a step fails: %r" % failures)
    check(len(attempts) == 2, "restarted once")
if mode == "older":
    check(all(d["argv"][-1] == "trainer.resume_mode=disable" for d in drivers),
          "every attempt keeps disable: %r" % [d["argv"][-1] for d in drivers])
    check(len(attempts) == 2 and all(r["step"] == -1 for r in resumes), "no resume: %r" % resumes)
    check(min(s["step"] for s in steps if s["attempt"] == 2) == 1, "attempt 2 trains from step 1")
    check(attempts[1].get("resume_step") == -1, "attempt_started resume_step -1: %r" % attempts[1])
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PYEOF
echo "verl.local.$mode: ok"
