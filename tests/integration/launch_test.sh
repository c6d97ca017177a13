#!/usr/bin/env bash
# grpo-launch submit / supervise on the real test cluster (docs/sbatch-template.md).
#   launch_test.sh MODE GRPO_LAUNCH SOURCE_DIR
#   MODE  submit      2 nodes x 2 ranks of grpo-bootstrap-probe, checked against rankmap.json
#         rejected    the bare form with an unknown partition: exit 76, sbatch's message, no run dir
#         step-fails  a trainer that exits 3 on every attempt: with --max-restarts 1 supervise
#                     exits 80 (restart budget), the job ends FAILED 80:0
# (USR2, requeue and every other fault: supervise_slurm_test.sh)
# shellcheck source=tests/integration/lib.sh
source "$(dirname "$0")/lib.sh"
require_cluster
mode=$1 launch=$2 src=$3
probe=${GRPO_PROBE:?}
run=$TEST_TMP/run
profiles=(--profile-dir "$src/tests/data/profiles")
launch_args=(-p slurm-test -m tiny-dense --run-dir "$run")

submit() { # trainer-cmd [extra args]: submits, sets JOB
  local out cmd=$1
  shift
  out=$("$launch" "${profiles[@]}" submit "${launch_args[@]}" --trainer-cmd "$cmd" "$@") ||
    fail "grpo-launch submit failed: $out"
  echo "$out"
  JOB=$(sed -n 's/^Submitted batch job \([0-9][0-9]*\):.*/\1/p' <<<"$out")
  [[ -n "$JOB" ]] || fail "no job id in: $out"
}

# Waits (bounded) until jobcomp has the job's final record; prints it.
wait_job() { # seconds
  local deadline=$(($(now_ms) + $1 * 1000)) rec
  while :; do
    rec=$(grep "^JobId=$JOB " "$GRPO_TEST_CLUSTER_DIR/jobcomp.log" 2>/dev/null || true)
    [[ -n "$rec" ]] && break
    if (($(now_ms) > deadline)); then
      scontrol show job "$JOB" >&2 || true
      cat "$run"/slurm-*.err >&2 2>/dev/null || true
      scancel "$JOB" 2>/dev/null || true
      fail "job $JOB did not finish within $1 s"
    fi
    sleep 0.1
  done
  echo "$rec"
}

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

case "$mode" in
  submit)
    t0=$(now_ms)
    submit "$probe --timeout-s 30"
    rec=$(wait_job 60)
    elapsed=$(($(now_ms) - t0))
    [[ "$(field JobState "$rec")" == COMPLETED && "$(field ExitCode "$rec")" == 0:0 ]] || {
      cat "$run/slurm-$JOB.out" "$run/slurm-$JOB.err" >&2
      fail "job $JOB: $rec"
    }
    python3 "$src/tests/integration/check_launch.py" "$run" "$JOB" "$GRPO_TEST_CLUSTER_DIR/hosts" || {
      tail -n 40 "$run/slurm-$JOB.out" "$run/slurm-$JOB.err" >&2
      fail "check_launch"
    }
    grep -q "grpo-launch: run succeeded" "$run/slurm-$JOB.err" ||
      fail "no 'run succeeded' in slurm-$JOB.err"
    echo "submit to job end: $elapsed ms"
    ;;
  rejected)
    rc=0
    "$launch" "${profiles[@]}" "${launch_args[@]}" --set slurm.partition=nope >"$TEST_TMP/out" 2>"$TEST_TMP/err" || rc=$?
    ((rc == 76)) || fail "exit $rc, want 76: $(cat "$TEST_TMP/err")"
    want="grpo-launch: error: sbatch rejected the job: Batch job submission failed: Invalid partition name specified; nothing was submitted"
    [[ "$(cat "$TEST_TMP/err")" == "$want" ]] || fail "stderr: $(cat "$TEST_TMP/err")"
    [[ ! -e "$run" ]] || fail "run directory left behind after a refusal"
    echo "rejected as expected: $want"
    ;;
  step-fails)
    submit "/bin/sh -c 'exit 3'" --max-restarts 1 --backoff 0.1
    rec=$(wait_job 60)
    [[ "$(field JobState "$rec")" == FAILED && "$(field ExitCode "$rec")" == 80:0 ]] ||
      fail "job $JOB: want FAILED 80:0: $rec"
    grep -q "restart budget of 1 used up" "$run/slurm-$JOB.err" ||
      fail "no 'restart budget' in slurm-$JOB.err: $(cat "$run/slurm-$JOB.err")"
    grep -qE "tasks? 0(-[0-9]+)?: Exited with exit code 3" "$run/logs/attempt-1/srun.log" ||
      fail "srun.log lacks the task's exit: $(cat "$run/logs/attempt-1/srun.log")"
    echo "step failures mapped to 80 after the budget: $rec"
    ;;
  *) fail "unknown mode $mode" ;;
esac
