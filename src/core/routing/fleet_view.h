// What a router knows about its backends: health and membership, its own exact accounting of
// the requests it sent (in flight, prefill tokens still outstanding, decodes running), the last
// scraped engine metrics with their age, KV capacity, and an online estimate of each backend's
// prefill rate. Never the engines' true cache state: the simulator gives policies exactly this
// view, as the live gateway has it.
//
// Thread-safety: none; owned by a Router (router.h), read by policies during Route().
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "core/routing/prefix_index.h"

namespace warmroute::routing {

// Engine metrics as last scraped (vLLM, SGLang or llama.cpp names, normalised).
struct EngineMetricsSample {
  int64_t num_running = 0;
  int64_t num_waiting = 0;
  double kv_usage = 0;  // fraction of KV blocks in use, [0, 1]
  TimePoint scraped_at{};
};

// Where a backend's slice of the prefix index comes from (Router::SetKvEventState).
enum class KvEventState : uint8_t {
  kNone,       // no KV-event stream: the slice is the approximate estimate (speculative inserts
               // corrected by reported cached tokens)
  kPrecise,    // the engine's KV events keep the slice, in sequence
  kUncertain,  // the stream lost messages (awaiting a replay, or rebuilding from live events):
               // the slice may lack blocks; a precise-mode caller treats it as approximate
};

// A router's own load on one backend (BackendState's accounting below): what a gateway replica
// tells its peers, and, summed over them, what it learns of theirs (placement_gossip.h).
struct BackendLoad {
  int64_t in_flight = 0;
  int64_t outstanding_prefill_tokens = 0;
  int64_t running_decodes = 0;
  int64_t decode_context_tokens = 0;
  bool operator==(const BackendLoad&) const = default;
};

struct BackendState {
  std::string name;
  std::vector<std::string> models;  // served models; empty = any
  std::string pool;                 // the tenants' pool it belongs to
  bool present = true;              // false once removed (ids are never reused)
  bool healthy = true;
  bool draining = false;
  int64_t kv_capacity_tokens = 0;
  KvEventState kv_events = KvEventState::kNone;

  // The router's own accounting of requests it dispatched here.
  int64_t in_flight = 0;                   // dispatched, not finished or failed
  int64_t outstanding_prefill_tokens = 0;  // predicted uncached prompt tokens, no first token yet
  // When the outstanding prefill is expected to be done: a virtual finish time that each dispatch
  // advances by its uncached tokens / prefill_tokens_per_s from max(now, itself), and each first
  // token pulls back to at most now + outstanding / rate (now, when none is left). Lets a policy
  // tell a prefill about to finish from one just started. Meaningful while outstanding > 0.
  TimePoint prefill_done_at{};
  int64_t running_decodes = 0;        // first token seen, not finished
  int64_t decode_context_tokens = 0;  // Σ (prompt + max_tokens) of running decodes
  int64_t dispatched_total = 0;
  int64_t prefill_tokens_total = 0;  // Σ predicted uncached prompt tokens dispatched

  // What the other gateway replicas in front of the fleet have here, as they last reported it
  // (placement gossip, Router::SetPeerLoad); zero without peers. A policy that prices queueing
  // counts it with its own: at N replicas, its own accounting is about 1/N of the backend's load.
  BackendLoad peers;
  BackendLoad own_load() const {
    return {.in_flight = in_flight,
            .outstanding_prefill_tokens = outstanding_prefill_tokens,
            .running_decodes = running_decodes,
            .decode_context_tokens = decode_context_tokens};
  }

  std::optional<EngineMetricsSample> metrics;

  // Online estimate of uncached prompt tokens computed per second, learned from observed TTFTs
  // (see router.h); starts at RouterOptions::initial_prefill_tokens_per_s. Until its first sample
  // it follows the median of the backends that have one: a fleet faster than the prior would
  // otherwise make the backends a policy tried first look faster than the others, which, priced
  // slower, got no request at light load and so never learned.
  double prefill_tokens_per_s = 0;
  int64_t prefill_rate_samples = 0;

  // True if new requests may be sent here.
  bool Eligible() const { return present && healthy && !draining; }
  // True if `model` is in `models`, or `models` is empty (any model), or `model` is empty: a
  // request that names no model asks for the server's default one (the OpenAI request model
  // makes `model` optional, as vLLM does), which every backend has.
  bool Serves(std::string_view model) const;
  // True if `pools` is empty (any pool) or holds this backend's pool.
  bool InPools(std::span<const std::string> pools) const;
};

class FleetView {
 public:
  std::span<const BackendState> backends() const { return backends_; }
  const BackendState& backend(BackendId id) const { return backends_[id]; }
  size_t size() const { return backends_.size(); }

  // Mutable access for the Router that owns this view.
  BackendState& mutable_backend(BackendId id) { return backends_[id]; }
  BackendId Add(BackendState state);

 private:
  std::vector<BackendState> backends_;
};

}  // namespace warmroute::routing
