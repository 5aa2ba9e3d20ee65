// One backend's KV-event feed: its publishers' messages (one stream per data-parallel rank)
// through EventStream → DecodeEventBatch → BlockIndexWriter into a routing::Router, and the
// replay requests the caller must send. Both the gateway's ZMQ subscriber and the simulator
// drive it.
//
// Sans-I/O, in two phases so that a caller can keep its router lock short:
//   1. Feed (no router): OnLive / OnLiveFrames, OnReplayed / OnReplayFrames, Tick, Clear. The
//      stream decides; every message it hands out is decoded here (the expensive part). Results
//      accumulate as pending steps.
//   2. ApplyTo(router): performs the pending steps in order (the writer reads
//      Router::attribution(), so this is the part to run under the router's lock): index
//      changes (ApplyIndexUpdates, ClearIndex via a kClear update), then SetKvEventState — kPrecise
//      when every rank's stream is precise, else kUncertain.
// Phase 1 copies the payloads it keeps (into reused buffers), so the caller's frames need not
// outlive the call. TakeReplayRequests() lists what to send to each rank's replay endpoint (the
// 8-byte big-endian start, EncodeReplayRequest).
//
// What counts as malformed (counted, dropped, never fatal; the rank's stream rebuilds, as no
// replay repairs a message it cannot read): a live message without exactly 3 frames (topic,
// seq, payload), a replay reply without exactly 2 (seq, payload), a sequence frame not 8 bytes,
// an undecodable payload, a batch whose data_parallel_rank is set and is not this rank's, an
// event whose block size is not the configured one. last_error() keeps the latest reason, and
// error_transitions() counts the transitions from "last message fine" to "malformed" per rank,
// so that the caller logs once per transition rather than once per frame.
//
// Data-parallel ranks, two layouts (one writer either way: it keeps a map per slice):
//   - a slice per rank (`rank_slices`: rank r's BackendId, when the router addresses each rank
//     as its own target — the gateway's rank targets): rank r's events change only its own
//     slice and set only its own KvEventState, and a rank's clear (restart, loss,
//     AllBlocksCleared) clears only its slice; Clear() (a health flap) clears every rank's.
//     An engine restart restarts every rank's numbering, so each rank's stream clears its own.
//   - one shared slice (`rank_slices` empty: the router addresses the backend and the engine's
//     balancer picks the rank): a rank's stream clearing the slice takes the other ranks'
//     blocks with it, so their streams are cleared too (EventStream::Clear: uncertain until
//     each rank's history is replayed from seq 0, or rebuilding without a replay endpoint) — an
//     under-prediction, never a stale hit. A rank's AllBlocksCleared makes only that rank's
//     stream complete (MarkComplete), and the other ranks replay only from their own latest
//     AllBlocksCleared on (EventStream::ClearFrom): from seq 0 each rank's replay would bring
//     back its own AllBlocksCleared, clearing the slice and the other ranks' streams again, for
//     ever.
//
// Counters (counters()): messages applied (live or replayed), applied from a replay,
// duplicates, malformed, missed for good; resets by reason: restart (a sequence went back),
// clear (the engine's AllBlocksCleared, or Clear() from the caller: a health flap), rebuild (a
// loss: a gap not repaired, a malformed message); and the engine timestamps (EventBatch::ts,
// seconds since the epoch) of the batches the last ApplyTo applied, for the caller's lag.
//
// Usage (the simulator, or any single-threaded owner):
//   BackendEventFeed feed(backend, {.block_size = 16, .stream = {.replay_configured = true}});
//   feed.OnLive(seq, payload, clock.Now());
//   feed.ApplyTo(router);
//   for (const ReplayRequest& r : feed.TakeReplayRequests()) send(r.rank,
//   EncodeReplayRequest(r.from_seq));
//   ... feed.Tick(clock.Now()); feed.ApplyTo(router);   periodically
//
// Thread-safety: none; one owner. ApplyTo's router must be accessed exclusively meanwhile.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "core/kv_events/block_index_writer.h"
#include "core/kv_events/event_decoder.h"
#include "core/kv_events/event_stream.h"
#include "core/routing/index_updates.h"
#include "core/routing/router.h"

namespace warmroute::kv_events {

struct BackendEventFeedOptions {
  int block_size = 16;  // the engines' block size (= the routing key's block_tokens)
  int dp_ranks = 1;     // publishers (data-parallel ranks) of the backend: ranks 0..dp_ranks-1
  EventStreamOptions stream{};
  size_t max_blocks_per_backend = size_t{1} << 22;
  // Empty: the ranks share the backend's slice. Else dp_ranks ids, rank r's events feeding
  // rank_slices[r]'s slice (see "Data-parallel ranks" above).
  std::vector<routing::BackendId> rank_slices{};
};

struct FeedCounters {
  int64_t applied = 0;   // messages applied, live or replayed
  int64_t replayed = 0;  // of which from a replay reply
  int64_t duplicates = 0;
  int64_t malformed = 0;
  int64_t missed = 0;  // sequence numbers lost for good
  int64_t restarts = 0;
  int64_t clears = 0;
  int64_t rebuilds = 0;
  int64_t replays_requested = 0;
};

struct ReplayRequest {
  int rank = 0;
  uint64_t from_seq = 0;
};

// The frame a replay endpoint (vLLM's, SGLang's, the emulator's ROUTER) expects: the first
// wanted sequence number, 8 bytes big-endian.
std::string EncodeReplayRequest(uint64_t from_seq);

class BackendEventFeed {
 public:
  BackendEventFeed(routing::BackendId backend, BackendEventFeedOptions options);
  BackendEventFeed(const BackendEventFeed&) = delete;
  BackendEventFeed& operator=(const BackendEventFeed&) = delete;

  // Phase 1. REQUIRES: 0 <= rank < dp_ranks.
  // A live message already split into its sequence number and payload.
  void OnLive(uint64_t seq, std::string_view payload, TimePoint now, int rank = 0);
  // A live ZMQ message as received: topic, 8-byte sequence, payload.
  void OnLiveFrames(std::span<const std::string_view> frames, TimePoint now, int rank = 0);
  // One replay reply: (seq, payload), seq kEndOfReplay ending the replay.
  void OnReplayed(uint64_t seq, std::string_view payload, TimePoint now, int rank = 0);
  void OnReplayFrames(std::span<const std::string_view> frames, TimePoint now, int rank = 0);
  // Replay timeouts, ends of rebuilds, for every rank.
  void Tick(TimePoint now);
  // The backend's slice (every rank's, with rank_slices) can no longer be trusted (a health flap:
  // the engine may have restarted unseen): every rank's stream clears, then replays its history
  // from seq 0 (or rebuilds, without a replay endpoint).
  void Clear(TimePoint now);

  // Phase 2: performs what phase 1 left pending, in order, on `router`.
  void ApplyTo(routing::Router& router);
  // Replay requests made since the last call, in order.
  std::vector<ReplayRequest> TakeReplayRequests();

  routing::BackendId backend() const { return backend_; }
  // The slice rank `rank`'s events change: its own with rank_slices, else the backend's.
  routing::BackendId slice_of(int rank) const {
    return separate() ? options_.rank_slices[static_cast<size_t>(rank)] : backend_;
  }
  int dp_ranks() const { return static_cast<int>(ranks_.size()); }
  // The backend's state: kPrecise when every rank's stream is precise; else the least certain
  // rank's state (kStarting before kAwaitingReplay before kRebuilding).
  StreamState state() const;
  StreamState rank_state(int rank) const {
    return ranks_[static_cast<size_t>(rank)].stream.state();
  }
  // Messages of `rank` applied (live or replayed): counters().applied is their sum.
  int64_t rank_applied(int rank) const { return ranks_[static_cast<size_t>(rank)].applied; }
  bool uncertain() const { return state() != StreamState::kPrecise; }
  const FeedCounters& counters() const { return counters_; }
  const WriterCounters& writer_counters() const { return writer_.counters(); }
  // Engine blocks mapped, over every slice of the backend.
  size_t blocks() const;
  // The latest malformed input's reason (empty: none yet).
  const std::string& last_error() const { return last_error_; }
  // Transitions into "malformed" (a malformed message after a good one, or the first).
  int64_t error_transitions() const { return error_transitions_; }
  // EventBatch::ts of each batch the last ApplyTo applied.
  std::span<const double> applied_batch_ts() const { return applied_ts_; }

 private:
  struct Rank {
    explicit Rank(const EventStreamOptions& options) : stream(options) {}
    EventStream stream;
    bool failing = false;  // the last message of this rank was malformed
    int64_t applied = 0;   // messages applied
    // The message after the rank's latest applied AllBlocksCleared (0: none seen since any
    // rank's stream last started over, which may be the engine restarting): the rank's cache
    // holds only what it stored from there, so a clear caused by another rank replays this
    // rank's history from there.
    uint64_t history_from = 0;
  };
  struct Step {
    enum class Kind : uint8_t { kClear, kApply } kind;
    int rank;
    size_t batch;   // kApply: index into batches_
    uint64_t seq;   // kApply: the message's sequence number
    bool replayed;  // kApply: the message came in a replay reply
  };
  struct Pending {
    std::string payload;  // a copy: the batch points into it
    EventBatch batch;
  };

  // Queues the stream's actions of `rank`; `replayed_seq`: the message a replay reply carried
  // (the others are live or buffered ones).
  void Perform(int rank, const StreamActions& actions, uint64_t replayed_seq, TimePoint now);
  void Malformed(int rank, std::string reason, TimePoint now);
  void Fine(int rank) { ranks_[static_cast<size_t>(rank)].failing = false; }
  // One rank's stream clears (its kClearSlice being a clear the caller queued); its replay
  // request, if any, is queued.
  void ClearRank(int rank, uint64_t from_seq, TimePoint now);
  // A rank's clear clears the shared slice: the other ranks' streams clear too.
  void ClearOtherRanks(int rank, TimePoint now);
  bool separate() const { return !options_.rank_slices.empty(); }
  // Bookkeeping of a stream's counters before and after a call (restarts, rebuilds, ...).
  void CountStream(const StreamCounters& before, const StreamCounters& after);

  routing::BackendId backend_;
  BackendEventFeedOptions options_;
  std::vector<Rank> ranks_;
  BlockIndexWriter writer_;
  std::vector<Step> steps_;
  std::vector<Pending> batches_;  // pool, reused; the first `used_batches_` belong to steps_
  size_t used_batches_ = 0;
  TimePoint pending_now_{};  // phase 1's latest time, for malformed batches found in phase 2
  std::vector<ReplayRequest> replay_requests_;
  routing::IndexUpdates updates_;
  std::vector<double> applied_ts_;
  FeedCounters counters_;
  std::string last_error_;
  int64_t error_transitions_ = 0;
};

}  // namespace warmroute::kv_events
