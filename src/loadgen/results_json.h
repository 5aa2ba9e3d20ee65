// results.json of `warmroute bench`: the run's configuration, its summary and every request, and
// the reading back of such a file for `warmroute bench compare`.
//
// Layout (times in seconds; a value not measured is null; config.api is "chat", "completions" or
// "responses", or "" when each request went to its workload's own endpoint):
//   {"name": "...", "config": {"urls": [...], "workload", "requests", "rate", "concurrency",
//    "seed", "stream", "model", "api"}, "interrupted": bool, "stop_reason": "...",
//    "summary": {"requests", "sent", "succeeded", "failed", "errors": {"kind": n},
//                "duration_s", "requests_per_s", "output_tokens_per_s", "prompt_tokens",
//                "cached_tokens", "completion_tokens",
//                "ttft_s": {"p50", "p90", "p99", "mean", "count"}, "itl_s": {...}, "e2e_s": {...},
//                "token_hit_rate", "engine_hit_rate", "backend_source", "load_skew",
//                "backends": [{"name", "requests", "share"}]},
//    "engines": [{"url", "last_error", "scrapes": [{"t_s", "prefix_cache_hits",
//                 "prefix_cache_queries", "request_success"}]}],
//    "requests": [{"id", "session", "turn", "arrival_s", "send_s", "ttft_s", "e2e_s", "itl_s": [],
//                  "prompt_tokens", "completion_tokens", "cached_tokens", "usage_reported",
//                  "status", "error_kind", "error", "backend"}]}
//
// Thread-safety: pure functions (ReadResultsFile reads a file).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "loadgen/bench_result.h"

namespace warmroute::loadgen {

std::string ResultsJson(const BenchRun& run, const Summary& summary);

// What `bench compare` needs from a results.json.
struct SavedRun {
  std::string name;
  Summary summary;             // the fields listed above (backends included)
  std::vector<double> ttft_s;  // every successful request's TTFT
};

// Reads `path`. InvalidArgument naming the file for a file that is not a results.json; NotFound
// when it cannot be read.
absl::StatusOr<SavedRun> ReadResultsFile(const std::string& path);

// Parses results.json text (`source` names it in errors).
absl::StatusOr<SavedRun> ParseResultsJson(std::string_view json, const std::string& source);

}  // namespace warmroute::loadgen
