#!/usr/bin/env bash
# The generated bash completion completes commands, options and profile/model names; the
# generated man page renders with groff without warnings and documents every command and option.
set -uo pipefail
bin=$1
completion=$2
man=$3
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# --- man page
warnings=$(groff -man -Tutf8 -ww -z "$man" 2>&1)
[[ -z $warnings ]] || fail "groff warnings: $warnings"
rendered=$(groff -man -Tutf8 "$man" 2>/dev/null | sed 's/.\x08//g')
for cmd in plan check render submit run supervise status events report profiles; do
  grep -q "^\.SS $cmd\$" "$man" || fail "man page lacks a section for '$cmd'"
done
for opt in --profile --model --set --dry-run --check-parallel --follow --output --profile-dir; do
  grep -qe "$opt" <<<"$rendered" || fail "man page lacks option $opt"
done
grep -q "EXIT STATUS" <<<"$rendered" || fail "man page lacks EXIT STATUS"

# --- bash completion (with the binary as COMP_WORDS[0], as bash passes it)
complete_words() {  # prints COMPREPLY for the words given (the last one is being completed)
  bash --norc --noprofile -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    _grpo_launch
    printf "%s\n" "${COMPREPLY[@]}"' _ "$completion" "$bin" "$@"
}
grep -qx plan <(complete_words pl) || fail "commands: 'pl' does not complete to plan"
grep -qxe --profile <(complete_words plan --pro) || fail "'plan --pro' does not complete to --profile"
grep -qxe --check-parallel <(complete_words check --check-p) || fail "'check --check-p' lacks --check-parallel"
grep -qxe --follow <(complete_words events --fol) || fail "'events --fol' lacks --follow"
grep -qx a100x8 <(complete_words plan --profile a100) || fail "--profile does not complete a100x8"
grep -qx qwen3-30b-moe <(complete_words plan --model qwen3-3) || fail "--model does not complete qwen3-30b-moe"
grep -qx json <(complete_words status --format j) || fail "--format does not complete json"
[[ $(complete_words plan --profile a100x8 --model qwen3-30b-moe --set "" | wc -l) -le 1 ]] \
  || fail "a value of --set is offered completions"

# A file name on the profile search path is never code: TAB runs no $(...) in it, and names outside
# [A-Za-z0-9._-] are neither offered nor found (one line, exit 2).
evil=$(mktemp -d)
trap 'rm -rf "$evil"' EXIT
mkdir -p "$evil/clusters"
cp "$(dirname "$0")/../../profiles/clusters/local-cpu.toml" "$evil/clusters/"
# shellcheck disable=SC2016  # the name holds the command literally
touch "$evil/clusters/"'$(touch${IFS}pwned).toml' "$evil/clusters/"'`touch pwned2`.toml'
offered=$(cd "$evil" && GRPO_LAUNCH_PROFILE_PATH=$evil complete_words plan --profile "")
[[ ! -e $evil/pwned && ! -e $evil/pwned2 ]] || fail "completing --profile ran a command from a file name"
grep -qx local-cpu <<<"$offered" || fail "--profile does not complete local-cpu from the search path"
grep -q touch <<<"$offered" && fail "a profile name outside [A-Za-z0-9._-] is offered: $offered"
# shellcheck disable=SC2016
err=$(GRPO_LAUNCH_PROFILE_PATH=$evil "$bin" plan -p '$(touch${IFS}pwned)' -m tiny-dense 2>&1 >/dev/null)
code=$?
[[ $code == 2 && $(wc -l <<<"$err") == 1 && $err == *"may hold only letters"* ]] ||
  fail "a profile name with \$(...): exit $code, want 2 and one line: $err"

if ((failures)); then echo "$failures failure(s)"; exit 1; fi
echo "completion and man page checks passed"
