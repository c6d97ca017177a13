#!/usr/bin/env bash
# Installs every Debian 12 package grpo-launch needs to build, test and run.
# Idempotent: quiet and fast when everything is present. The single place dependencies are declared.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev clang-format
  # core libraries (launcher/core depends only on these)
  libtoml11-dev nlohmann-json3-dev
  # CLI, logging, templates
  libcli11-dev libspdlog-dev libfmt-dev libkainjow-mustache-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev hyperfine
  # Slurm and PMIx (adapters, bootstrap, the throw-away test cluster)
  slurmctld slurmd slurm-client munge libslurm-dev libpmix-dev iproute2 util-linux procps
  # trainer: LibTorch (CPU) with c10d Gloo headers, OpenBLAS with OpenMP threads
  libtorch-dev libgloo-dev libopenblas0-openmp
  # packaging; python3 for test helpers and scripts/refresh-schema.py
  dpkg-dev file python3
  # the run report's browser test (headless Chromium renders the HTML and takes a screenshot)
  chromium fonts-dejavu-core
  # the generated man page is checked with groff
  groff-base
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
