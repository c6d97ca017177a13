// The benchmark corpus, one JSON string per line: the repository's Markdown split into
// paragraphs, its C++ sources in chunks of 40 lines, and the oracle's generated strings (mixed
// scripts, emoji, white-space runs, special tokens; tests/tokenizer/oracle.mjs, fixed seed).
// Usage: node make_corpus.mjs REPO_ROOT ORACLE.jsonl OUT.jsonl
import fs from 'node:fs';
import path from 'node:path';

const [root, oracle, out] = process.argv.slice(2);
const lines = [];
const walk = (dir, ext, f) => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, ext, f);
    else if (e.name.endsWith(ext)) f(fs.readFileSync(p, 'utf8'));
  }
};
const md = [path.join(root, 'README.md')];
walk(path.join(root, 'docs'), '.md', (t) => { for (const para of t.split(/\n\s*\n/)) if (para.trim()) lines.push(para); });
for (const f of md) for (const para of fs.readFileSync(f, 'utf8').split(/\n\s*\n/)) if (para.trim()) lines.push(para);
for (const dir of ['trainer', 'launcher']) {
  walk(path.join(root, dir), '.cpp', (t) => {
    const ls = t.split('\n');
    for (let i = 0; i < ls.length; i += 40) lines.push(ls.slice(i, i + 40).join('\n'));
  });
}
for (const l of fs.readFileSync(oracle, 'utf8').split('\n')) {
  if (!l) continue;
  const j = JSON.parse(l);
  if (j.t !== undefined) lines.push(j.t);
}
fs.writeFileSync(out, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
