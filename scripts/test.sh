#!/usr/bin/env bash
# All tests: installs the dependencies, builds, runs every ctest test (unit, golden, trainer, the
# real Slurm cluster tests, CLI) and the libFuzzer targets for a bounded time.
# Usage: scripts/test.sh [ctest arguments...]   e.g. scripts/test.sh -L unit
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/build.sh
jobs=${GRPO_BUILD_JOBS:-$(nproc)}

# libFuzzer needs clang: the fuzz targets live in their own build tree.
if [[ ! -f build-fuzz/CMakeCache.txt ]]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DGRPO_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build build-fuzz -j "$jobs"

status=0
if (($# == 0)); then
  # The unit tests (fake clocks, no ranks, no cluster) run side by side; then the rest one at a
  # time, as the trainer and cluster tests measure latencies that a loaded machine would stretch.
  ctest --test-dir build --output-on-failure --timeout 900 -L unit -j "$jobs" || status=$?
  ctest --test-dir build --output-on-failure --timeout 900 -LE unit || status=$?
else
  ctest --test-dir build --output-on-failure --timeout 900 "$@" || status=$?
fi
# Each fuzzer is one single-threaded process with a fixed time budget: they run side by side.
ctest --test-dir build-fuzz --output-on-failure --timeout 300 -j "$jobs" "$@" || status=$?
exit $status
