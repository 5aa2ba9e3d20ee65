// What `warmroute bench` measures: one record per request, the engines' counters scraped during
// the run, and the summary computed from them (percentiles, throughput, errors by kind, token
// hit rate, engine hit rate, per-backend load share).
//
// Definitions (all times in seconds, offsets from the start of the run):
//   TTFT   send -> the first SSE chunk with non-empty content (non-streaming: the whole body).
//   ITL    the gaps between consecutive content chunks of one stream (one sample per gap).
//   E2E    send -> the end of the response body.
//   Token hit rate  Σ cached_tokens / Σ prompt_tokens over the responses that reported usage
//                   (a response without prompt_tokens_details counts as 0 cached tokens).
//   Engine hit rate Δ vllm:prefix_cache_hits_total / Δ vllm:prefix_cache_queries_total between
//                   the first and the last scrape, summed over the --engine-metrics URLs.
//   Load skew       max / mean of the requests each backend served: from the responses'
//                   x-warmroute-backend header when present, else from the engines'
//                   Δ vllm:request_success_total (loadgen/engine_counters.h).
//   Throughput      successful requests (and their completion tokens) per second of the run's
//                   duration (first send -> last response end).
// Only successful requests (HTTP 200, a well-formed OpenAI response) feed TTFT/ITL/E2E and the
// hit rates; every request counts in `requests` and failures in `errors` by kind.
//
// Usage:
//   BenchRun run;  run.requests.push_back(record); ...
//   Summary s = Summarize(run);
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace warmroute::loadgen {

struct RequestRecord {
  uint64_t id = 0;
  uint64_t session = 0;  // 0 = none
  int turn = 0;
  double arrival_s = 0;  // the workload's planned arrival
  double send_s = -1;    // when it was sent; -1 = never sent
  double ttft_s = -1;    // -1 = no content arrived
  double e2e_s = -1;     // -1 = not finished
  std::vector<double> itl_s;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  bool usage_reported = false;
  int http_status = 0;     // 0 = no response head
  std::string error_kind;  // "" = success; else see ErrorKind below
  std::string error;       // human-readable reason
  std::string backend;     // x-warmroute-backend, when the response carried it

  bool ok() const { return error_kind.empty() && e2e_s >= 0; }
};

// Error kinds, as reported in results.json and the summary.
namespace error_kind {
inline constexpr char kConnect[] = "connect";             // could not connect to the URL
inline constexpr char kTimeout[] = "timeout";             // no response head / body in time
inline constexpr char kHttp[] = "http_";                  // prefix: http_429, http_500, ...
inline constexpr char kBrokenStream[] = "broken_stream";  // the body broke off
inline constexpr char kBadResponse[] = "bad_response";    // not an OpenAI response
inline constexpr char kInterrupted[] = "interrupted";     // in flight when the run stopped
}  // namespace error_kind

// The counters read from one engine's /metrics at one moment.
struct EngineCounters {
  double prefix_cache_hits = 0;
  double prefix_cache_queries = 0;
  double request_success = 0;
};

struct EngineSeries {
  std::string url;
  // (offset s, counters) for every successful scrape, in time order.
  std::vector<std::pair<double, EngineCounters>> scrapes;
  std::string last_error;  // the last failed scrape's reason, if any
};

struct BenchConfig {
  std::string name;  // label for reports and `bench compare`
  std::vector<std::string> urls;
  std::string workload;
  int64_t requests = 0;
  double rate = 0;
  int64_t concurrency = 0;  // 0 = open loop
  uint64_t seed = 1;
  bool stream = true;
  std::string model;
  std::string api;  // "chat", "completions", "responses"; "": each request's own endpoint
};

struct BenchRun {
  BenchConfig config;
  std::vector<RequestRecord> requests;  // by id
  std::vector<EngineSeries> engines;
  bool interrupted = false;  // stopped early (SIGINT or an unreachable URL)
  std::string stop_reason;
};

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
  size_t count = 0;
};

struct BackendShare {
  std::string name;
  double requests = 0;
  double share = 0;  // of all requests counted
};

struct Summary {
  size_t requests = 0;  // records, sent or not
  size_t sent = 0;
  size_t succeeded = 0;
  size_t failed = 0;
  std::map<std::string, size_t> errors;  // by kind
  double duration_s = 0;
  double requests_per_s = 0;
  double output_tokens_per_s = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;
  Percentiles ttft_s, itl_s, e2e_s;
  std::optional<double> token_hit_rate;   // none without usage
  std::optional<double> engine_hit_rate;  // none without engine scrapes (or no queries)
  std::vector<BackendShare> backends;
  std::string backend_source;       // "header", "engine_metrics" or "" (unknown)
  std::optional<double> load_skew;  // max / mean over backends
};

Summary Summarize(const BenchRun& run);

// Error kind "http_<status>".
std::string HttpErrorKind(int status);

}  // namespace warmroute::loadgen
