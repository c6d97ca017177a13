#!/usr/bin/env bash
# Installs the dependencies (idempotent) and builds the project into build/ (Release with debug
# info). Extra arguments go to CMake's configure step. Used by run.sh and test.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
jobs=${GRPO_BUILD_JOBS:-$(nproc)}
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
elif (($#)); then
  cmake -S . -B build "$@" >/dev/null
fi
cmake --build build -j "$jobs"
