// Workloads: deterministic request streams shared by the simulator (`warmroute sim`) and the load
// generator (`warmroute bench`). A workload is built by name from parsed options and a seed, and
// emits requests with an arrival time, model, tenant, prompt (chat messages or completion text)
// and output length.
//
// Open-loop requests (support-bot, shared-prefix, agent's first step, unique, trace:FILE) have
// arrival times fixed in advance. Multi-turn sessions are closed-loop per session: turn k+1 is
// released only when the driver reports turn k's answer (OnResponse), after a think time, and
// its history carries the real answer, so the engine's cached generated blocks can hit.
//
// Usage:
//   absl::StatusOr<std::unique_ptr<Workload>> w = MakeWorkload(options, /*seed=*/1);
//   while (auto req = (*w)->Next()) {            // in nondecreasing arrival order
//     send at start + req->arrival ...
//     (*w)->OnResponse(req->id, answer_text, now_offset);  // may release a follow-up turn
//   }
//   // Next() == nullopt && !(*w)->Done(): requests are waiting for responses.
//
// Thread-safety: none; one owner drives a workload.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "core/request/inference_request.h"

namespace warmroute::workload {

// The latest arrival a workload may produce, in seconds from the start of the run: 1e8 s, about
// 3.2 years, far beyond any benchmark or simulation. Arrivals are Durations (int64 nanoseconds,
// which overflow at 2^63 ns, about 292 years); keeping the expected span of a run 92 times below
// that means neither a trace timestamp nor a Poisson draw (whose chance of exceeding its mean by
// 92x is e^-92) can overflow. Traces whose timestamps lie beyond it, and Poisson workloads whose
// num_requests / rate_per_s exceeds it, are refused.
inline constexpr double kMaxArrivalSeconds = 1e8;

struct WorkloadRequest {
  uint64_t id = 0;      // unique in the run, from 0
  Duration arrival{0};  // offset from the start of the run
  std::string model;
  std::string tenant;
  request::Endpoint endpoint = request::Endpoint::kChatCompletions;
  std::vector<request::ChatMessage> messages;  // chat
  std::string prompt;                          // completions
  int64_t max_tokens = 16;                     // output length
  uint64_t session = 0;                        // multi-turn / agent: session id; 0 = none
  int turn = 0;                                // 0-based turn within the session
};

// Shape overrides for one generator, "KEY" -> value, e.g. {"system_prompts", 256} for
// support-bot. Each generator's .cc block comment lists its keys with their defaults and meaning;
// keys holding counts or token lengths take whole numbers. An empty map keeps every default.
using WorkloadParams = std::map<std::string, double>;

// Options common to every workload; each generator documents which it reads and its defaults.
struct WorkloadOptions {
  std::string name;             // "support-bot", "shared-prefix", "multi-turn", "agent",
                                // "unique", or "trace:PATH"
  std::string model = "";       // model name put on every request ("" = server default)
  int64_t num_requests = 1000;  // open-loop request count (a trace: at most this many; 0 = all)
  double rate_per_s = 10;       // Poisson arrival rate (ignored by trace:, which uses timestamps)
  double trace_speed = 1.0;     // trace timestamps are divided by this
  double jitter_s = 0;          // trace: each arrival moves by U(0, jitter_s), order kept
  int num_tenants = 1;          // tenants "t0".."tN-1", assigned deterministically
  WorkloadParams params;        // shape overrides for the named generator (trace: takes none)
};

class Workload {
 public:
  Workload() = default;
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;
  virtual ~Workload() = default;

  // The next request whose arrival is known, in nondecreasing arrival order; nullopt when none
  // is available now (exhausted, or follow-up turns wait for responses).
  // Closed-loop workloads return their earliest pending request: a turn released by
  // OnResponse(..., now) arrives at or after `now`, but may arrive before a session start that
  // Next() already returned, so drivers schedule requests by their arrival.
  virtual std::optional<WorkloadRequest> Next() = 0;

  // Tells the workload request `id` was answered with `answer` at offset `now` from the start.
  // Closed-loop workloads release the session's next turn (arrival = now + think time). Report
  // failed requests too (with whatever answer arrived, maybe ""), or their session never ends.
  // An unknown or already reported id is ignored.
  virtual void OnResponse(uint64_t id, std::string_view answer, Duration now) = 0;

  // True when every request has been emitted and nothing waits for a response.
  virtual bool Done() const = 0;
};

// Builds a workload by name. InvalidArgument naming the problem for an unknown name or bad
// options — an unknown params key (the message names it and lists the workload's valid keys), or a
// params value out of range; a trace file that cannot be read or has a malformed line → an error
// naming the file and line number.
absl::StatusOr<std::unique_ptr<Workload>> MakeWorkload(const WorkloadOptions& options,
                                                       uint64_t seed);

// The checks MakeWorkload makes on `options` (name, common options and params), without building
// the workload or reading a trace file: for a command line to reject bad flags up front. Besides
// the ranges of each option, a Poisson workload's num_requests / rate_per_s must be at most
// kMaxArrivalSeconds. Errors carry the offending option as their ParamOf ("num_requests",
// "rate_per_s", "trace_speed", "jitter_s", "num_tenants") or the params key.
absl::Status ValidateWorkloadOptions(const WorkloadOptions& options);

// Requests each Poisson arrival brings: turns per session (multi-turn) or steps per trajectory
// (agent), with `options.params` applied; 1 for the open-loop workloads and traces. Converts a
// request rate into the session arrival rate. REQUIRES: ValidateWorkloadOptions(options) is OK.
int RequestsPerArrival(const WorkloadOptions& options);

// Names of the built-in workloads (without "trace:").
std::vector<std::string> WorkloadNames();

}  // namespace warmroute::workload
