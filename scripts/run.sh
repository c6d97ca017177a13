#!/usr/bin/env bash
# The main job on the embedded default: installs, builds, and plans Qwen3-30B-A3B GRPO on one
# node of 8 A100-80G, printing the Parallel Config Summary (nothing is submitted).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/build.sh >&2
exec build/launcher/cli/grpo-launch --profile a100x8 --model qwen3-30b-moe --dry-run "$@"
