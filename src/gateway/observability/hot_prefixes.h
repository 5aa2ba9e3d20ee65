// The hottest prefixes the gateway routes, by hashed id (never text), for autoscalers and
// operators: which shared prefix carries the load, and how much of it.
//
// A prefix's id is the chain hash of its first kIdBlocks blocks of the routing key (64
// characters each: the first ~1,000 characters, typically a system prompt or tool preamble);
// shorter prompts use their last full block. Counting is Space-Saving (Metwally et al., 2005)
// over `capacity` counters: a new id replaces the smallest counter and inherits its count, so
// any id whose true count exceeds total/capacity is kept, and counts are over-estimated by at
// most the replaced minimum (reported as `error`). Counts cover fixed windows of `window`, from
// the HotPrefixes' construction; the figures reported are the last complete window's (requests/s
// and prompt tokens/s).
//
// A request recorded with the backend it went to also counts for that backend as one of the
// prefix's homes: each counter keeps its kHomes busiest backends (a new one replaces the least
// busy, as Space-Saving does with ids), and Top reports them busiest first.
//
// Each thread that records counts in its own summary (common/per_thread.h), so that the gateway's
// workers share nothing per request; Top merges the threads' summaries of the last window as
// mergeable summaries do (Agarwal et al., 2012): counts add up, and an id missing from a full
// summary gets that summary's smallest count added to its count and to its error, so counts stay
// over-estimates and count - error a lower bound. A record that races the end of a window (its
// time read before, its count made after Top closed that window) counts in the next one.
//
// Usage:
//   HotPrefixes hot(clock, {.capacity = 1024, .window = std::chrono::seconds(10)});
//   hot.Record(key, prompt_tokens);
//   for (const HotPrefix& p : hot.Top(10)) ... p.id, p.requests_per_s ...
//
// Thread-safety: thread-safe. Record takes only its own thread's summary's mutex.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/clock.h"
#include "common/per_thread.h"
#include "core/routing/prefix_index.h"
#include "core/routing/prefix_key.h"

namespace warmroute::gateway {

struct HotPrefix {
  uint64_t id = 0;
  double requests_per_s = 0;
  double prompt_tokens_per_s = 0;
  double error_requests_per_s = 0;  // Space-Saving's over-estimate bound
  std::vector<routing::BackendId> homes;  // the backends that took it, busiest first
};

class HotPrefixes {
 public:
  static constexpr size_t kIdBlocks = 16;
  static constexpr size_t kHomes = 4;

  struct Options {
    size_t capacity = 1024;
    std::chrono::milliseconds window{10'000};
  };

  HotPrefixes(const Clock& clock, Options options);
  HotPrefixes(const HotPrefixes&) = delete;
  HotPrefixes& operator=(const HotPrefixes&) = delete;

  // Counts one request (no-op for a key without a full block).
  void Record(const routing::PrefixKey& key, int64_t prompt_tokens);
  // The same with the key's IdOf computed beforehand (0: nothing is recorded), and the backend
  // the request went to when there is one.
  void Record(uint64_t id, int64_t prompt_tokens,
              std::optional<routing::BackendId> home = std::nullopt);

  // The `n` busiest prefixes of the last complete window, busiest first.
  std::vector<HotPrefix> Top(size_t n);

  // The id Record uses for `key` (0: none).
  static uint64_t IdOf(const routing::PrefixKey& key);

 private:
  struct Home {
    routing::BackendId backend = 0;
    double requests = 0;  // 0: an empty slot
  };
  struct Counter {
    double requests = 0;
    double tokens = 0;
    double error = 0;
    std::array<Home, kHomes> homes{};
  };
  // Adds `requests` for `backend` to `homes`, replacing the least busy when all are taken.
  static void AddHome(std::array<Home, kHomes>& homes, routing::BackendId backend,
                      double requests);
  using Counters = absl::flat_hash_map<uint64_t, Counter>;
  // One thread's Space-Saving summaries: of the window it counts in, and of the one before.
  struct Shard {
    int64_t window = 0;  // `current` counts this window (numbered from the construction)
    Counters current;
    int64_t last_window = -1;  // `last` holds this window's counts (-1: none yet)
    Counters last;
  };

  int64_t WindowOf(TimePoint t) const;
  // Moves `shard` on to `window` (no-op for an earlier one).
  static void Advance(Shard& shard, int64_t window);
  void Count(Counters& counters, uint64_t id, int64_t prompt_tokens,
             std::optional<routing::BackendId> home) const;

  const Clock& clock_;
  const Options options_;
  const TimePoint start_;
  PerThread<Shard> shards_;
  std::mutex mu_;                  // guards the two below
  int64_t merged_window_ = -1;     // the window merged_ was computed in (it reports the one before)
  std::vector<HotPrefix> merged_;  // sorted, busiest first
};

}  // namespace warmroute::gateway
