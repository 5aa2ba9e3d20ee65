// When the gateway compares a backend's token ids with its own (the parity self-test: the probe
// and its judgement are parity_probe.h), and what it makes of the outcomes, without I/O: the
// decisions of the prober (parity_prober.h), which performs the exchanges and reports back.
//
// A check concerns one (backend, model) pair: a backend that is up and serves a model configured
// with a tokenizer. It runs when the pair first appears (the backend joined, came back after
// being down, or began serving the model), then every `interval` (0: only then); after a check
// that failed (no answer, another status than 200 or 404), again after kParityRetry.
// At most one check per pair is outstanding. A pair that disappears is forgotten once its check
// is done, so a backend that comes back is checked again at once.
//
// Verdicts: a mismatch switches the model to approximate keys (ModelOk is false while any of its
// pairs' last verdict is a mismatch) until a later check of that pair matches (or the pair is
// gone). A 404 means the backend has no /tokenize: it is neither a match nor a mismatch.
// Each report returns what to log, once per change of a pair's state, never per check:
//   kMismatch     the pair now mismatches (log the first difference loudly)
//   kMatchAgain   it matches after a mismatch
//   kNoEndpoint   it has no /tokenize (noted once)
//   kFailed       its check failed after having worked (or the first time)
//
// Usage (the driver, once per tick):
//   std::vector<size_t> start = schedule.Tick(now, pairs);
//   ... check pairs[i] for each i, then:
//   switch (schedule.OnDone(backend, model, verdict, now, interval)) { ... log ... }
//   model->set_parity_ok(schedule.ModelOk(model->name()));
//
// Thread-safety: none; one owner (the prober's io_context thread) calls every method.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/clock.h"
#include "gateway/keys/parity_probe.h"

namespace warmroute::gateway {

inline constexpr std::chrono::seconds kParityRetry{10};

// A (backend, model) pair to check. `backend` is the backend's name (unique in the fleet).
// `identity` tells one configuration of the model from another (its ModelKeying's address): a
// pair whose identity changed (a reload gave the model other files) starts afresh once its check
// is done.
struct ParityPair {
  std::string_view backend;
  std::string_view model;
  const void* identity = nullptr;
};

enum class ParityChange { kNone, kMismatch, kMatchAgain, kNoEndpoint, kFailed };

class ParitySchedule {
 public:
  ParitySchedule() = default;
  ParitySchedule(const ParitySchedule&) = delete;
  ParitySchedule& operator=(const ParitySchedule&) = delete;

  // The pairs (indices into `pairs`, the present ones) whose check starts now; they are
  // outstanding until reported done.
  std::vector<size_t> Tick(TimePoint now, std::span<const ParityPair> pairs);

  // The check of (backend, model) ended with `verdict`; the next is due `interval` later (0:
  // only when the pair appears again), or kParityRetry after a failure. REQUIRES: it is
  // outstanding.
  ParityChange OnDone(std::string_view backend, std::string_view model, ParityVerdict verdict,
                      TimePoint now, std::chrono::milliseconds interval);

  // False while some pair of `model` last mismatched.
  bool ModelOk(std::string_view model) const;
  size_t tracked() const { return states_.size(); }

 private:
  struct State {
    const void* identity = nullptr;
    TimePoint next{};
    bool checking = false;
    std::optional<ParityVerdict> last;  // the last match, mismatch or no_endpoint
    bool failing = false;               // the last check failed
    uint64_t seen_in_tick = 0;
  };
  using Key = std::pair<std::string, std::string>;  // backend, model

  uint64_t ticks_ = 0;
  absl::flat_hash_map<Key, State> states_;
};

}  // namespace warmroute::gateway
