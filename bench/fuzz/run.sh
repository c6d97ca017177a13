#!/usr/bin/env bash
# Longer fuzzing than the ctest runs (label fuzz: 20 s each from seed 1): every fuzz target for
# SECONDS each from a random seed, with the same seed corpora as tests/fuzz/CMakeLists.txt.
# A crash leaves its input in OUT/<target>-crash-*; add it to the target's seed folder and write a
# unit test for the bug before fixing it. Needs the fuzz tree scripts/test.sh builds (clang).
# Usage: bench/fuzz/run.sh [SECONDS] [OUT]   (default 300 s each, OUT a new temporary folder)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
seconds=${1:-300}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
[[ -f build-fuzz/CMakeCache.txt ]] || { echo "build the fuzz tree first: scripts/test.sh -L fuzz" >&2; exit 1; }
cmake --build build-fuzz >/dev/null
seeds=tests/fuzz/seeds
declare -A corpora=(
  [fuzz_profile_loader]="profiles/clusters $seeds/toml"
  [fuzz_model_loader]="profiles/models $seeds/toml"
  [fuzz_script_reader]="tests/data/check $seeds/shell"
  [fuzz_shell_quote]="$seeds/cmdline"
  [fuzz_tokenizer]="$seeds/tokenizer"
)
status=0
for target in "${!corpora[@]}"; do
  mkdir -p "$out/$target-corpus"
  seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  # shellcheck disable=SC2086 # the corpus list is words on purpose
  if ASAN_OPTIONS=detect_leaks=1 "build-fuzz/tests/fuzz/$target" -max_total_time="$seconds" \
    -seed="$seed" -timeout=5 -rss_limit_mb=2048 -max_len=8192 \
    -artifact_prefix="$out/$target-" "$out/$target-corpus" ${corpora[$target]} \
    >"$out/$target.log" 2>&1; then
    echo "$target: seed $seed, $seconds s, no failure"
  else
    echo "$target: seed $seed FAILED, see $out/$target.log and $out/$target-crash-*"
    status=1
  fi
done
exit $status
