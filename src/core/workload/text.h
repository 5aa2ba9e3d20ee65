// Pseudo-English text with an exact token count: the filler of every generated workload (system
// prompts, questions, user turns, tool results, trace blocks).
//
// Text is drawn word by word from a fixed vocabulary of real short English words (1 to 5
// letters) with sentence capitals, commas, full stops and — in documents — paragraph breaks and
// numbered rules. Every piece written is exactly one BuiltinTokenizer token (core/request/
// tokenizer.h): " word" (a space and at most 5 letters), "Word" at a line start, "," or "."
// right after a word, "\n\n", and a number of at most 3 digits. So the token count is known
// without tokenizing, and the text averages about 4.4 characters per token, close to Llama 3 on
// English. Deterministic: the same Rng state gives the same text.
//
// Prefix property: AppendProse's choices never depend on the requested length, so from the same
// Rng state, AppendProse(n) writes a prefix of AppendProse(m) for n <= m — cut at a token
// boundary. And because its text starts with a space and a letter and ends with a letter or
// punctuation, concatenated pieces tokenize to the concatenation of their tokens.
//
// Usage:
//   Rng rng(7);
//   std::string question = Prose(rng, 50);         // exactly 50 tokens, no leading space
//   std::string policy = Document(rng, 3000);      // exactly 3,000 tokens
//
// Thread-safety: pure functions of their arguments (the Rng is the caller's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/rng.h"

namespace warmroute::workload {

// Appends exactly `tokens` tokens of prose to `out`, starting with " " and a capitalised word.
void AppendProse(Rng& rng, int64_t tokens, std::string* out);

// `tokens` tokens of prose without the leading space (a message's content).
std::string Prose(Rng& rng, int64_t tokens);

// `tokens` tokens of a structured document: a title sentence, then paragraphs and numbered rules
// separated by blank lines (a policy or instructions text). No leading space.
std::string Document(Rng& rng, int64_t tokens);

// One word from the vocabulary (1 to 5 lowercase letters).
std::string_view RandomWord(Rng& rng);

// A bijective lowercase spelling of `id` (bijective base 26: 0 → "a", 25 → "z", 26 → "aa", ...):
// distinct ids give distinct words, and no word is empty.
std::string IdWord(uint64_t id);

// BuiltinTokenizer tokens of " " + a word of `letters` letters: 1 up to 5 letters, else the piece
// is cut into chunks of 4 characters.
int64_t SpacedWordTokens(size_t letters);

}  // namespace warmroute::workload
