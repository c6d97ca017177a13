#!/usr/bin/env bash
# `cmake --install` puts the binaries, profiles and templates in their usual places and the
# installed grpo-launch and grpo-trainer find their own data with the source and build trees out
# of sight (a private mount namespace hides both behind empty directories, as if the checkout had
# been moved away); CPack builds a .deb holding the same files.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source_dir=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/usr" >/dev/null
test -x "$tmp/usr/bin/grpo-launch"
test -f "$tmp/usr/share/grpo-launch/profiles/clusters/a100x8.toml"
test -f "$tmp/usr/share/grpo-launch/profiles/models/qwen3-30b-moe.toml"
test -d "$tmp/usr/share/grpo-launch/templates"
test -f "$tmp/usr/share/doc/grpo-launch/exit-codes.md"
test -f "$tmp/usr/share/bash-completion/completions/grpo-launch"
test -f "$tmp/usr/share/man/man1/grpo-launch.1"

# Runs "$@" with the source tree and the build tree hidden behind empty directories.
without_trees() {
  local as_root=()
  ((EUID == 0)) || as_root=(--map-root-user)
  unshare --mount "${as_root[@]}" bash -c '
    set -e
    mount --make-rprivate /
    mount -t tmpfs none "$2"  # the build tree first: it may lie inside the source tree
    mount -t tmpfs none "$1"
    shift 2
    test -z "$(ls -A "$0")" || { echo "the source tree is still visible" >&2; exit 1; }
    exec "$@"' "$source_dir" "$source_dir" "$build" "$@"
}

HOME=$tmp/home without_trees "$tmp/usr/bin/grpo-launch" profiles --format json >"$tmp/profiles.json"
python3 - "$tmp/profiles.json" "$tmp/usr" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
path = {c["name"]: c["path"] for c in j["clusters"]}["a100x8"]
assert path.startswith(sys.argv[2]), f"installed grpo-launch used {path}, not its own profiles"
PY
HOME=$tmp/home without_trees "$tmp/usr/bin/grpo-launch" plan --profile a100x8 --model qwen3-30b-moe >/dev/null
HOME=$tmp/home without_trees "$tmp/usr/bin/grpo-launch" render --profile a100x8 --model qwen3-30b-moe >/dev/null
printf 'python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8 trainer.nnodes=1\n' >"$tmp/run.sh"
HOME=$tmp/home without_trees "$tmp/usr/bin/grpo-launch" check "$tmp/run.sh" --profile a100x8 >/dev/null
if [[ -x "$tmp/usr/bin/grpo-trainer" ]]; then
  # The installed trainer resolves model names in its own share/ (the error names where it looked).
  out=$(HOME=$tmp/home without_trees "$tmp/usr/bin/grpo-trainer" --model no-such-model 2>&1) && exit 1
  grep -q "$tmp/usr/share/grpo-launch/profiles/models/no-such-model.toml" <<<"$out" ||
    { echo "installed grpo-trainer looked elsewhere: $out" >&2; exit 1; }
fi
(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/deb" >/dev/null)
deb=$(ls "$tmp"/deb/*.deb)
dpkg-deb -c "$deb" >"$tmp/contents"
grep -q './usr/bin/grpo-launch' "$tmp/contents"
grep -q 'share/grpo-launch/profiles/clusters/local-cpu.toml' "$tmp/contents"
echo "install and .deb ok: $(basename "$deb")"
