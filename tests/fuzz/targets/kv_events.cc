// An engine's KV events (core/kv_events/) on their way into the index: decoded
// (DecodeSequence, DecodeEventBatch) and fed through two BackendEventFeeds with two data-parallel
// ranks and a replay endpoint into a Router — one whose ranks share a slice, one with a slice per
// rank (rank_slices, as the gateway's rank targets) — with live messages in and out of order,
// replies to replays, clock ticks and clears, as the gateway's subscriber drives them. Malformed
// messages are counted and dropped, never fatal; a clear at the end leaves no slice any block.
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

namespace {

// One record's operation on `feed` (see the input format above).
void Perform(kv::BackendEventFeed& feed, uint8_t op, int rank, const std::string& payload,
             uint64_t& seq, warmroute::ManualClock& clock) {
  const auto now = clock.Now();
  switch (op % 6) {
    case 0:
      feed.OnLive(seq++, payload, now, rank);
      break;
    case 1:
      seq = (seq + op * 7919) % 1000;
      feed.OnLive(seq++, payload, now, rank);
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
      feed.Tick(now);
      break;
    default:
      feed.Clear(now);
      break;
  }
}

}  // namespace

WARMROUTE_FUZZ_TARGET(kv_events) {
  warmroute::ManualClock clock;
  routing::Router router(routing::MakePolicy("warmroute", {}).value(), {.tokens_per_block = 16},
                         clock, 1);
  const routing::BackendId backend = router.AddBackend({.name = "r0"});
  router.AddBackend({.name = "r1"});
  const routing::BackendId rank0 = router.AddBackend({.name = "r2/rank0"});
  const routing::BackendId rank1 = router.AddBackend({.name = "r2/rank1"});
  kv::BackendEventFeed shared(
      backend, {.block_size = 16, .dp_ranks = 2, .stream = {.replay_configured = true}});
  kv::BackendEventFeed separate(rank0, {.block_size = 16,
                                        .dp_ranks = 2,
                                        .stream = {.replay_configured = true},
                                        .rank_slices = {rank0, rank1}});
  kv::BackendEventFeed* const feeds[] = {&shared, &separate};
  kv::EventBatch batch;
  uint64_t seq[2][2] = {{0, 0}, {0, 0}};  // by feed, by rank
  while (size > 0) {
    const uint8_t op = warmroute::fuzz::TakeByte(data, size);
    size_t length = warmroute::fuzz::TakeByte(data, size);
    length |= size_t{warmroute::fuzz::TakeByte(data, size)} << 8;
    length = std::min(length, size);
    const std::string payload(warmroute::fuzz::AsText(data, length));
    data += length;
    size -= length;
    const int rank = op / 6 % 2;
    (void)kv::DecodeSequence(payload);
    (void)kv::DecodeEventBatch(payload, batch);
    if (op % 6 == 4) clock.Advance(std::chrono::seconds(op));
    for (size_t f = 0; f < 2; ++f) {
      Perform(*feeds[f], op, rank, payload, seq[f][rank], clock);
      feeds[f]->ApplyTo(router);
      (void)feeds[f]->TakeReplayRequests();
    }
  }
  for (kv::BackendEventFeed* feed : feeds) {
    feed->Clear(clock.Now());  // a health flap: every slice of the backend is emptied
    feed->ApplyTo(router);
    FUZZ_CHECK(feed->blocks() == 0);
  }
  FUZZ_CHECK(router.index().entries(backend) == 0);
  FUZZ_CHECK(router.index().entries(rank0) + router.index().entries(rank1) == 0);
  return 0;
}
