// vLLM's `--kv-events-config` JSON (vllm/config/kv_events.py, KVEventsConfig), read for
// `warmroute engine` so that the emulator starts from the same option text as vLLM:
//
//   {"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:5557",
//    "replay_endpoint": "tcp://*:5558", "topic": "kv", "buffer_steps": 10000}
//
// Fields and defaults are vLLM's: enable_kv_cache_events false; publisher "zmq" when events are
// enabled, else "null"; endpoint "tcp://*:5557"; replay_endpoint null (no replay); buffer_steps
// 10000; hwm 100000; max_queue_size 100000; topic "". Events are published only when
// enable_kv_cache_events is true and publisher is "zmq" (vLLM's EventPublisherFactory returns its
// NullEventPublisher otherwise). max_queue_size bounds vLLM's queue between the scheduler and its
// publisher thread; the emulator publishes from the step loop without a queue, so the value is
// checked and otherwise unused.
//
// Stricter than vLLM where vLLM would fail later or silently: unknown keys are errors (a
// misspelt "replay_endpiont" would otherwise leave replay off), buffer_steps and hwm must be
// >= 0 (vLLM's deque and zmq reject negatives when the publisher starts), and endpoints must be
// tcp://HOST:PORT (PORT a number or "*"), ipc://PATH or inproc://NAME. Every error is
// InvalidArgument naming the key: "kv-events-config: 'buffer_steps' must be ...".
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "emulator/fleet.h"

namespace warmroute::emulator {

struct KvEventsConfig {
  bool enable_kv_cache_events = false;
  std::string publisher;  // "zmq" or "null"
  std::string endpoint = "tcp://*:5557";
  std::string replay_endpoint;  // empty: null, no replay
  int64_t buffer_steps = 10'000;
  int64_t hwm = 100'000;
  int64_t max_queue_size = 100'000;
  std::string topic;

  // Whether vLLM would publish events with this config.
  bool publishes() const { return enable_kv_cache_events && publisher == "zmq"; }
};

absl::StatusOr<KvEventsConfig> ParseKvEventsConfig(std::string_view json);

// Parses `json` and sets the fleet's KV-event options from it (kv_events off unless it
// publishes; the encoding is left alone: vLLM's config has none). Replica i binds endpoint's
// port + i and replay_endpoint's port + i, as vLLM offsets both by the data-parallel rank.
absl::Status ApplyKvEventsConfig(std::string_view json, FleetOptions& fleet);

}  // namespace warmroute::emulator
