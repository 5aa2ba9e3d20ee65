// OpenAI request logs: an operator's own traffic as a workload, and the reader `warmroute
// analyze` shares. JSONL, one body per line as a client sends it — chat (`messages`) or
// completions (`prompt`, text) — with two optional extra members: `timestamp` (seconds, any
// origin) and `tenant` (a string). Blank lines are skipped. A line without a timestamp comes one
// second after the line before (the first at 0).
//
// `trace:FILE` replays such a file when its first non-blank line is not a Mooncake record
// (LooksLikeMooncakeTrace): arrival = (timestamp - the earliest) / trace_speed + U(0, jitter_s),
// in arrival order (stable), the first num_requests (0 = all); each request as logged (its
// messages or prompt, its model unless options.model is set, max_tokens as logged or 256), its
// tenant as logged, or "t<line mod num_tenants>" when the line has none.
//
// Errors are InvalidArgument "NAME:LINE: problem": invalid JSON, not an object, neither messages
// nor prompt, a body the gateway would refuse (request::ParseInferenceRequest's message), a token
// prompt, a timestamp that is not a finite number of seconds (|t| <= 1e12), a tenant that is not
// a string; "NAME: no request" for a file without one.
//
// Usage:
//   absl::StatusOr<std::vector<LoggedRequest>> log = ParseRequestLog(text, "requests.jsonl");
//
// Thread-safety: pure functions; a RequestLogWorkload has one owner.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/request/inference_request.h"
#include "core/workload/workload.h"

namespace warmroute::workload {

struct LoggedRequest {
  int64_t line = 0;        // 1-based line in the file
  double timestamp_s = 0;  // as logged (or the line before's + 1)
  bool has_tenant = false;
  std::string tenant;
  request::InferenceRequest request;  // endpoint kChatCompletions or kCompletions
};

// The requests of `text`, in file order.
absl::StatusOr<std::vector<LoggedRequest>> ParseRequestLog(std::string_view text,
                                                           std::string_view name);

// True when the first non-blank line of `text` has a "hash_ids" member (a Mooncake trace).
bool LooksLikeMooncakeTrace(std::string_view text);

// The workload described above. REQUIRES: options valid; `log` non-empty.
std::unique_ptr<Workload> MakeRequestLogWorkload(const WorkloadOptions& options,
                                                 std::vector<LoggedRequest> log, uint64_t seed);

}  // namespace warmroute::workload
