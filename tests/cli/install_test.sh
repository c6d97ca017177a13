#!/usr/bin/env bash
# `cmake --install` puts the binaries, profiles and templates in their usual places and the
# installed grpo-launch finds its own profiles; CPack builds a .deb holding the same files.
set -euo pipefail
build=$1
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
HOME=$tmp/home "$tmp/usr/bin/grpo-launch" profiles --format json >"$tmp/profiles.json"
python3 - "$tmp/profiles.json" "$tmp/usr" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
path = {c["name"]: c["path"] for c in j["clusters"]}["a100x8"]
assert path.startswith(sys.argv[2]), f"installed grpo-launch used {path}, not its own profiles"
PY
HOME=$tmp/home "$tmp/usr/bin/grpo-launch" plan --profile a100x8 --model qwen3-30b-moe >/dev/null
(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/deb" >/dev/null)
deb=$(ls "$tmp"/deb/*.deb)
dpkg-deb -c "$deb" >"$tmp/contents"
grep -q './usr/bin/grpo-launch' "$tmp/contents"
grep -q 'share/grpo-launch/profiles/clusters/local-cpu.toml' "$tmp/contents"
echo "install and .deb ok: $(basename "$deb")"
