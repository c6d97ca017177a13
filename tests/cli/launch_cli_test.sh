#!/usr/bin/env bash
# grpo-launch render / submit / supervise without a Slurm cluster: the script, the run
# directory, and every way submission fails (no sbatch on PATH, an unreachable controller, a
# refusing or hanging sbatch): exact one-line errors and exit codes (docs/exit-codes.md,
# docs/sbatch-template.md). A fake sbatch stands in for the success path.
#   launch_cli_test.sh GRPO_LAUNCH SOURCE_DIR
set -uo pipefail
bin=$(realpath "$1")
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/xdg
unset GRPO_LAUNCH_PROFILE_PATH SLURM_JOB_ID
failures=0
P=(--profile-dir "$src/tests/data/profiles")
RUN=(-p slurm-test -m tiny-dense)

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect CODE DESCRIPTION -- ARGS...   (stdout -> $tmp/out, stderr -> $tmp/err)
expect() {
  local want=$1 what=$2
  shift 3
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [[ $got -ne $want ]]; then
    fail "$what: exit $got, want $want ($*)"
    sed 's/^/  stdout: /' "$tmp/out" | head -5
    sed 's/^/  stderr: /' "$tmp/err"
  fi
}
stderr_is() { # the stderr of the last command is exactly this one line
  local want="grpo-launch: error: $1"
  if [[ "$(cat "$tmp/err")" != "$want" || $(wc -l <"$tmp/err") -ne 1 ]]; then
    fail "stderr should be exactly: $want"
    sed 's/^/  got: /' "$tmp/err"
  fi
}
stderr_matches() {
  if [[ $(wc -l <"$tmp/err") -ne 1 ]] || ! grep -qE -e "$1" "$tmp/err"; then
    fail "expected one stderr line matching /$1/"
    sed 's/^/  got: /' "$tmp/err"
  fi
}
stdout_has() { grep -qF -e "$1" "$tmp/out" || fail "stdout lacks '$1'"; }
absent() { [[ ! -e "$1" ]] || fail "$1 should not exist"; }

command -v sbatch >/dev/null || fail "sbatch is not installed (scripts/install-deps.sh installs slurm-client)"

cd "$tmp" || exit 1
# --- render and dry runs: nothing written -------------------------------------------------------
expect 0 "render" -- "${P[@]}" render "${RUN[@]}" --run-dir "$tmp/r0"
stdout_has "#SBATCH --nodes=2"
stdout_has "#SBATCH --ntasks-per-node=2"
stdout_has "#SBATCH --partition=debug"
stdout_has "#SBATCH --output=$tmp/r0/slurm-%j.out"
stdout_has "supervise --run-dir $tmp/r0 &"
bash -n "$tmp/out" || fail "render: bash -n"
expect 0 "submit --dry-run" -- "${P[@]}" submit "${RUN[@]}" --dry-run
stdout_has "Parallel Config Summary"
stdout_has "#SBATCH --job-name=grpo-tiny-dense-slurm-test"
expect 0 "bare --dry-run" -- "${P[@]}" "${RUN[@]}" --dry-run
stdout_has "Parallel Config Summary"
stdout_has "#SBATCH --requeue"
expect 0 "bare --dry-run json" -- "${P[@]}" "${RUN[@]}" --dry-run --format json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["plan"]["ok"] and "#SBATCH" in j["sbatch"]' "$tmp/out" ||
  fail "dry-run json"
absent "$tmp/runs"
expect 0 "render hostile env values" -- "${P[@]}" render -p hostile -m tiny-dense --run-dir "$tmp/r0"
bash -n "$tmp/out" || fail "render hostile: bash -n"
expect 2 "hostile #SBATCH value" -- "${P[@]}" render -p hostile-slurm -m tiny-dense
stderr_matches '^grpo-launch: error: .*hostile-slurm.toml: profile hostile-slurm: slurm.partition "debug; touch CANARY" cannot be used in .#SBATCH --partition=.: .;. is not allowed'
expect 2 "run dir with a space" -- "${P[@]}" render "${RUN[@]}" --run-dir "$tmp/a b"
stderr_is "run directory \"$tmp/a b\" cannot be used in '#SBATCH --output=': a space is not allowed (letters, digits and _.,:/@+=- only); choose another --run-dir"
expect 2 "--trainer-cmd with ;" -- "${P[@]}" render "${RUN[@]}" --trainer-cmd 'probe; rm -rf /'
stderr_is "--trainer-cmd: unquoted ';' at column 6 (the command is run without a shell: quote it, or give a plain program and arguments)"
expect 1 "infeasible plan" -- submit -p a100x8 -m qwen3-235b-moe --run-dir "$tmp/r-inf"
stdout_has "Parallel Config Summary"
stderr_is "the plan is not runnable (see the diagnostics above); nothing was submitted"
absent "$tmp/r-inf"

# --- no Slurm: sbatch not on PATH ----------------------------------------------------------------
PATH=/nonexistent expect 69 "no sbatch on PATH" -- "${P[@]}" "${RUN[@]}" --run-dir "$tmp/r1"
stderr_is "Slurm is unreachable: sbatch: not found on PATH (is Slurm installed, and is this a login node?); nothing was submitted"
absent "$tmp/r1"

# --- no Slurm: a configuration whose controller does not answer -----------------------------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/dead"
cat >"$tmp/dead/slurm.conf" <<CONF
ClusterName=dead
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
AuthType=auth/munge
AuthInfo=socket=$tmp/dead/munge.socket
MessageTimeout=2
NodeName=d1 NodeAddr=127.0.0.99 CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=d1 Default=YES
CONF
SLURM_CONF=$tmp/dead/slurm.conf expect 69 "unreachable controller" -- "${P[@]}" submit "${RUN[@]}" --run-dir "$tmp/r2"
stderr_is "Slurm is unreachable: sbatch: Batch job submission failed: Unable to contact slurm controller (connect failure); nothing was submitted"
absent "$tmp/r2"

# --- a fake sbatch: success, refusal, hang ---------------------------------------------------------
mkdir -p "$tmp/fake"
cat >"$tmp/fake/sbatch" <<'FAKE'
#!/bin/sh
# args: --parsable SCRIPT; behaviour from FAKE_SBATCH
printf '%s\n' "$@" >"$FAKE_SBATCH_ARGS"
env >"$FAKE_SBATCH_ENV"
case "$FAKE_SBATCH" in
  ok) echo 123 ;;
  refuse) echo "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified" >&2; exit 1 ;;
  hang) sleep 30 ;;
esac
FAKE
chmod +x "$tmp/fake/sbatch"
export FAKE_SBATCH_ARGS=$tmp/sbatch.args FAKE_SBATCH_ENV=$tmp/sbatch.env
FAKE_SBATCH=ok SBATCH_OUTPUT=/elsewhere PATH=$tmp/fake:$PATH expect 0 "submit (fake sbatch)" -- "${P[@]}" submit "${RUN[@]}" \
  --run-dir "$tmp/r3" --trainer-cmd "/opt/probe --timeout-s 30 'a b'"
stdout_has "Submitted batch job 123: tiny-dense on slurm-test, 2 node(s) x 2 rank(s)"
stdout_has "Run directory: $tmp/r3"
stdout_has "tail -f $tmp/r3/slurm-123.out"
stdout_has "squeue -j 123"
[[ "$(stat -c %a "$tmp/r3")" == 700 ]] || fail "run dir mode $(stat -c %a "$tmp/r3"), want 700"
for f in plan.json rankmap.json env.json run.json job.sbatch job.json; do
  [[ -f "$tmp/r3/$f" ]] || fail "run dir lacks $f"
done
[[ "$(stat -c %a "$tmp/r3/job.sbatch")" == 700 && "$(stat -c %a "$tmp/r3/run.json")" == 600 ]] ||
  fail "file modes"
[[ "$(cat "$tmp/sbatch.args")" == "--parsable
$tmp/r3/job.sbatch" ]] || fail "sbatch args: $(cat "$tmp/sbatch.args")"
grep -q '^SBATCH_OUTPUT=' "$tmp/sbatch.env" && fail "SBATCH_OUTPUT reached sbatch"
python3 - "$tmp/r3" <<'PY' || fail "run dir content"
import json, sys
d = sys.argv[1]
run = json.load(open(f"{d}/run.json"))
assert run["schema"] == "grpo-launch/run/v1", run
assert run["trainer_command"] == ["/opt/probe", "--timeout-s", "30", "a b"], run
assert (run["nodes"], run["ranks_per_node"], run["cpus_per_task"]) == (2, 2, 2), run
job = json.load(open(f"{d}/job.json"))
assert job["job_id"] == 123, job
rm = json.load(open(f"{d}/rankmap.json"))
assert rm["nodes"] == 2 and rm["ranks_per_node"] == 2, rm
env = json.load(open(f"{d}/env.json"))
assert env["job"]["OMP_NUM_THREADS"] == "2", env
PY
FAKE_SBATCH=ok PATH=$tmp/fake:$PATH expect 73 "run dir exists" -- "${P[@]}" submit "${RUN[@]}" --run-dir "$tmp/r3"
stderr_is "run directory already exists: $tmp/r3"

FAKE_SBATCH=refuse PATH=$tmp/fake:$PATH expect 76 "sbatch refuses" -- "${P[@]}" "${RUN[@]}" --run-dir "$tmp/r4"
stderr_is "sbatch rejected the job: Batch job submission failed: Invalid account or account/partition combination specified; nothing was submitted"
absent "$tmp/r4"

FAKE_SBATCH=hang PATH=$tmp/fake:$PATH expect 69 "sbatch hangs" -- "${P[@]}" "${RUN[@]}" --run-dir "$tmp/r5" --sbatch-timeout 1
stderr_is "sbatch timed out after 1 s; the job may or may not have been submitted (check squeue); run directory kept: $tmp/r5"
[[ -f "$tmp/r5/job.sbatch" ]] || fail "run dir should be kept after a timeout"

# default run directory: ./runs/<model>-<profile>-<UTC time>
FAKE_SBATCH=ok PATH=$tmp/fake:$PATH expect 0 "default run dir" -- "${P[@]}" "${RUN[@]}"
ls -d "$tmp"/runs/tiny-dense-slurm-test-2*Z >/dev/null 2>&1 || fail "no ./runs/tiny-dense-slurm-test-<time> directory"

# --- supervise outside an allocation: local ranks ---------------------------------------------------
expect 82 "supervise without SLURM_JOB_ID: local, trainer missing" -- supervise --run-dir "$tmp/r3"
grep -q "cannot start the trainer: /opt/probe: no such executable file" "$tmp/err" ||
  fail "supervise: no 'cannot start' line: $(cat "$tmp/err")"
[[ -f "$tmp/r3/events.jsonl" ]] || fail "supervise wrote no events.jsonl"
grep -q '"type":"run_finished"' "$tmp/r3/events.jsonl" || fail "no run_finished event"
SLURM_JOB_ID=5 SLURM_CONF=$tmp/none.conf expect 69 "supervise without a configuration" -- supervise --run-dir "$tmp/r3"
stderr_is "no Slurm configuration: $tmp/none.conf does not exist (SLURM_CONF)"
SLURM_JOB_ID=5 SLURM_CONF=$tmp/dead/slurm.conf expect 69 "supervise, controller down" -- supervise --run-dir "$tmp/r3"
stderr_is "slurm_load_job(5): Unable to contact slurm controller (connect failure) (1800)"
cp -r "$tmp/r3" "$tmp/r6"
echo '{"schema": "grpo-launch/run/v1"}' >"$tmp/r6/run.json"
SLURM_JOB_ID=5 expect 2 "supervise, bad run.json" -- supervise --run-dir "$tmp/r6"
stderr_is "$tmp/r6/run.json: missing key \"run_id\""
expect 2 "supervise, no run dir" -- supervise --run-dir "$tmp/nope"
stderr_is "no such file: $tmp/nope/run.json"

# --- run: local supervision; its input errors -------------------------------------------------------
expect 2 "run: trainer settings with --trainer-cmd" -- "${P[@]}" run -p local-cpu -m tiny-dense \
  --run-dir "$tmp/r7" --trainer-cmd "/bin/true" --set trainer.total_training_steps=3
stderr_is "--set trainer.total_training_steps=3: trainer settings and faults apply to the embedded grpo-trainer, not to --trainer-cmd"
absent "$tmp/r7"
expect 2 "run: unknown planner key" -- "${P[@]}" run -p local-cpu -m tiny-dense --run-dir "$tmp/r7" --set nope=1
absent "$tmp/r7"
expect 0 "run: an external trainer that succeeds" -- "${P[@]}" run -p local-cpu -m tiny-dense \
  --run-dir "$tmp/r7" --trainer-cmd "/bin/sh -c 'echo rank \$RANK of \$WORLD_SIZE port \$MASTER_PORT'"
stdout_has "Run directory: $tmp/r7"
[[ "$(stat -c %a "$tmp/r7")" == 700 ]] || fail "run dir mode $(stat -c %a "$tmp/r7")"
for f in plan.json rankmap.json env.json run.json supervisor.json events.jsonl metrics.prom; do
  [[ -f "$tmp/r7/$f" ]] || fail "run dir lacks $f"
done
[[ -f "$tmp/r7/job.sbatch" ]] && fail "run wrote a batch script"
grep -q "^rank 1 of 2 port [0-9]" "$tmp/r7/logs/attempt-1/rank-1.log" || fail "rank 1 env: $(cat "$tmp/r7/logs/attempt-1/rank-1.log")"
expect 73 "run: the run directory exists" -- "${P[@]}" run -p local-cpu -m tiny-dense --run-dir "$tmp/r7" \
  --trainer-cmd /bin/true
stderr_is "run directory already exists: $tmp/r7; continue that run with: grpo-launch supervise --run-dir $tmp/r7"
rc=0
"$bin" "${P[@]}" run -p local-cpu -m tiny-dense --run-dir "$tmp/r8" --trainer-cmd "/bin/sh -c 'exit 3'" \
  --max-restarts 1 --backoff 0.05 >"$tmp/out" 2>"$tmp/err" || rc=$?
((rc == 80)) || fail "run: a crashing external trainer: exit $rc, want 80"
grep -q "restart budget of 1 used up" "$tmp/err" || fail "run: no budget message: $(cat "$tmp/err")"

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "launch cli ok"
