#!/bin/bash
# render / submit --engine verl on the command line (docs/verl.md): check must pass first (its
# report, its exit code, nothing written), usage errors, a value only known at run time refused
# with its file:line:col, --dry-run writing nothing, the run directory's files and modes.
# Usage: verl_cli_test.sh GRPO_LAUNCH SOURCE_DIR
set -euo pipefail
launch=$1 src=$2
tmp=$(mktemp -d /tmp/grpo-verl-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# expect CODE WHAT -- CMD...: runs CMD, output in $tmp/out and $tmp/err, checks the exit code.
expect() {
  local want=$1 what=$2
  shift 3
  set +e
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  set -e
  [[ $got == "$want" ]] || fail "$what: exit $got, expected $want; stderr: $(cat "$tmp/err")"
}
good=$src/tests/data/verl/standin_run.sh
bad=$src/tests/data/check/env_unknown_in_sourced_file.sh
cd "$tmp"

expect 64 "no script" -- "$launch" submit --engine verl
grep -qF "needs the verl launch script" "$tmp/err" || fail "no script: $(cat "$tmp/err")"
expect 64 "a script without --engine" -- "$launch" render -p a100x8 -m qwen2.5-7b "$good"
grep -qF "needs --engine verl" "$tmp/err" || fail "stray argument: $(cat "$tmp/err")"
expect 64 "--trainer-cmd with --engine verl" -- "$launch" submit --engine verl "$good" --trainer-cmd x
expect 64 "an unknown engine" -- "$launch" submit --engine torchtitan "$good"

# check finds errors: its report on stdout, exit 1, nothing written.
expect 1 "check errors" -- "$launch" submit --engine verl "$bad" --profile a100x8 --run-dir "$tmp/r1"
grep -qF "UNKNOWN_KEY" "$tmp/out" || fail "check's report is not shown: $(cat "$tmp/out")"
grep -qF "found errors; nothing was submitted" "$tmp/err" || fail "$(cat "$tmp/err")"
[[ ! -e "$tmp/r1" ]] || fail "a run directory was written although check failed"
expect 1 "check errors (render)" -- "$launch" render --engine verl "$bad" --profile a100x8
grep -qF "nothing was rendered" "$tmp/err" || fail "$(cat "$tmp/err")"

# A value only known when the script runs: one line with file:line:col, exit 2.
cat >runtime.sh <<'SH'
python3 -m verl.trainer.main_ppo \
  actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
  trainer.experiment_name=$(date +%s) trainer.n_gpus_per_node=8 trainer.nnodes=1
SH
expect 2 "run-time value" -- "$launch" render --engine verl runtime.sh --profile a100x8
[[ $(wc -l <"$tmp/err") == 1 ]] || fail "not one line: $(cat "$tmp/err")"
grep -qF "runtime.sh:3:3: " "$tmp/err" || fail "no file:line:col: $(cat "$tmp/err")"

# render and --dry-run print, write nothing.
expect 0 "render" -- "$launch" render --engine verl "$good" --profile a100x8 --run-dir "$tmp/r2"
grep -qF -- "--ntasks-per-node=1" "$tmp/out" || fail "render: $(head -20 "$tmp/out")"
grep -qF "supervise --run-dir $tmp/r2" "$tmp/out" || fail "render: no supervise line"
expect 0 "dry run" -- "$launch" submit --engine verl "$good" --dry-run --run-dir "$tmp/r2"
grep -qF "# verl-attempt.sh" "$tmp/out" || fail "dry run: no attempt script"
[[ ! -e "$tmp/r2" ]] || fail "render / --dry-run wrote the run directory"

# submit with a fake sbatch: the run directory's files and modes.
mkdir fake
printf '#!/bin/sh\necho 77\n' >fake/sbatch
chmod +x fake/sbatch
expect 0 "submit" -- env PATH="$tmp/fake:$PATH" "$launch" submit --engine verl "$good" \
  --profile a100x8 --run-dir "$tmp/r3"
grep -qF "Submitted batch job 77" "$tmp/out" || fail "submit: $(cat "$tmp/out")"
for f in job.sbatch verl-attempt.sh run.json env.json rankmap.json supervisor.json verl.json job.json; do
  [[ -f "$tmp/r3/$f" ]] || fail "submit did not write $f"
done
[[ $(stat -c %a "$tmp/r3") == 700 ]] || fail "run directory mode $(stat -c %a "$tmp/r3")"
[[ $(stat -c %a "$tmp/r3/verl-attempt.sh") == 700 ]] || fail "verl-attempt.sh is not executable"
python3 - "$tmp/r3" "$tmp" <<'PY' || fail "run directory contents"
import json, sys
d, cwd = sys.argv[1], sys.argv[2]
run = json.load(open(d + "/run.json"))
assert run["trainer_command"] == ["/bin/bash", d + "/verl-attempt.sh"], run
assert run["ranks_per_node"] == 1 and run["nodes"] == 1, run
verl = json.load(open(d + "/verl.json"))
assert verl["checkpoint_dir"] == cwd + "/ckpt", verl   # relative to the job's working directory
sup = json.load(open(d + "/supervisor.json"))
assert sup["trainer_contract"] == "external" and sup["total_steps"] == 6, sup
env = json.load(open(d + "/env.json"))
assert env["job"] == {"GRPO_STANDIN_ENV_PROBE": "exported by the script"}, env
PY
echo "verl_cli: ok"
