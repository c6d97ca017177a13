#!/usr/bin/env bash
# All tests: installs the dependencies, builds, runs every ctest test (unit, golden, trainer, the
# real Slurm cluster tests, CLI) and the libFuzzer targets for a bounded time.
# Usage: scripts/test.sh [ctest arguments...]   e.g. scripts/test.sh -L unit
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/build.sh
jobs=${GRPO_BUILD_JOBS:-$(nproc)}

# libFuzzer needs clang: the fuzz targets live in their own build tree. Each fuzzer is one
# single-threaded process with a fixed time budget: they run side by side.
fuzz() { # ctest arguments...
  if [[ ! -f build-fuzz/CMakeCache.txt ]]; then
    CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DGRPO_FUZZ=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  cmake --build build-fuzz -j "$jobs" && ctest --test-dir build-fuzz --output-on-failure --timeout 300 -j "$jobs" "$@"
}

status=0
if (($# == 0)); then
  # The unit tests (fake clocks, no ranks, no cluster) run side by side; then the rest one at a
  # time, as the trainer and cluster tests measure latencies that a loaded machine would stretch.
  ctest --test-dir build --output-on-failure --timeout 900 -L unit -j "$jobs" || status=$?
  ctest --test-dir build --output-on-failure --timeout 900 -LE 'unit|slurm' || status=$?
  # The Slurm tests spend most of their time waiting (node timeouts, requeues, time limits): the
  # fuzz tree builds and its fuzzers run beside them at the lowest CPU priority, on the cycles
  # the tests leave idle. (Their hold/release faults keep them race-free under load.) The
  # supervise_reference fixture ran in the block above: its output is reused, not run again.
  mkdir -p build-fuzz
  nice -n 19 bash -c "$(declare -f fuzz); jobs=$jobs; fuzz" >build-fuzz/fuzz.log 2>&1 &
  fuzz_pid=$!
  trap 'kill "$fuzz_pid" 2>/dev/null; exit 130' INT TERM
  ctest --test-dir build --output-on-failure --timeout 900 -L slurm -FS supervise_reference ||
    status=$?
  fuzz_status=0
  wait "$fuzz_pid" || fuzz_status=$?
  cat build-fuzz/fuzz.log
  ((fuzz_status == 0)) || status=$fuzz_status
else
  ctest --test-dir build --output-on-failure --timeout 900 "$@" || status=$?
  fuzz "$@" || status=$?
fi
exit $status
