// The reference tokenizer for test_engine_tokenizer.py: the Rust `tokenizers` library (npm
// @anush008/tokenizers, installed in tests/tokenizers by scripts/install-deps.sh).
//
//   node hf_reference.mjs TOKENIZER_JSON   one JSON request a line in, one JSON answer a line out
//   node hf_reference.mjs --check          exit 0 when the package is installed, else 77
//
// A request is {"encode": text, "add_special_tokens": bool}, {"decode": [ids]} or
// {"token_strs": [ids]}; its answer is the ids (an encode), the text (a decode, special tokens
// kept) or each id's token as the file spells it. The tokenizer is loaded once, at start.
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, '..', 'tokenizers', 'node_modules');
if (!fs.existsSync(path.join(modules, '@anush008', 'tokenizers'))) {
  console.error('skipped: @anush008/tokenizers missing (run scripts/install-deps.sh)');
  process.exit(77);
}
if (process.argv[2] === '--check') process.exit(0);
const require = createRequire(path.join(modules, 'index.js'));
const { Tokenizer } = require('@anush008/tokenizers');

const tok = Tokenizer.fromFile(process.argv[2]);
async function answer(r) {
  if ('encode' in r) {
    const e = await tok.encode(r.encode, null, { addSpecialTokens: r.add_special_tokens });
    return Array.from(e.getIds());
  }
  if ('decode' in r) return tok.decode(r.decode, false);
  return r.token_strs.map((id) => tok.idToToken(id));
}

for await (const line of readline.createInterface({ input: process.stdin })) {
  if (line.trim()) process.stdout.write(JSON.stringify(await answer(JSON.parse(line))) + '\n');
}
