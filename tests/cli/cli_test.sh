#!/usr/bin/env bash
# Runs grpo-launch the way users do and checks exit codes (docs/exit-codes.md), that errors are
# exactly one line on stderr with file:line:col where there is a file, and --help / --version.
set -uo pipefail
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/xdg
unset GRPO_LAUNCH_PROFILE_PATH
failures=0

# expect CODE DESCRIPTION -- ARGS...   (stdout -> $tmp/out, stderr -> $tmp/err)
expect() {
  local want=$1 what=$2
  shift 3
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [[ $got -ne $want ]]; then
    echo "FAIL: $what: exit $got, want $want ($*)"; sed 's/^/  stderr: /' "$tmp/err"; failures=$((failures + 1))
  fi
}
one_line_error() {  # the stderr of the last command is one line matching $1
  local lines
  lines=$(wc -l <"$tmp/err")
  if [[ $lines -ne 1 ]] || ! grep -qE -e "$1" "$tmp/err"; then
    echo "FAIL: expected one stderr line matching /$1/, got $lines line(s):"; sed 's/^/  /' "$tmp/err"
    failures=$((failures + 1))
  fi
}
stdout_has() {
  if ! grep -qF -e "$1" "$tmp/out"; then echo "FAIL: stdout lacks '$1'"; failures=$((failures + 1)); fi
}

expect 0 "--version" -- --version
stdout_has "grpo-launch"
expect 0 "--help" -- --help
stdout_has "plan"
stdout_has "Exit codes"
expect 0 "plan --help" -- plan --help
stdout_has "--profile"

expect 0 "design card plan" -- plan --profile a100x8 --model qwen3-30b-moe
stdout_has "Parallel Config Summary"
expect 0 "dry run" -- --profile a100x8 --model qwen3-30b-moe --dry-run
stdout_has "Parallel Config Summary"
expect 0 "json" -- plan -p a100x8 -m qwen3-30b-moe --format json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["ok"] and j["rank_map"]["world_size"]==8' "$tmp/out" \
  || { echo "FAIL: json output"; failures=$((failures + 1)); }

# Findings: exit 1.
expect 1 "infeasible" -- plan -p a100x8 -m qwen3-235b-moe
stdout_has "NO_FEASIBLE_PLAN"
expect 1 "illegal fixed layout" -- plan -p a100x8 -m qwen2.5-7b --set tp=3
stdout_has "HEADS_NOT_DIVISIBLE"
expect 1 "env conflict" -- plan -p a100x8 -m qwen2.5-7b --set tp=2 --set env.CUDA_DEVICE_MAX_CONNECTIONS=8
stdout_has "ENV_CONFLICT"

# Bad input: exit 2, one line, with the place.
expect 2 "unknown profile" -- plan -p a100x9 -m qwen3-30b-moe
one_line_error "unknown cluster profile 'a100x9' \(did you mean 'a100x8'\?\)"
expect 2 "unknown model" -- plan -p a100x8 -m nope
one_line_error "unknown model 'nope'"
mkdir -p "$tmp/p/clusters" "$tmp/p/models"
printf 'name = "bad"\nnodes = \n' >"$tmp/p/clusters/bad.toml"
expect 2 "malformed toml" -- --profile-dir "$tmp/p" plan -p bad -m qwen3-30b-moe
one_line_error "bad.toml:2:9: missing value"
printf 'name = "cyc"\nextends = "cyc2"\n' >"$tmp/p/clusters/cyc.toml"
printf 'name = "cyc2"\nextends = "cyc"\n' >"$tmp/p/clusters/cyc2.toml"
expect 2 "cyclic extends" -- --profile-dir "$tmp/p" plan -p cyc -m qwen3-30b-moe
one_line_error "cyclic 'extends'"
printf 'name = "neg"\nextends = "a100x8"\nnodes = -2\n' >"$tmp/p/clusters/neg.toml"
expect 2 "negative size" -- --profile-dir "$tmp/p" plan -p neg -m qwen3-30b-moe
one_line_error "neg.toml:3:9: nodes = -2: must be"
expect 2 "bad --set type" -- plan -p a100x8 -m qwen3-30b-moe --set nodes=many
one_line_error "--set nodes=many"
expect 2 "bad --set key" -- plan -p a100x8 -m qwen3-30b-moe --set device.memroy_gib=4
one_line_error "did you mean 'memory_gib'"
expect 2 "bad layout --set" -- plan -p a100x8 -m qwen3-30b-moe --set tp=two
one_line_error "--set tp=two"
expect 2 "profile file path" -- plan -p "$tmp/missing.toml" -m qwen3-30b-moe
one_line_error "no such cluster profile file"
expect 2 "bad --engines part" -- plan -p a100x8 -m qwen3-30b-moe --engines verl=0.7,megatron=0.x
one_line_error "--engines: 'megatron=0.x'"
expect 2 "unknown engine" -- check "$src/tests/data/check/tp_mismatch.sh" --engines sglang=0.5
one_line_error "unknown engine 'sglang'"

# Versioned rules: TP=8 on Qwen3-30B-A3B's 4 KV heads is legal from Megatron-Core 0.16 only.
expect 1 "KV rule of core 0.15" -- plan -p a100x8 -m qwen3-30b-moe --set tp=8
stdout_has "KV_HEADS_NOT_DIVISIBLE"
expect 0 "KV rule of core 0.16" -- plan -p a100x8 -m qwen3-30b-moe --set tp=8 --engines megatron=0.16
expect 0 "check names the versions" -- check "$src/tests/data/check/clean_kv_heads_megatron_0_16.sh" --engines megatron=0.16
stdout_has "rules of verl 0.7, Megatron-Core 0.16, vLLM 0.12"

# check: verl scripts read statically (docs/check.md), findings at file:line:col, also in a
# sourced file; parse errors are one line with the place.
check_dir=$src/tests/data/check
expect 1 "check: errors in a sourced file" -- check "$check_dir/env_unknown_in_sourced_file.sh" --profile a100x8
stdout_has "env_unknown_in_sourced_file.bash:10:5: UNKNOWN_KEY"
stdout_has "env_unknown_in_sourced_file.bash:5:8: ENV_UNKNOWN"
expect 0 "check: if / case decided" -- check "$check_dir/clean_if_case_engine_qwen3_8b.sh" --profile a100x8
stdout_has "no findings"
expect 0 "check: undecidable branch and run-time names" -- check "$check_dir/unresolved_undecidable_branch.sh" --format json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["files"][0]["runs"][0]["diagnostics"]; assert [(x["line"], x["severity"]) for x in d] == [(42, "warning"), (54, "info"), (55, "info")], d' "$tmp/out" \
  || { echo "FAIL: check json severities"; failures=$((failures + 1)); }
printf 'for s in 1 2; do\n  python3 -m verl.trainer.main_ppo trainer.total_epochs=$s\ndone\nsource /etc/profile\n' >"$tmp/loop.sh"
expect 0 "check: loop and a source not followed" -- check "$tmp/loop.sh" --model qwen2.5-7b
stdout_has "read conditionally: \`for s\` at $tmp/loop.sh:1:1: the loop body was read once"
stdout_has "note: \`source /etc/profile\` at $tmp/loop.sh:4:1 is not followed"
# model.path naming a directory with a config.json on this machine is read as --model DIR: a Mixtral
# with a 4096-token sliding window, trained by Megatron through mbridge on 8192-token sequences, is
# warned about (mbridge builds no window); a broken config.json there is a one-line error, exit 2.
mkdir -p "$tmp/mixtral-window" "$tmp/broken-model"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["sliding_window"]=4096; json.dump(c, open(sys.argv[2], "w"))' \
  "$src/profiles/models/mixtral-8x7b/config.json" "$tmp/mixtral-window/config.json"
echo '{"architectures": 3}' >"$tmp/broken-model/config.json"
for m in mixtral-window broken-model; do
  printf 'python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\\n  data.max_prompt_length=4096 data.max_response_length=4096 \\\n  actor_rollout_ref.model.path=%s \\\n  actor_rollout_ref.actor.megatron.expert_model_parallel_size=8\n' "$tmp/$m" >"$tmp/$m.sh"
done
expect 1 "check: model.path read as --model DIR (its rollout also does not fit: exit 1)" -- check "$tmp/mixtral-window.sh" --profile a100x8
stdout_has "model mixtral-window;"
stdout_has "INVALID_SETTING: 32 layer(s) of mixtral-window attend over a sliding window of 4096 tokens"
expect 2 "check: a broken config.json at model.path" -- check "$tmp/broken-model.sh"
one_line_error "broken-model/config.json:1:2: architectures: expected a list of one name"
printf 'if [ -f x ]; then\n  python3 -m verl.trainer.main_ppo a=1\n' >"$tmp/unclosed.sh"
expect 2 "check: unclosed if" -- check "$tmp/unclosed.sh"
one_line_error "unclosed.sh:1:1: \`if\` is never closed with \`fi\`"

# plan --emit verl (docs/verl-emit.md): the script on stdout or written atomically with -o; check
# reads it back without findings; errors are one line and leave no file behind.
expect 0 "emit verl to stdout" -- plan -p a100x8 -m qwen3-30b-moe --emit verl
cp "$tmp/out" "$tmp/stdout.sh"
stdout_has "python3 -m verl.trainer.main_ppo"
stdout_has "# Parallel Config Summary"
expect 0 "emit verl -o" -- plan -p a100x8 -m qwen3-30b-moe --emit verl -o "$tmp/run.sh"
cmp -s "$tmp/run.sh" "$tmp/stdout.sh" || { echo "FAIL: -o differs from stdout"; failures=$((failures + 1)); }
[[ $(stat -c %a "$tmp/run.sh") == 755 ]] || { echo "FAIL: emitted script is not 0755"; failures=$((failures + 1)); }
bash -n "$tmp/run.sh" || { echo "FAIL: bash -n of the emitted script"; failures=$((failures + 1)); }
expect 0 "check of the emitted script" -- check "$tmp/run.sh" --profile a100x8
stdout_has "no findings"
stdout_has "model qwen3-30b-moe; 1 x 8 devices of a100x8; Megatron TP=1 PP=1 CP=1 DP=8 EP=8 ETP=1"
expect 0 "emit verl, FSDP" -- plan -p h100-x8 -m qwen2.5-7b --set backend=fsdp --emit verl -o "$tmp/fsdp.sh"
expect 0 "check of the emitted FSDP script" -- check "$tmp/fsdp.sh" --profile h100-x8
stdout_has "no findings"
stdout_has "8 x 8 devices of h100-x8; FSDP over 64 ranks"
expect 1 "emit verl: infeasible plan" -- plan -p a100x8 -m qwen3-235b-moe --emit verl -o "$tmp/none.sh"
one_line_error "no feasible plan for qwen3-235b-moe on a100x8"
[[ ! -e $tmp/none.sh ]] || { echo "FAIL: a script was written for an infeasible plan"; failures=$((failures + 1)); }
expect 2 "emit verl: CPU profile" -- plan -p local-cpu -m tiny-moe --emit verl
one_line_error "verl runs on GPUs and Ascend NPUs only"
expect 73 "emit verl: unwritable output" -- plan -p a100x8 -m qwen2.5-7b --emit verl -o "$tmp/no/such/dir/run.sh"
one_line_error "no/such/dir"
expect 64 "emit: unknown engine" -- plan -p a100x8 -m qwen2.5-7b --emit deepspeed
expect 64 "-o without --emit" -- plan -p a100x8 -m qwen2.5-7b -o "$tmp/x.sh"
expect 2 "bad backend" -- plan -p a100x8 -m qwen2.5-7b --set backend=deepspeed
one_line_error "expected megatron, fsdp or embedded"
expect 2 "FSDP for the embedded trainer" -- render -p local-cpu -m tiny-moe --set backend=fsdp
one_line_error "the embedded grpo-trainer does not run"

# Usage: exit 64.
expect 64 "unknown option" -- plan --profile a100x8 --model qwen3-30b-moe --bogus
expect 64 "missing model" -- plan --profile a100x8
expect 64 "bad format" -- plan -p a100x8 -m qwen3-30b-moe --format yaml

# The search path: --profile-dir, the environment variable and the per-user directory.
printf 'name = "mine"\nextends = "a100x8"\nnodes = 2\n' >"$tmp/p/clusters/mine.toml"
expect 0 "--profile-dir" -- --profile-dir "$tmp/p" plan -p mine -m qwen2.5-7b
stdout_has "2 nodes"
GRPO_LAUNCH_PROFILE_PATH=$tmp/p expect 0 "env search path" -- plan -p mine -m qwen2.5-7b
mkdir -p "$tmp/xdg/grpo-launch/profiles/clusters"
cp "$tmp/p/clusters/mine.toml" "$tmp/xdg/grpo-launch/profiles/clusters/"
expect 0 "per-user directory" -- plan -p mine -m qwen2.5-7b
expect 0 "profiles listing" -- profiles
stdout_has "mine"
stdout_has "a100x8"

if ((failures)); then echo "$failures failure(s)"; exit 1; fi
echo "all CLI checks passed"
