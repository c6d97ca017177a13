#!/usr/bin/env bash
# The supervisor in local mode (`grpo-launch run --profile local-cpu`, no Slurm) against the
# real grpo-trainer with injected faults (docs/supervisor.md). Each test ends with training
# complete (or the documented failure), no step lost beyond the last checkpoint, and the final
# weights of an uninterrupted run of the same configuration (2 ranks, 1 thread, same seed).
#   supervise_local_test.sh MODE GRPO_LAUNCH GRPO_TRAINER SOURCE_DIR REFERENCE_DIR
#   MODE  reference   the uninterrupted run; writes REFERENCE_DIR/sha (a fixture of the others)
#         kill9       rank 1 killed by SIGKILL at step 5 (fault sigkill)
#         hang        rank 1 stops itself with SIGSTOP at step 5: detected within --hang-timeout + 1 s
#                     (then killed stack_timeout_s later: a stopped rank sends no stack)
#         phase       rank 1 hangs in the update phase of step 7 (fault hang): detected by the
#                     update limit calibrated from steps 3-6, reported with its phase
#         hangstack   4 ranks, rank 2 hangs in the update of step 7 (fault hang): before the kill
#                     every rank is asked for its stack (SIGUSR1); the hang_report names rank 2
#                     as the odd one, ranks 0, 1, 3 share one stack; status and report show it
#         health      --health-check that exits 1: exit 84 before any attempt, one clear line
#         oom         OOM_ERROR at step 5: micro batch halved, then training completes
#         torn        crash while writing the checkpoint of step 6: resumes from step 4
#         budget      a crash on every attempt: --max-restarts 2 used up, exit 80
#         supervisor  the supervisor itself killed (-9) at step 5; `supervise` continues the run
#         sigint      Ctrl-C: checkpoint and exit 130; `supervise` continues the run
#         layout      the plan's layout runs: EP=4 on 4 ranks trains to the end and `status` names
#                     it; a CP=2 plan is refused before anything starts (the trainer lacks CP)
#         moe_tp_ep   TP=2 x EP=2 of tiny-moe on 4 ranks (sequence parallelism on, as the planner
#                     picks with TP > 1) trains to the end; `status` and the layout event name it
#         moe_pp      TP=2 x PP=2 x EP=2 of tiny-moe on 4 ranks, uneven stages (1 + 3 layers, the
#                     planner's first_stage_layers): the same, and activations travel between the
#                     stages
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/integration/supervise_lib.sh
source "$(dirname "$0")/supervise_lib.sh"
mode=$1 launch=$2 trainer=$3 src=$4 refdir=$5
check=(python3 "$src/tests/integration/check_supervised.py")
export PATH="$(dirname "$trainer"):$PATH" OMP_WAIT_POLICY=PASSIVE
unset SLURM_JOB_ID
run=$TEST_TMP/run
base=(--log-level info run --profile local-cpu --model tiny-moe --run-dir "$run" "${GRPO_TRAINER_SETS[@]}"
  --backoff 0.1)

reference_sha() {
  [[ -s "$refdir/sha" ]] || fail "no reference weights in $refdir/sha (the reference test failed)"
  cat "$refdir/sha"
}

show() { tail -n 30 "$TEST_TMP/out" "$TEST_TMP/err" >&2 || true; }

# The layout `status` reports for the run ("TP=2 PP=1 CP=1 DP=2 EP=2 ETP=1").
status_layout() {
  "$launch" status "$run" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["layout"])'
}

# Runs the supervisor with `--set` settings (the arguments after the first two), checks the run
# ended well and that `status` reports the layout WANT. Usage: run_at_layout WHAT WANT ARGS...
run_at_layout() {
  local what=$1 want=$2
  shift 2
  "$launch" "${base[@]}" "$@" >"$TEST_TMP/out" 2>"$TEST_TMP/err" || { show; fail "$what run failed"; }
  "${check[@]}" "$run" --summary || fail "$what run"
  local got
  got=$(status_layout)
  [[ "$got" == "$want" ]] || fail "$what: status layout '$got', want '$want'"
}

# Modes that act from outside at a step seen in the log slow every step down (0.4 s of sleep,
# results unchanged) so the run cannot finish before the test's poll reacts.
SLOW='slow@ms=400'
t0=$(now_ms)
case "$mode" in
  reference)
    "$launch" "${base[@]}" >"$TEST_TMP/out" 2>"$TEST_TMP/err" || { show; fail "reference run failed"; }
    "${check[@]}" "$run" --summary || fail "reference run"
    sha=$(final_sha "$run")
    [[ -n "$sha" ]] || fail "no final weights"
    mkdir -p "$refdir" && echo "$sha" >"$refdir/sha"
    # The run directory: 0700, its logs, the Prometheus file.
    [[ "$(stat -c %a "$run")" == 700 && "$(stat -c %a "$run/logs")" == 700 ]] || fail "modes"
    [[ -s "$run/logs/attempt-1/rank-0.log" && -s "$run/logs/attempt-1/rank-1.log" ]] || fail "rank logs"
    grep -q '^grpo_step{run="run"} 10' "$run/metrics.prom" || fail "metrics.prom: $(cat "$run/metrics.prom")"
    grep -q "step 10/10" "$TEST_TMP/out" || fail "no final progress line: $(cat "$TEST_TMP/out")"
    # The layout that ran is the plan's (the local plan for tiny-moe uses expert parallelism).
    want=$(python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["plan"]["layout"]
print(" ".join(f"{k.upper()}={l[k]}" for k in ("tp", "pp", "cp", "dp", "ep", "etp")))' "$run/plan.json")
    got=$(status_layout)
    [[ "$got" == "$want" ]] || fail "status layout '$got', plan '$want'"
    ;;
  layout)
    run_at_layout "EP=4" "TP=1 PP=1 CP=1 DP=4 EP=4 ETP=1" --set gpus_per_node=4 --set tp=1 --set ep=4
    grep -q '"type":"layout"' "$run/events.jsonl" || fail "no layout event"
    code=0
    "$launch" run --profile local-cpu --model tiny-moe --run-dir "$TEST_TMP/cp2" --set cp=2 \
      >"$TEST_TMP/out2" 2>"$TEST_TMP/err2" || code=$?
    [[ $code == 2 ]] || fail "CP=2: exit $code, want 2"
    grep -q "^grpo-launch: error: the plan's layout cannot run in the embedded grpo-trainer: the embedded trainer runs data, tensor, pipeline, expert and expert-tensor parallelism only; this layout needs CP=2" "$TEST_TMP/err2" ||
      fail "CP=2: $(cat "$TEST_TMP/err2")"
    [[ ! -e "$TEST_TMP/cp2" ]] || fail "CP=2: a run directory was created"
    ;;
  moe_tp_ep)
    run_at_layout "TP=2 x EP=2" "TP=2 PP=1 CP=1 DP=2 EP=2 ETP=1" --set gpus_per_node=4 --set tp=2 \
      --set ep=2
    "${check[@]}" "$run" --layout-events 4 --layout tp=2 --layout ep=2 --layout dp=2 \
      --layout edp=2 --layout sequence_parallel=true --layout experts_per_rank=4 ||
      fail "layout events"
    ;;
  moe_pp)
    run_at_layout "TP=2 x PP=2 x EP=2" "TP=2 PP=2 CP=1 DP=1 EP=2 ETP=1" --set gpus_per_node=4 \
      --set tp=2 --set ep=2 --set pp=2 --set first_stage_layers=1
    # Every rank runs the 1 + 3 split, and every step sends activations between the stages.
    "${check[@]}" "$run" --layout-events 4 --layout tp=2 --layout pp=2 --layout ep=2 \
      --layout dp=1 --layout schedule='"1f1b"' --layout 'stage_layers=[[0, 1], [1, 4]]' \
      --step-bytes pp.send || fail "layout events"
    ;;
  moe_etp)
    # Expert tensor parallelism: each expert split over the TP group (ETP = TP = 2, 2 ranks); its
    # rows are gathered and reduce-scattered over TP in every MoE layer.
    run_at_layout "TP=2 x ETP=2" "TP=2 PP=1 CP=1 DP=1 EP=1 ETP=2" --set gpus_per_node=2 --set tp=2 \
      --set etp=2
    "${check[@]}" "$run" --layout-events 2 --layout tp=2 --layout etp=2 --layout ep=1 \
      --layout sequence_parallel=true --step-bytes tp.reduce_scatter || fail "layout events"
    ;;
  kill9)
    "$launch" "${base[@]}" --fault 'sigkill@step=5,rank=1' >"$TEST_TMP/out" 2>"$TEST_TMP/err" ||
      { show; fail "run failed"; }
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure crash --attempts 2 --summary || fail "kill9"
    ;;
  hang)
    # Rank 1 stops itself with SIGSTOP at the start of step 5 (the fault `sigstop`: a frozen
    # process, as `kill -STOP` makes one, but at a known point: ten steps take ~3 s here, faster
    # than a test polling the log can aim a signal). The fault_injected event is the stop time.
    "$launch" "${base[@]}" --hang-timeout 3 --fault 'sigstop@step=5,rank=1' >"$TEST_TMP/out" \
      2>"$TEST_TMP/err" || { show; fail "run failed"; }
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure hang --attempts 2 --summary || fail "hang"
    python3 - "$run" <<'PY' || fail "hang detection too slow"
import json, sys
ev = [json.loads(l) for l in open(f"{sys.argv[1]}/events.jsonl")]
stopped = next(e["trainer_time"] for e in ev if e["type"] == "fault_injected")
f = next(e for e in ev if e["type"] == "failure")
# Decided when the ranks were asked for their stacks (hang_report: time - waited_s). The
# stopped rank cannot answer: the supervisor sees its state T and does not wait stack_timeout_s
# (5 s) for it, only for rank 0's answer.
h = next(e for e in ev if e["type"] == "hang_report")
latency = h["time"] - h["waited_s"] - stopped
print(f"hang detected {latency:.2f} s after SIGSTOP (timeout {f['timeout_s']} s, silent {f['silent_s']:.2f} s; "
      f"stacks after {h['waited_s']:.2f} s: {h['summary']})")
sys.exit(0 if f["timeout_s"] == 3 and latency <= f["timeout_s"] + 1.0 and
         h["stopped_ranks"] == [1] and h["waited_s"] < 2.5 else 1)
PY
    ;;
  phase)
    # The fault `hang` mutes rank 1's telemetry and sleeps in the update phase of step 7; rank 0
    # waits in the update's all-reduce. Steps 3-6 calibrated the update limit (warm-up: steps
    # 1-2): max(--hang-timeout 2, 4 x the longest update silence).
    "$launch" "${base[@]}" --hang-timeout 2 --fault 'hang@step=7,phase=update,rank=1' \
      >"$TEST_TMP/out" 2>"$TEST_TMP/err" || { show; fail "run failed"; }
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure hang --attempts 2 --summary || fail "phase"
    python3 - "$run" <<'PY' || fail "hang not reported with its calibrated phase limit"
import json, sys
ev = [json.loads(l) for l in open(f"{sys.argv[1]}/events.jsonl")]
fault = next(e for e in ev if e["type"] == "fault_injected")
f = next(e for e in ev if e["type"] == "failure")
cal = [e for e in ev if e["type"] == "timeouts_calibrated" and e["seq"] < f["seq"]]
limit = cal[-1]["limits"].get("update") if cal else None
h = next(e for e in ev if e["type"] == "hang_report")  # decided: its time - waited_s
latency = h["time"] - h["waited_s"] - fault["trainer_time"]
print(f"hang in {f.get('phase')} ({f.get('trainer_phase')}) detected {latency:.2f} s after the "
      f"fault; timeout {f['timeout_s']:.2f} s, calibrated update limit {limit}, "
      f"longest update silence {cal[-1]['longest_s'].get('update') if cal else None}")
ok = (f.get("phase") == "update" and f.get("trainer_phase") == "update" and limit is not None
      and abs(f["timeout_s"] - limit) < 1e-9 and latency <= f["timeout_s"] + 1.0)
sys.exit(0 if ok else 1)
PY
    "$launch" status "$run" >"$TEST_TMP/status.txt" || fail "grpo-launch status"
    grep -q "attempt 1: hang in update" "$TEST_TMP/status.txt" || fail "status: $(cat "$TEST_TMP/status.txt")"
    grep -q "^timeouts .*update" "$TEST_TMP/status.txt" || fail "status: no timeouts line"
    ;;
  hangstack)
    # 4 ranks (the layout mode's EP=4 plan); rank 2 sleeps in its update of step 7 with its
    # telemetry muted, the other three wait for it in the update's collective.
    "$launch" "${base[@]}" --set gpus_per_node=4 --set tp=1 --set ep=4 --hang-timeout 2 \
      --fault 'hang@step=7,phase=update,rank=2' >"$TEST_TMP/out" 2>"$TEST_TMP/err" ||
      { show; fail "run failed"; }
    "${check[@]}" "$run" --failure hang --attempts 2 --summary || fail "hangstack"
    python3 - "$run" <<'PY' || fail "hang_report does not name rank 2"
import json, sys
run = sys.argv[1]
ev = [json.loads(l) for l in open(f"{run}/events.jsonl")]
reps = [e for e in ev if e["type"] == "hang_report"]
fail = next(e for e in ev if e["type"] == "failure")
assert len(reps) == 1, f"{len(reps)} hang_report events"
h = reps[0]
print("hang_report:", h["summary"], f"(waited {h['waited_s']:.2f} s)")
names = lambda g: [f["function"] for f in g["frames"]]
odd = next(g for g in h["groups"] if g["ranks"] == [2])
major = h["groups"][0]
ok = (h["method"] == "signal" and h["odd_ranks"] == [2] and h["missing_ranks"] == []
      and major["ranks"] == [0, 1, 3] and h["majority"] and h["seq"] < fail["seq"]
      and any("fire_step_faults" in n for n in names(odd))
      and not any("fire_step_faults" in n for n in names(major))
      and h["phase"] == "update" and odd["phase"] == "update" and major["frames"])
stacks = open(f"{run}/{h['stacks_file']}").read()
ok = ok and all(f"rank {r} (update" in stacks for r in range(4))
print("majority stack:", " < ".join(names(major)[:6]))
sys.exit(0 if ok else 1)
PY
    "$launch" status "$run" >"$TEST_TMP/status.txt" || fail "grpo-launch status"
    grep -q "^hang       attempt 1 in update: rank(s) 2 differ from the 3 others" "$TEST_TMP/status.txt" ||
      fail "status: $(cat "$TEST_TMP/status.txt")"
    "$launch" status "$run" --format json | python3 -c '
import json, sys
sys.exit(0 if json.load(sys.stdin)["hang_report"]["odd_ranks"] == [2] else 1)' ||
      fail "status --format json: no hang_report"
    "$launch" report "$run" >/dev/null 2>&1 || fail "grpo-launch report"
    grep -q "hang report, attempt 1 in update: rank(s) 2 differ" "$run/report.html" ||
      fail "report.html has no hang report"
    # A --trainer-cmd program is never sent SIGUSR1: eu-stack reads its ranks (both in sleep).
    if command -v eu-stack >/dev/null; then
      rc=0
      "$launch" --log-level info run --profile local-cpu --model tiny-moe --run-dir "$run-ext" \
        --trainer-cmd "sleep 60" --hang-timeout 2 --max-restarts 0 >"$TEST_TMP/out" \
        2>"$TEST_TMP/err" || rc=$?
      ((rc != 0)) || fail "--trainer-cmd hang: exit 0"
      events_of "$run-ext" hang_report | python3 -c '
import json, sys
h = json.loads(sys.stdin.readline())
print("hang_report (--trainer-cmd):", h["summary"])
names = [f["function"] for f in h["groups"][0]["frames"]]
sys.exit(0 if h["method"] == "eu-stack" and h["answered"] == 2 and h["majority"]
         and h["odd_ranks"] == [] and any("sleep" in n for n in names) else 1)' || fail "--trainer-cmd: no eu-stack report"
    fi
    ;;
  health)
    rc=0
    "$launch" "${base[@]}" --health-check 'sh -c "echo no scratch >&2; exit 1"' \
      >"$TEST_TMP/out" 2>"$TEST_TMP/err" || rc=$?
    ((rc == 84)) || { show; fail "exit $rc, want 84 (node unhealthy, none to replace it)"; }
    grep -q 'giving up: node localhost is unhealthy (command: --health-check failed: sh: exit 1 (no scratch)); there is no other node to run on (exit 84)' \
      "$TEST_TMP/err" || { show; fail "no clear line on stderr"; }
    events_of "$run" node_unhealthy | grep -q '"check":"command"' || fail "no node_unhealthy event"
    [[ -z "$(events_of "$run" attempt_started)" ]] || fail "an attempt started"
    [[ ! -e "$run/logs/attempt-1" ]] || fail "a rank was started"
    # A healthy command: the run trains as usual (the check runs before every attempt).
    "$launch" "${base[@]/$run/$run-ok}" --health-check true >"$TEST_TMP/out" 2>"$TEST_TMP/err" ||
      { show; fail "run with a healthy --health-check failed"; }
    "${check[@]}" "$run-ok" --sha "$(reference_sha)" --summary || fail "healthy run"
    ;;
  oom)
    "$launch" "${base[@]}" --fault 'oom@step=7,phase=update' >"$TEST_TMP/out" 2>"$TEST_TMP/err" ||
      { show; fail "run failed"; }
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure oom --attempts 2 --summary || fail "oom"
    events_of "$run" remediation | grep -q '"micro_batch":8' || fail "no remediation to micro batch 8"
    events_of "$run" OOM_ERROR | grep -q '"source":"trainer"' || fail "OOM_ERROR not forwarded"
    events_of "$run" warning | grep -q '"kind":"oom"' || fail "no OOM warning"
    # `status` and `events` tell the same facts as the event log itself.
    "$launch" status "$run" --format json >"$TEST_TMP/status.json" || fail "grpo-launch status"
    "$launch" events "$run" --format json --type failure,attempt_started >"$TEST_TMP/events.json" ||
      fail "grpo-launch events"
    python3 - "$run" "$TEST_TMP/status.json" "$TEST_TMP/events.json" <<'PY' || fail "status/events disagree with the log"
import collections, json, sys
run, status, shown = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
ev = [json.loads(l) for l in open(f"{run}/events.jsonl")]
fails = collections.Counter(e["class"] for e in ev if e["type"] == "failure")
starts = [e for e in ev if e["type"] == "attempt_started"]
steps = [e["step"] for e in ev if e["type"] == "step"]
saved = [e["step"] for e in ev if e["type"] == "checkpoint_saved"]
fin = [e for e in ev if e["type"] == "run_finished"][-1]
want = {"state": fin["state"], "exit_code": fin["exit_code"], "failures": dict(fails),
        "attempt": len(starts), "restarts": len(starts) - 1, "step": max(steps),
        "latest_checkpoint_step": max(saved), "oom_events": sum(e["type"] == "OOM_ERROR" for e in ev)}
got = {k: status.get(k) for k in want}
bad = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
lines = [json.loads(l) for l in open(shown)]
log = [e for e in ev if e["type"] in ("failure", "attempt_started")]
if lines != log:
    bad["events"] = (len(lines), len(log))
print(f"status/events vs log: {'ok' if not bad else bad}")
sys.exit(1 if bad else 0)
PY
    ;;
  torn)
    "$launch" "${base[@]}" --fault 'torn_ckpt@step=6' >"$TEST_TMP/out" 2>"$TEST_TMP/err" ||
      { show; fail "run failed"; }
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure crash --attempts 2 --summary || fail "torn"
    events_of "$run" attempt_started | tail -1 | grep -q '"resume_step":4' || fail "did not resume from step 4"
    ;;
  budget)
    rc=0
    "$launch" "${base[@]}" --max-restarts 2 --fault 'crash@step=3,rank=1,repeat=1' \
      >"$TEST_TMP/out" 2>"$TEST_TMP/err" || rc=$?
    ((rc == 80)) || { show; fail "exit $rc, want 80 (restart budget used up)"; }
    "${check[@]}" "$run" --exit 80 --failure crash --attempts 3 --summary || fail "budget"
    grep -q "restart budget of 2 used up" "$TEST_TMP/err" || fail "no reason on stderr"
    ;;
  supervisor)
    "$launch" "${base[@]}" --fault "$SLOW" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
    sup=$!
    wait_step "$run" 5 60 "$sup"
    kill -9 "$sup"
    wait "$sup" 2>/dev/null || true  # 137: killed
    # Its ranks die with it (PR_SET_PDEATHSIG).
    for r in 0 1; do
      pid=$(rank_pid "$run" "$r")
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
      kill -0 "$pid" 2>/dev/null && fail "rank $r (pid $pid) outlived its supervisor"
    done
    "$launch" --log-level info supervise --run-dir "$run" >"$TEST_TMP/out" 2>"$TEST_TMP/err" ||
      { show; fail "supervise after the kill failed"; }
    "${check[@]}" "$run" --sha "$(reference_sha)" --attempts 2 --summary || fail "supervisor restart"
    [[ $(events_of "$run" run_started | wc -l) == 2 ]] || fail "expected two run_started events"
    events_of "$run" attempt_ended | grep -q '"outcome":"abandoned"' || fail "attempt 1 not marked abandoned"
    ;;
  sigint)
    "$launch" "${base[@]}" --fault "$SLOW" >"$TEST_TMP/out" 2>"$TEST_TMP/err" &
    sup=$!
    wait_step "$run" 4 60 "$sup"
    kill -INT "$sup"
    rc=0
    wait "$sup" || rc=$?
    ((rc == 130)) || { show; fail "exit $rc after SIGINT, want 130"; }
    # A checkpoint is written after the signal (on request, or the periodic one of that step).
    python3 - "$run" <<'PY' || fail "no checkpoint after SIGINT"
import json, sys
ev = [json.loads(l) for l in open(f"{sys.argv[1]}/events.jsonl")]
stop = next(e["seq"] for e in ev if e["type"] == "state" and e.get("trigger") == "preemption")
sys.exit(0 if any(e["type"] == "checkpoint_saved" and e["seq"] > stop for e in ev) else 1)
PY
    "$launch" --log-level info supervise --run-dir "$run" >"$TEST_TMP/out" 2>"$TEST_TMP/err" ||
      { show; fail "supervise after SIGINT failed"; }
    "${check[@]}" "$run" --sha "$(reference_sha)" --failure preemption --attempts 2 --summary || fail "sigint"
    ;;
  *) fail "unknown mode $mode" ;;
esac
echo "ok: $mode in $(($(now_ms) - t0)) ms"
