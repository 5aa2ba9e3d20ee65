// An engine's KV events (core/kv_events/) on their way into the index: decoded
// (DecodeSequence, DecodeEventBatch) and fed through a BackendEventFeed with two data-parallel
// ranks and a replay endpoint into a Router, with live messages in and out of order, replies to
// replays, clock ticks and clears, as the gateway's subscriber drives it. Malformed messages are
// counted and dropped, never fatal; a clear at the end leaves the backend no blocks.
//
// Input: records of [op, length (2 bytes, little-endian), payload]. op % 6: 0 a live message with
// the next sequence number, 1 one with a sequence number that jumps (a gap or a restart), 2 a
// replay reply, 3 a live message given as frames (split at NUL bytes), 4 a tick of op seconds,
// 5 a clear (a health flap). op / 6 % 2 is the rank.
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "core/kv_events/backend_event_feed.h"
#include "core/kv_events/event_decoder.h"
#include "core/routing/policy_registry.h"
#include "core/routing/router.h"
#include "fuzz_target.h"

namespace kv = warmroute::kv_events;
namespace routing = warmroute::routing;

WARMROUTE_FUZZ_TARGET(kv_events) {
  warmroute::ManualClock clock;
  routing::Router router(routing::MakePolicy("warmroute", {}).value(), {.tokens_per_block = 16},
                         clock, 1);
  const routing::BackendId backend = router.AddBackend({.name = "r0"});
  router.AddBackend({.name = "r1"});
  kv::BackendEventFeed feed(backend, {.block_size = 16, .dp_ranks = 2,
                                      .stream = {.replay_configured = true}});
  kv::EventBatch batch;
  uint64_t seq[2] = {0, 0};
  while (size > 0) {
    const uint8_t op = warmroute::fuzz::TakeByte(data, size);
    size_t length = warmroute::fuzz::TakeByte(data, size);
    length |= size_t{warmroute::fuzz::TakeByte(data, size)} << 8;
    length = std::min(length, size);
    const std::string payload(warmroute::fuzz::AsText(data, length));
    data += length;
    size -= length;
    const int rank = op / 6 % 2;
    const auto now = clock.Now();
    (void)kv::DecodeSequence(payload);
    (void)kv::DecodeEventBatch(payload, batch);
    switch (op % 6) {
      case 0:
        feed.OnLive(seq[rank]++, payload, now, rank);
        break;
      case 1:
        seq[rank] = (seq[rank] + op * 7919) % 1000;
        feed.OnLive(seq[rank]++, payload, now, rank);
        break;
      case 2:
        feed.OnReplayed(op / 12, payload, now, rank);
        break;
      case 3: {
        std::vector<std::string_view> frames;
        std::string_view rest = payload;
        for (size_t nul = rest.find('\0'); nul != std::string_view::npos; nul = rest.find('\0')) {
          frames.push_back(rest.substr(0, nul));
          rest.remove_prefix(nul + 1);
        }
        frames.push_back(rest);
        feed.OnLiveFrames(frames, now, rank);
        break;
      }
      case 4:
        clock.Advance(std::chrono::seconds(op));
        feed.Tick(clock.Now());
        break;
      default:
        feed.Clear(now);
        break;
    }
    feed.ApplyTo(router);
    (void)feed.TakeReplayRequests();
  }
  feed.Clear(clock.Now());  // a health flap: the backend's slice of the index is emptied
  feed.ApplyTo(router);
  FUZZ_CHECK(feed.blocks() == 0);
  return 0;
}
