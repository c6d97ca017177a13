#!/usr/bin/env bash
# Compiles every CUDA source of kernels/cuda with nvcc for sm_80 and sm_90, warnings as errors:
# the `cuda-build` ctest (and a CI step) on machines without a GPU. Exit 77 (skipped) without nvcc.
#   usage: kernels/cuda/compile_check.sh [NVCC] [OUT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${1:-/usr/local/cuda/bin/nvcc}
out=${2:-$(mktemp -d)}
if [[ ! -x $nvcc ]]; then
  echo "SKIP: nvcc not found at '$nvcc' (install CUDA at /usr/local/cuda to check the CUDA build)"
  exit 77
fi
mkdir -p "$out"
"$nvcc" --version | tail -n 2
for src in "$here"/src/*.cu; do
  obj="$out/$(basename "$src" .cu).o"
  echo "nvcc $(basename "$src") -> sm_80, sm_90"
  "$nvcc" -std=c++20 -O2 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Wshadow,-Werror \
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
    -I"$here/include" -I"$here/../include" -c "$src" -o "$obj"
done
echo "CUDA kernels compile for sm_80 and sm_90"

# The LibTorch glue (src/torch_glue.cpp) builds only against a LibTorch with CUDA. Where this
# LibTorch ships its CUDA headers (Debian's does, without the generated cuda_cmake_macros.h), a
# syntax check against them and CUDA's headers catches API slips; it is not a build.
torch_inc=${TORCH_INCLUDE:-/usr/include}
if [[ -f $torch_inc/ATen/cuda/CUDAContext.h ]] && command -v "${CXX:-g++}" > /dev/null; then
  mkdir -p "$out/stub/c10/cuda/impl"
  printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' \
    > "$out/stub/c10/cuda/impl/cuda_cmake_macros.h"
  cuda_inc=$(cd "$(dirname "$nvcc")/.." && pwd)/include
  extra=()
  [[ $torch_inc != /usr/include ]] && extra=(-isystem "$torch_inc")
  echo "syntax check of torch_glue.cpp against $torch_inc and $cuda_inc"
  "${CXX:-g++}" -std=c++20 -fsyntax-only -Wall -Wextra -Wshadow -Wconversion \
    -Wno-sign-conversion -Werror -isystem "$out/stub" "${extra[@]}" \
    -isystem "$torch_inc/torch/csrc/api/include" -isystem "$cuda_inc" -I"$here/../src" \
    -I"$here/include" -I"$here/../include" -I"$here/../backend/include" \
    -I"$here/../../launcher/core/include" \
    "$here/src/torch_glue.cpp"
  echo "torch_glue.cpp: syntax ok"
fi
