#!/usr/bin/env bash
# The GPU benchmark of the CUDA kernels, one command, a few seconds of GPU time (under 5 minutes
# including a build of the benchmark alone): bandwidth and FLOP rate against the device's peak.
# Exits 77 (skipped) with a message where no CUDA device is visible or CUDA is not installed.
#   usage: bench/kernels/gpu_bench.sh [BUILD_DIR]   (default build-cuda; configured and the
#          benchmark built there with -DGRPO_ENABLE_CUDA=ON when missing)
# Needs: scripts/install-deps.sh --bench, plus what it does not install: the CUDA toolkit (nvcc,
# /usr/local/cuda) and an NVIDIA GPU with its driver (nvidia-smi).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-cuda}
if [[ ! -x /usr/local/cuda/bin/nvcc ]] && ! command -v nvcc > /dev/null; then
  echo "SKIP: CUDA is not installed (no nvcc); the GPU benchmark did not run"
  exit 77
fi
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU visible (nvidia-smi finds none); the GPU benchmark did not run"
  exit 77
fi
bench=$build/bench/kernels/kernels_gpu_bench
if [[ ! -x $bench ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DGRPO_ENABLE_CUDA=ON -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build "$build" --target kernels_gpu_bench -j "$(nproc)"
fi
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv
exec "$bench"
