// Prefix hygiene: requests that would share a long prefix but for a short, early difference — a
// timestamp or date in the system prompt, a request id or UUID, a user's name in a greeting, tool
// definitions serialised with their keys in another order, a system prompt whose first lines
// change. A prefix cache reuses nothing after the first differing byte, so such a difference
// costs every block behind it; moved after the static part, it would cost one block.
//
// How they are found (text only; a Mooncake trace has none). A request whose `tools` are the same
// JSON as other requests' of its tenant but serialised with members in another order than most
// of them (compared in canonical form: core/request/canonical_json.h) is a tools_key_order
// finding; its fix is that most common serialisation. Otherwise
// each request is compared with the
// earlier request that shares the most of its long lines (32 characters or more, among its first
// 64 lines). Where the two part (the first differing byte), the detector looks for the point
// where they agree again on at least kMinResyncChars characters, starting at a line of each; a
// difference of at most kMaxSpanChars characters followed by such a run is a finding: the
// varying span is the request's lines from the one holding the parting byte to that point. Spans
// are classified by what varies in this request's lines (a match that the other's lines do not
// contain), in this order: whitespace (the lines are the same once made canonical as the
// gateway's collapse_whitespace rule does: core/request/collapse_whitespace.h), UUID, timestamp
// (a date with a time, or a time of day), date, request id (an id-like word: hex, or letters and
// digits, 12 characters or more, or after "id"), number (only digits differ), per-user text (one
// word, capitalised, or a greeting line), and otherwise varying text.
//
// Each kind is one finding: the requests it affects, the median position of their spans, the
// mean characters after the span that match the other request but cannot be reused, one example
// (the differing lines of both requests, with their file lines), and the infinite-cache hit rate
// (prefix_sharing.h) now and with every affected request fixed: its span moved to the end of its
// prompt (for tools, the earlier serialisation in its place; for whitespace, every prompt's
// whitespace made canonical as the gateway's collapse_whitespace rule does).
//
// Usage:
//   std::vector<HygieneFinding> findings = FindHygieneDefects(set);
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/prompt_set.h"

namespace warmroute::analyze {

inline constexpr int64_t kMinResyncChars = 256;
inline constexpr int64_t kMaxSpanChars = 2048;

struct HygieneFinding {
  std::string kind;         // tools_key_order, whitespace, uuid, timestamp, date, request_id,
                            // number, per_user_text, varying_text
  std::string what;         // the kind in plain words
  std::string advice;       // what to change, in plain words
  int64_t requests = 0;     // affected
  double share = 0;         // of all requests
  int64_t position_chars = 0;     // median offset of the span in the prompt
  int64_t span_chars = 0;         // median length of the span
  double blocked_chars_mean = 0;  // matching characters after the span, per affected request
  std::string example;            // the span's line(s) in one request (at most 160 characters)
  std::string example_other;      // the same lines in the request it was compared with
  int64_t example_line = 0;       // their lines in the file
  int64_t example_other_line = 0;
  double hit_rate_now = 0;        // infinite cache, all requests
  double hit_rate_fixed = 0;      // the same with the fix below
  std::string fixed_as;           // the fix, "with the span after the static part"
};

// Findings by kind, most requests first. Empty when the set has no text.
std::vector<HygieneFinding> FindHygieneDefects(const PromptSet& set);

// The kind of what varies in `a` against `b` (the differing lines of two prompts), by the rules
// above (all but tools_key_order, which is found from the requests' tools).
std::string ClassifyDifference(const std::string& a, const std::string& b);

}  // namespace warmroute::analyze
