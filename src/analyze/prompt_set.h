// The requests `warmroute analyze` looks at, read from a file: each one's prompt cut into
// chain-hashed blocks (routing/prefix_key.h), with its text when the file has it.
//
// Two formats, told apart by the first non-blank line:
//   - OpenAI requests, JSONL: one chat (`messages`) or completions (`prompt`) body per line, as a
//     client sends it, with two optional extra members: `timestamp` (seconds, any origin) and
//     `tenant` (a string; tenants never share a prefix, as the gateway isolates them). The prompt
//     is rendered as the gateway's approximate keys render it (request::RenderPrompt) and cut
//     into 64-character blocks (about 16 tokens).
//   - Mooncake traces ({"timestamp": ms, "input_length", "output_length", "hash_ids"}): each hash
//     id is already one 512-token block; there is no text, so prefix hygiene cannot be looked at.
// A line without a timestamp arrives one second after the line before.
//
// Errors are InvalidArgument "NAME:LINE: problem": invalid JSON, neither messages nor prompt, a
// request the gateway would refuse (request::ParseInferenceRequest's message), a timestamp that is
// not a finite number or a tenant that is not a string; an empty file.
//
// Usage:
//   absl::StatusOr<PromptSet> set = ReadPromptSet("requests.jsonl", file_text);
//   for (const PromptRecord& r : set->records) ... r.blocks ... r.text ...
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::analyze {

struct PromptRecord {
  int64_t line = 0;       // 1-based line in the file
  double arrival_s = 0;   // from the file's start
  std::string tenant;     // "" when none
  std::string model;
  std::string text;       // the rendered prompt; empty for a trace
  std::string tools;      // a chat's `tools` as given (minified JSON), "" when none
  std::vector<uint64_t> blocks;  // chain hashes of the prompt's full blocks
  int64_t prompt_tokens = 0;     // estimated (4 characters a token) or the trace's own
};

struct PromptSet {
  std::string format;          // "requests" or "mooncake"
  int64_t block_tokens = 16;   // tokens one block stands for (estimated for text)
  int64_t block_chars = 64;    // characters per block (0 for a trace)
  std::vector<PromptRecord> records;  // in arrival order (stable for ties)
};

absl::StatusOr<PromptSet> ReadPromptSet(std::string_view name, std::string_view content);

// The chain hashes of `text`'s full 64-character blocks, keyed by model and tenant as
// ReadPromptSet keys a request's prompt.
std::vector<uint64_t> TextBlocks(std::string_view model, std::string_view tenant,
                                 std::string_view text);

}  // namespace warmroute::analyze
