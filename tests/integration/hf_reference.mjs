// The reference tokenizer for test_engine_tokenizer.py: the Rust `tokenizers` library (npm
// @anush008/tokenizers, installed in tests/tokenizers by scripts/install-deps.sh).
//
//   node hf_reference.mjs TOKENIZER_JSON < requests.json > answers.json
//   node hf_reference.mjs --check          exit 0 when the package is installed, else 77
//
// requests.json is a list of {"encode": text, "add_special_tokens": bool}, {"decode": [ids]}
// and {"token_strs": [ids]}; each answer is the ids (an encode), the text (a decode, special
// tokens kept) or each id's token as the file spells it. Exits 77 when the npm package is
// missing.
import fs from 'node:fs';
import path from 'node:path';
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
const requests = JSON.parse(fs.readFileSync(0, 'utf8'));
const answers = [];
for (const r of requests) {
  if ('encode' in r) {
    const e = await tok.encode(r.encode, null, { addSpecialTokens: r.add_special_tokens });
    answers.push(Array.from(e.getIds()));
  } else if ('decode' in r) {
    answers.push(await tok.decode(r.decode, false));
  } else {
    answers.push(r.token_strs.map((id) => tok.idToToken(id)));
  }
}
process.stdout.write(JSON.stringify(answers));
