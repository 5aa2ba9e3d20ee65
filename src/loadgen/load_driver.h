// The live side of `warmroute bench`: drives a workload against OpenAI endpoints on one
// io_context thread (thousands of concurrent streams cost one coroutine frame, one connection and
// one small parse state each), scrapes the engines' /metrics around and during the run, and
// reports progress on stderr.
//
// Pacing:
//   open loop (concurrency 0)  each request is sent at start + its workload arrival (Poisson, or
//                              trace timestamps / speed); nothing waits for earlier answers
//                              except multi-turn follow-ups, which the workload releases
//                              through OnResponse with the real answer text.
//   closed loop (N > 0)        N requests in flight; the next one goes as soon as one finishes,
//                              arrival times ignored.
// Requests go round-robin over `urls` on keep-alive connection pools (one per URL). Every network
// wait (connect, response head, gap between body pieces) is bounded by `timeout`.
//
// Engine metrics: the first failed scrape of each --engine-metrics URL is a warning on stderr;
// every failure is kept as that engine's last_error.
//
// Stopping early: SIGINT/SIGTERM, or a URL that refuses connections (nothing can be measured)
// stops the run at once; the requests in flight are recorded as "interrupted" and everything
// gathered so far stays in `run`.
//
// Usage:
//   BenchRun run;
//   absl::Status s = RunLoad(*workload, options, &run);   // blocks until done or stopped
//   Summary summary = Summarize(run);                      // whatever `s` says
//
// Thread-safety: RunLoad blocks the calling thread and runs everything on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "core/workload/workload.h"
#include "loadgen/bench_result.h"
#include "loadgen/http_url.h"
#include "loadgen/request_body.h"

namespace warmroute::loadgen {

struct LoadOptions {
  std::vector<HttpUrl> urls;            // at least one
  std::vector<HttpUrl> engine_metrics;  // /metrics endpoints to scrape (may be empty)
  int64_t concurrency = 0;              // 0 = open loop
  std::chrono::milliseconds timeout{60'000};
  BodyOptions body;               // the bodies, and the API they go to (request_body.h)
  int64_t expected_requests = 0;  // for the progress line; 0 = unknown
  std::chrono::milliseconds scrape_interval{1000};
  bool progress = true;  // live progress on stderr
  std::string api_key;   // sent as `Authorization: Bearer <key>` when set
};

// Runs the workload to its end (or a stop) and fills run->requests and run->engines (and
// run->interrupted / stop_reason). Returns Unavailable naming the URL when a target URL refused
// connections, Cancelled on SIGINT/SIGTERM, OK otherwise (failed requests are data, not errors).
absl::Status RunLoad(workload::Workload& workload, const LoadOptions& options, BenchRun* run);

}  // namespace warmroute::loadgen
