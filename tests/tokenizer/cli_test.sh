#!/usr/bin/env bash
# `grpo-trainer tokenize` end to end on tests/data/tokenizer/tiny (ids derived in
# tokenizer_test.cpp): the three modes, --help, and the one-line errors with their exit codes.
# Usage: cli_test.sh GRPO_TRAINER
set -uo pipefail
exe=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tiny=$root/tests/data/tokenizer/tiny
fail=0
check() {  # name, expected, actual
  if [[ "$2" != "$3" ]]; then
    printf 'FAIL %s\n  expected: %q\n  actual:   %q\n' "$1" "$2" "$3"
    fail=1
  else
    echo "ok   $1"
  fi
}
out=$(printf '"abc"\n"bc a<|end|>"\n"a\\ud800b"\n' | "$exe" tokenize --tokenizer "$tiny")
check encode "$(printf '[5]\n[7,6,8]\n[0,1]')" "$out"
out=$(printf '[5,8,0]\n[12]\n' | "$exe" tokenize --tokenizer "$tiny" --decode)
check decode "$(printf '"abc<|end|>a"\n"\xef\xbf\xbd"')" "$out"
out=$(printf '[5,8,0]\n' | "$exe" tokenize --tokenizer "$tiny" --decode --skip-special-tokens)
check decode-skip '"abca"' "$out"
out=$(printf '[{"role": "user", "content": "abc"}]\n' | "$exe" tokenize --tokenizer "$tiny" --chat)
check chat '[0,9,5,9,0,0,0,9]' "$out"
out=$(printf '"a"\n[1]\n"b"\n' | "$exe" tokenize --tokenizer "$tiny" 2>"${TMPDIR:-/tmp}/tok_err.$$")
rc=$?
check bad-line-output '[0]' "$out"
check bad-line-rc 2 "$rc"
check bad-line-message 'grpo-trainer tokenize: <stdin>:2: expected a JSON string' \
  "$(cat "${TMPDIR:-/tmp}/tok_err.$$")"
"$exe" tokenize --tokenizer "$tiny/missing" </dev/null 2>"${TMPDIR:-/tmp}/tok_err.$$"
check missing-dir-rc 2 "$?"
check missing-dir-message "grpo-trainer tokenize: $tiny/missing/tokenizer.json: no such file" \
  "$(cat "${TMPDIR:-/tmp}/tok_err.$$")"
rm -f "${TMPDIR:-/tmp}/tok_err.$$"
help=$("$exe" tokenize --help)
check help-rc 0 "$?"
[[ $help == *"--decode"* && $help == *"--chat"* && $help == *"Exit codes"* ]] || {
  echo "FAIL help lacks --decode, --chat or the exit codes"
  fail=1
}
[[ $("$exe" --help) == *"tokenize"* ]] || { echo "FAIL grpo-trainer --help does not name tokenize"; fail=1; }
exit $fail
