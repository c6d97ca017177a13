#!/usr/bin/env bash
# The supervisor inside Slurm jobs on the real test cluster (`grpo-launch submit` -> sbatch ->
# `grpo-launch supervise` -> srun --mpi=pmix steps) with the real grpo-trainer and injected
# faults (docs/supervisor.md). 2 nodes x 1 rank of tiny-moe, the configuration of the local
# tests: the final weights must equal the local uninterrupted run's (same ranks, threads, seed),
# except after a node loss, where the run continues on 1 rank (completion and resumption only).
#   supervise_slurm_test.sh MODE GRPO_LAUNCH GRPO_TRAINER SOURCE_DIR REFERENCE_DIR
#   MODE  kill9       rank 1 killed by SIGKILL at step 5
#         hang        rank 1 stopped with SIGSTOP: hang detected, the step killed, restarted
#         hangstack   rank 1 hangs in the update of step 7 (fault hang): srun forwards SIGUSR1, both
#                     ranks answer with their stacks (long lines rejoined), the hang_report has
#                     two groups (a tie on 2 ranks: no odd rank) and rank 1's is the fault's
#         oom         OOM_ERROR at step 5: micro batch halved
#         torn        crash while writing the checkpoint of step 6
#         node        node n2 crashes (slurmd and its tasks killed): n2 excluded, 1 rank continues
#         node_pp     the same with 2 ranks a node at PP = 2 (PP x DP): n1's 2 ranks continue at
#                     PP = 2 from the newest checkpoint (node_tp: the same at TP = 2)
#         partition   node n2 cut off the network at step 4 (cluster.sh partition: its processes
#                     live on, none of their packets gets through): n2 excluded, the run finishes on
#                     n1 at the layout re-planned for one node
#         health      --health-check fails on the second node of the health step only: that
#                     node excluded before the first attempt (node_unhealthy), the run trains
#                     on the other node alone
#         usr2        USR2 to the batch shell: checkpoint, scontrol requeue, the job resumes
#         budget      a crash on every attempt: exit 80, the job FAILED 80:0
#         supervisor  the supervisor killed (-9), the job requeued: state rebuilt from the log
#         longline    a --trainer-cmd program prints a 2,600-byte telemetry line on each rank:
#                     srun delivers it in 1 KiB pieces, the event log gets it whole
#         exit0       rank 1 exits 0 at step 5 (before the end): a failure, never `succeeded`;
#                     the restart finishes the run with the reference weights
#         ctld        slurmctld restarted mid-run: the run goes on, no failure, reference weights
#         diskfull    the run's checkpoints/ is a 1 MiB tmpfs on every node: the first checkpoint
#                     does not fit: exit 85 (disk full) at once, no restart, no half-written
#                     checkpoint left behind
#         spare       --spare-nodes 1, a node killed mid-run: the spare replaces it at the same
#                     layout; the final weights are the reference's
#         timelimit   a 2-minute time limit, no USR2 from Slurm, a run slowed to outlast it: before
#                     the limit the supervisor checkpoints and requeues (the job's end time); the
#                     job finishes with the reference weights, never reaching the limit (TIMEOUT)
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/supervise_lib.sh
source "$(dirname "$0")/supervise_lib.sh"
require_cluster
mode=$1 launch=$2 trainer=$3 src=$4 refdir=$5
check=(python3 "$src/tests/integration/check_supervised.py")
export PATH="$(dirname "$trainer"):$PATH" OMP_WAIT_POLICY=PASSIVE
run=$TEST_TMP/run
cluster=${GRPO_CLUSTER_SH:?}
cdir=${GRPO_TEST_CLUSTER_DIR:?}
JOB=""
killed_node=""
partitioned_node=""
tmpfs_pids=()

cleanup() {
  [[ -n "$JOB" ]] && scancel "$JOB" 2>/dev/null
  if [[ -n "$killed_node" ]]; then
    "$cluster" revive-node --dir "$cdir" "$killed_node" >&2 || true
  fi
  if [[ -n "$partitioned_node" ]]; then
    # Healed, the node answers Slurm again and ends what was left of the job on it.
    "$cluster" heal --dir "$cdir" "$partitioned_node" >&2 || true
    "$cluster" wait-idle --dir "$cdir" >&2 || true
  fi
  for pid in "${tmpfs_pids[@]}"; do nsenter -t "$pid" -m umount "$run/checkpoints" 2>/dev/null || true; done
  [[ -n ${GRPO_KEEP_TEST_TMP:-} ]] || rm -rf "$TEST_TMP"
}
trap cleanup EXIT

reference_sha() {
  [[ -s "$refdir/sha" ]] || fail "no reference weights in $refdir/sha (supervise.local.reference failed)"
  cat "$refdir/sha"
}

submit() { # extra args...
  submit_plain "${GRPO_TRAINER_SETS[@]}" "$@"
}

submit_plain() { # args... (no trainer settings: --trainer-cmd refuses them)
  local out
  out=$("$launch" --profile-dir "$src/tests/data/profiles" submit -p slurm-test -m tiny-moe \
    --set gpus_per_node=1 --run-dir "$run" --backoff 0.2 "$@") ||
    fail "grpo-launch submit failed: $out"
  JOB=$(sed -n 's/^Submitted batch job \([0-9][0-9]*\):.*/\1/p' <<<"$out")
  [[ -n "$JOB" ]] || fail "no job id in: $out"
}

# Lets the ranks held by a `hold` fault (HOLD5) go on.
release() { mkdir -p "$run/faults" && touch "$run/faults/release"; }

# The node tests' fault: once step 4 is done (the ranks wait at step 5: HOLD5), n2 dies (slurmd
# and its tasks killed; cleanup revives it); then the job must complete.
kill_n2_at_step4_and_finish() {
  wait_step "$run" 4 120
  killed_node=n2
  "$cluster" kill-node --dir "$cdir" n2 || fail "kill-node n2"
  release
  expect_completed 180
}

show() {
  scontrol show job "$JOB" >&2 || true
  tail -n 40 "$run"/slurm-*.err >&2 2>/dev/null || true
}

# Waits (bounded) for the job's final jobcomp record (not a REQUEUED one); prints it.
wait_done() { # seconds
  local deadline=$(($(now_ms) + $1 * 1000)) rec
  while :; do
    rec=$(grep "^JobId=$JOB " "$cdir/jobcomp.log" 2>/dev/null | grep -E " JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE) " | tail -1 || true)
    [[ -n "$rec" ]] && break
    if (($(now_ms) > deadline)); then
      show
      fail "job $JOB did not finish within $1 s"
    fi
    sleep 0.2
  done
  echo "$rec"
}

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

expect_completed() {
  local rec
  rec=$(wait_done "$1")
  [[ "$(field JobState "$rec")" == COMPLETED && "$(field ExitCode "$rec")" == 0:0 ]] ||
    { show; fail "job $JOB: $rec"; }
}

# Modes that act from outside at a step seen in the log slow every step down (0.4 s of sleep,
# results unchanged) so the run cannot finish before the test's poll reacts.
SLOW='slow@ms=400'
# Modes whose action must land before the run ends hold the ranks at the start of step 5
# (heartbeats going on) until the test has acted and calls `release`: slowing the steps down was
# not enough on a loaded machine (the run ended before the test's poll saw step 4 and acted).
HOLD5='hold@step=5'
t0=$(now_ms)
case "$mode" in
  kill9)
    submit --fault 'sigkill@step=5,rank=1'
    expect_completed 150
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure crash --attempts 2 --summary || fail "kill9"
    ;;
  hang)
    # Rank 1 freezes itself (SIGSTOP, the fault `sigstop`) at step 5: see supervise_local_test.sh.
    submit --hang-timeout 4 --fault 'sigstop@step=5,rank=1'
    expect_completed 150
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure hang --attempts 2 --summary || fail "hang"
    ;;
  hangstack)
    submit --hang-timeout 4 --fault 'hang@step=7,phase=update,rank=1'
    expect_completed 150
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure hang --attempts 2 --summary || fail "hangstack"
    python3 - "$run" <<'PY' || fail "no hang_report with both ranks' stacks"
import json, sys
ev = [json.loads(l) for l in open(f"{sys.argv[1]}/events.jsonl")]
h = next(e for e in ev if e["type"] == "hang_report")
print("hang_report:", h["summary"])
names = lambda g: [f["function"] for f in g["frames"]]
g1 = next(g for g in h["groups"] if g["ranks"] == [1])
g0 = next(g for g in h["groups"] if g["ranks"] == [0])
sys.exit(0 if (h["method"] == "signal" and h["answered"] == 2 and h["missing_ranks"] == []
               and not h["majority"] and h["odd_ranks"] == []
               and any("fire_step_faults" in n for n in names(g1))
               and not any("fire_step_faults" in n for n in names(g0))) else 1)
PY
    ;;
  oom)
    submit --fault 'oom@step=7,phase=update'
    expect_completed 150
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure oom --attempts 2 --summary || fail "oom"
    events_of "$run" remediation | grep -q '"micro_batch":8' || fail "no remediation to micro batch 8"
    ;;
  torn)
    submit --fault 'torn_ckpt@step=6'
    expect_completed 150
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure crash --attempts 2 --summary || fail "torn"
    ;;
  node)
    submit --hang-timeout 20 --fault "$HOLD5"
    kill_n2_at_step4_and_finish
    # The classes seen on the way may include the peers' comm failure before Slurm's verdict.
    # The first attempt ran the plan's layout; the one on the remaining node the layout re-planned
    # for one node (supervisor.json `replans`), from a checkpoint written at the first one.
    python3 - "$run" <<'PY' || fail "node loss not handled"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1] + "/events.jsonl")]
print(f"failures {[e['class'] for e in ev if e['type'] == 'failure']}")
# A node lost is not the run's fault: its exclusion spends no restart budget.
excl = [e for e in ev if e["type"] == "decision" and "n2" in e.get("exclude", [])]
sys.exit(0 if not excl or ("node_loss" in [e["class"] for e in ev if e["type"] == "failure"]
                           and not excl[0]["spends_budget"]) else 1)
PY
    "${check[@]}" "$run" --allow node_loss --allow comm --allow crash --world-size 1 \
      --excluded n2 --replanned 1 --summary || fail "node"
    ;;
  node_tp)
    # Issue 12's resharding on node loss: TP = 2 inside each of the 2 nodes (2 ranks per node, a
    # TP x EP plan for tiny-moe). n2 dies after step 4; the run must go on on n1 alone, at the
    # layout re-planned for one node, from the newest checkpoint (written at the first layout:
    # checkpoints are layout-independent), and finish.
    submit --hang-timeout 20 --fault "$HOLD5" --set gpus_per_node=2 --set tp=2
    kill_n2_at_step4_and_finish
    "${check[@]}" "$run" --allow node_loss --allow comm --allow crash --world-size 2 \
      --excluded n2 --replanned 1 --summary || fail "node_tp"
    ;;
  node_pp)
    # The same at a pipeline layout: PP = 2 over the 2 nodes' 4 ranks (PP x DP). n2 dies after
    # step 4; the run goes on on n1 alone at the layout re-planned for one node (the user's PP = 2
    # stays: its 2 stages on n1's 2 ranks), from the newest checkpoint, and finishes.
    submit --hang-timeout 20 --fault "$HOLD5" --set gpus_per_node=2 --set pp=2
    kill_n2_at_step4_and_finish
    "${check[@]}" "$run" --allow node_loss --allow comm --allow crash --world-size 2 \
      --excluded n2 --replanned 1 --layout pp=2 --summary || fail "node_pp"
    ;;
  partition)
    # Unlike `node`, nothing on n2 dies: rank 1 and n2's slurmd run on, unreachable. Rank 0 waits
    # in a collective, rank 1's telemetry stops, slurmctld stops hearing from n2. The attempt must
    # end (a hang, or Slurm's node failure) and n2 be excluded (the decision, or the health step,
    # which n2 cannot answer).
    submit --hang-timeout 20 --fault "$HOLD5"
    wait_step "$run" 4 120
    partitioned_node=n2
    "$cluster" partition --dir "$cdir" n2 || fail "partition n2"
    release
    expect_completed 240
    python3 - "$run" <<'PY' || fail "the partition was not handled"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1] + "/events.jsonl")]
first_end = next(e for e in ev if e["type"] == "attempt_ended")
last = [e for e in ev if e["type"] == "attempt_started"][-1]
print(f"failures {[e['class'] for e in ev if e['type'] == 'failure']}; first attempt ended "
      f"{first_end['outcome']} ({first_end.get('class')}); last resumed at {last['resume_step']}")
sys.exit(0 if last["resume_step"] >= 2 else 1)
PY
    "${check[@]}" "$run" --allow node_loss --allow comm --allow crash --allow hang --world-size 1 \
      --excluded n2 --summary || fail "partition"
    ;;
  spare)
    # --spare-nodes 1: the job holds 3 nodes for a 2-node plan. n2 dies at step 4: the spare takes
    # its place at the same world size and layout (no re-plan), so the final weights are the
    # uninterrupted run's (the reference) although training moved to another node mid-run.
    submit --hang-timeout 20 --fault "$HOLD5" --spare-nodes 1
    grep -q '^#SBATCH --nodes=3$' "$run"/job.sbatch || fail "the job does not ask for 3 nodes"
    kill_n2_at_step4_and_finish
    python3 - "$run" <<'PY' || fail "the spare did not replace the lost node"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1] + "/events.jsonl")]
starts = [e for e in ev if e["type"] == "attempt_started"]
lay = [(e.get("tp", 1), e.get("ep", 1), e.get("dp", 1)) for e in ev if e["type"] == "layout"]
print(f"attempts {[(e['hosts'], e['world_size'], e['spares']) for e in starts]}; layouts {lay}")
first, last = starts[0], starts[-1]
ok = first["spares"] == 1 and "n2" in first["hosts"] and last["world_size"] == first["world_size"]
ok = ok and "n2" not in last["hosts"] and len(last["hosts"]) == len(first["hosts"])
ok = ok and last["spares"] == 0 and len(set(lay)) == 1 and len(starts) >= 2
sys.exit(0 if ok else 1)
PY
    "${check[@]}" "$run" --sha "$(reference_sha)" --allow node_loss --allow comm --allow crash \
      --world-size 2 --attempts 2 --summary || fail "spare"
    ;;
  health)
    # The health step runs `grpo-launch health-check` once on each node of the attempt; the
    # command fails on the step's second node (SLURM_NODEID 1). The step after the exclusion has
    # one node (id 0): healthy.
    # (A script: --health-check is split without a shell, so it cannot hold "$SLURM_NODEID".)
    printf '#!/bin/sh\ntest "$SLURM_NODEID" != 1\n' >"$TEST_TMP/health.sh"
    chmod +x "$TEST_TMP/health.sh"
    submit --health-check "$TEST_TMP/health.sh"
    expect_completed 150
    python3 - "$run" <<'PY' || fail "unhealthy node not excluded"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1] + "/events.jsonl")]
bad = [e for e in ev if e["type"] == "node_unhealthy"]
starts = [e for e in ev if e["type"] == "attempt_started"]
print(f"node_unhealthy {[(e['node'], e['check'], e['excluded']) for e in bad]}; attempts on "
      f"{[e['hosts'] for e in starts]}")
ok = (len(bad) == 1 and bad[0]["check"] == "command" and bad[0]["excluded"]
      and len(starts) == 1 and len(starts[0]["hosts"]) == 1
      and starts[0]["hosts"][0] != bad[0]["node"] and starts[0]["excluded"] == [bad[0]["node"]]
      and not any(e["type"] == "failure" for e in ev))
sys.exit(0 if ok else 1)
PY
    "${check[@]}" "$run" --world-size 1 --summary || fail "health"
    ;;
  usr2)
    submit --fault "$HOLD5"
    wait_step "$run" 4 120
    scancel -b -s USR2 "$JOB" || fail "scancel -b -s USR2"
    release
    expect_completed 180
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure preemption --attempts 2 --summary || fail "usr2"
    python3 - "$run" <<'PY' || fail "requeue not recorded"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1] + "/events.jsonl")]
starts = [e for e in ev if e["type"] == "run_started"]
ok = len(starts) == 2 and starts[1]["restart_count"] == 1 and starts[0]["slurm_job_id"] == starts[1]["slurm_job_id"]
ok = ok and any(e["type"] == "decision" and e["kind"] == "requeue" for e in ev)
# A checkpoint after the signal: on request, or the periodic one of the step it arrived in.
stop = next((e["seq"] for e in ev if e["type"] == "state" and e.get("trigger") == "preemption"), None)
ok = ok and stop is not None and any(e["type"] == "checkpoint_saved" and e["seq"] > stop for e in ev)
sys.exit(0 if ok else 1)
PY
    ;;
  longline)
    pad=$(printf '%02600d' 0 | tr 0 x)
    echo "{\"type\":\"note\",\"pad\":\"$pad\"}" >"$TEST_TMP/long.json"
    printf '#!/bin/sh\nexec cat %s\n' "$TEST_TMP/long.json" >"$TEST_TMP/long.sh"
    chmod +x "$TEST_TMP/long.sh"
    submit_plain --trainer-cmd "$TEST_TMP/long.sh"
    expect_completed 120
    n=$(grep -c '"type":"note"' "$run/events.jsonl" || true)
    [[ "$n" == 2 ]] || { show; fail "want the note event of both ranks in events.jsonl, got $n"; }
    n=$(grep -c "\"pad\":\"$pad\"" "$run/events.jsonl" || true)
    [[ "$n" == 2 ]] || fail "a note's pad is not whole ($n of 2)"
    ;;
  budget)
    submit --max-restarts 2 --fault 'crash@step=3,rank=1,repeat=1'
    rec=$(wait_done 150)
    [[ "$(field JobState "$rec")" == FAILED && "$(field ExitCode "$rec")" == 80:0 ]] ||
      { show; fail "job $JOB: want FAILED 80:0: $rec"; }
    "${check[@]}" "$run" --exit 80 --failure crash --attempts 3 --summary || fail "budget"
    ;;
  supervisor)
    submit --fault 'hold@step=6'
    wait_step "$run" 5 120
    # pgrep never matches itself (a grep over /proc/*/cmdline would).
    sup=$(pgrep -f -- "supervise --run-dir $run" | head -n 1 || true)
    [[ -n "$sup" ]] || fail "no supervisor process found"
    kill -9 "$sup"
    rec=$(wait_done 60)
    # The batch script ended with the supervisor; hand the job back to Slurm as an operator would.
    scontrol requeue "$JOB" || fail "scontrol requeue $JOB"
    deadline=$(($(now_ms) + 120000))
    until [[ $(events_of "$run" run_started | wc -l) -ge 2 ]]; do
      (($(now_ms) < deadline)) || { show; fail "the requeued job did not start a supervisor"; }
      sleep 0.2
    done
    # Released only now: released at once, the orphaned ranks finished step 6 and committed its
    # checkpoint while no supervisor logged its step event, and the requeued run resumed after
    # it ("steps never completed: [6]", the flake of issue 14). The requeued ranks pass the hold.
    release
    deadline=$(($(now_ms) + 150000))
    until events_of "$run" run_finished | grep -q '"exit_code":0'; do
      (($(now_ms) < deadline)) || { show; fail "the requeued job did not finish"; }
      sleep 0.2
    done
    "${check[@]}" "$run" --sha "$(reference_sha)" --attempts 2 --summary || fail "supervisor"
    events_of "$run" attempt_ended | grep -q '"outcome":"abandoned"' || fail "no abandoned attempt"
    ;;
  exit0)
    submit --fault 'exit@step=5,rank=1,code=0'
    expect_completed 150
    # The peers of the vanished rank fail their collective (comm) or the step ends short
    # (incomplete); either way the attempt is a failure and the restart finishes the run.
    "${check[@]}" "$run" --sha "$(reference_sha)" --allow comm --allow incomplete --allow crash \
      --attempts 2 --summary || fail "exit0"
    events_of "$run" failure | grep -qE '"class":"(comm|incomplete|crash)"' || fail "no failure recorded"
    ;;
  ctld)
    submit --fault "$HOLD5"
    wait_step "$run" 4 120
    "$cluster" restart-ctld --dir "$cdir" || fail "restart-ctld"
    release
    expect_completed 150
    "${check[@]}" "$run" --sha "$(reference_sha)" --summary || fail "ctld"
    [[ -z "$(events_of "$run" failure)" ]] || fail "a failure was recorded across the restart"
    ;;
  diskfull)
    # Every node's mount namespace gets its own 1 MiB tmpfs over the run's checkpoints/ (the
    # rest of the run directory stays on the shared disk): the first checkpoint does not fit.
    # The ranks wait at step 1 until the tmpfs are there (the first checkpoint is step 2's).
    submit --fault 'hold@step=1'
    mkdir -p "$run/checkpoints"
    while read -r role pid _; do
      [[ "$role" == slurmd.* ]] || continue
      nsenter -t "$pid" -m mount -t tmpfs -o size=1m tmpfs "$run/checkpoints" ||
        fail "mount a tmpfs on ${role#slurmd.}"
      tmpfs_pids+=("$pid")
    done <"$cdir/pids"
    release
    rec=$(wait_done 150)
    [[ "$(field JobState "$rec")" == FAILED && "$(field ExitCode "$rec")" == 85:0 ]] ||
      { show; fail "job $JOB: want FAILED 85:0: $rec"; }
    node=$(events_of "$run" attempt_started | head -n 1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["hosts"][0])')
    pid=$(awk -v r="slurmd.$node" '$1 == r {print $2}' "$cdir/pids")
    python3 - "$run" "/proc/$pid/root$run/checkpoints" <<'PY' || fail "disk full not handled"
import json, os, sys
ev = [json.loads(l) for l in open(sys.argv[1] + "/events.jsonl")]
fails = [e for e in ev if e["type"] == "failure"]
gave = [e for e in ev if e["type"] == "decision" and e["kind"] == "give_up"]
left = os.listdir(sys.argv[2])
print(f"failures {[f['class'] for f in fails]}; give_up {[g['exit_code'] for g in gave]}; "
      f"left in the full checkpoints/: {left}")
ok = ("disk_full" in [f["class"] for f in fails] and [g["exit_code"] for g in gave] == [85]
      and not gave[0]["spends_budget"] and not [n for n in left if n.startswith(".tmp-")]
      and len([e for e in ev if e["type"] == "attempt_started"]) == 1)
sys.exit(0 if ok else 1)
PY
    ;;
  timelimit)
    # 10 steps of >= 9 s: ~100 s of training in 2-minute jobs, and no USR2 from Slurm (lead 0,
    # as on sites that do not send one): the supervisor reads the job's end time itself and
    # yields when it is within its margin (max(60 s, 3 x step + 3 x checkpoint)).
    submit --set slurm.time=00:02:00 --set slurm.signal_lead_seconds=0 --fault 'slow@ms=9000'
    grep -q '^#SBATCH --signal' "$run"/job.sbatch && fail "the batch script asks for a signal"
    expect_completed 230
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure preemption --attempts 2 --summary ||
      fail "timelimit"
    if grep "^JobId=$JOB " "$cdir/jobcomp.log" | grep -q "JobState=TIMEOUT"; then
      fail "the job reached its time limit"
    fi
    python3 - "$run" <<'PY' || fail "no requeue before the time limit"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1] + "/events.jsonl")]
req = [e["reason"] for e in ev if e["type"] == "decision" and e["kind"] == "requeue"]
starts = [e for e in ev if e["type"] == "run_started"]
print(f"requeues {req}; jobs started {len(starts)}")
sys.exit(0 if req and all("end time" in r for r in req) and len(starts) >= 2 else 1)
PY
    ;;
  *) fail "unknown mode $mode" ;;
esac
echo "ok: $mode in $(($(now_ms) - t0)) ms"
