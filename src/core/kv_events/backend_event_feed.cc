#include "core/kv_events/backend_event_feed.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"

namespace warmroute::kv_events {
namespace {
// Perform's replayed_seq when no message came from a replay reply (no message has this number).
constexpr uint64_t kNotReplayed = kEndOfReplay;
}  // namespace

std::string EncodeReplayRequest(uint64_t from_seq) {
  std::string frame(8, '\0');
  for (int i = 7; i >= 0; --i) {
    frame[static_cast<size_t>(i)] = static_cast<char>(from_seq & 0xff);
    from_seq >>= 8;
  }
  return frame;
}

BackendEventFeed::BackendEventFeed(routing::BackendId backend, BackendEventFeedOptions options)
    : backend_(backend),
      options_(options),
      writer_({.block_size = options.block_size,
               .max_blocks_per_backend = options.max_blocks_per_backend}) {
  const int ranks = options.dp_ranks < 1 ? 1 : options.dp_ranks;
  if (!options_.rank_slices.empty() && options_.rank_slices.size() != static_cast<size_t>(ranks)) {
    std::abort();  // a broken invariant: the caller builds one slice per rank
  }
  ranks_.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) ranks_.emplace_back(options.stream);
}

void BackendEventFeed::CountStream(const StreamCounters& before, const StreamCounters& after) {
  counters_.duplicates += after.duplicates - before.duplicates;
  counters_.malformed += after.malformed - before.malformed;
  counters_.missed += after.missed_messages - before.missed_messages;
  counters_.restarts += after.resets - before.resets;
  counters_.rebuilds += after.rebuilds - before.rebuilds;
  counters_.replays_requested += after.replays_requested - before.replays_requested;
}

void BackendEventFeed::Perform(int rank, const StreamActions& actions, uint64_t replayed_seq,
                               TimePoint now) {
  pending_now_ = now;
  // Copy every payload first: a later call on the stream (OnMalformed below) invalidates the
  // buffered payloads this list points to, and decoded batches point into their payload.
  const size_t first = used_batches_;
  for (const StreamAction& a : actions) {
    if (a.kind != StreamAction::Kind::kApply) continue;
    if (used_batches_ == batches_.size()) batches_.emplace_back();
    batches_[used_batches_].payload.assign(a.payload);
    ++used_batches_;
  }
  size_t next = first;
  for (const StreamAction& a : actions) {
    switch (a.kind) {
      case StreamAction::Kind::kClearSlice:
        steps_.push_back(
            {.kind = Step::Kind::kClear, .rank = rank, .batch = 0, .seq = 0, .replayed = false});
        // With a slice per rank, the rank's own slice is all this clears (each rank's stream
        // sees its own restart). Sharing one: the rank's stream started over (a restart, a
        // loss); a restart is the engine's, so every rank's numbering may have started over
        // too: their histories from seq 0.
        if (separate()) break;
        for (Rank& r : ranks_) r.history_from = 0;
        ClearOtherRanks(rank, now);
        break;
      case StreamAction::Kind::kRequestReplay:
        replay_requests_.push_back({.rank = rank, .from_seq = a.seq});
        break;
      case StreamAction::Kind::kApply: {
        Pending& p = batches_[next++];
        absl::Status status = DecodeEventBatch(p.payload, p.batch);
        if (status.ok() && dp_ranks() > 1 && p.batch.dp_rank.has_value() &&
            *p.batch.dp_rank != rank) {
          status = absl::InvalidArgumentError(absl::StrCat("data_parallel_rank ", *p.batch.dp_rank,
                                                           " on rank ", rank, "'s endpoint"));
        }
        if (status.ok()) {
          for (const Event& e : p.batch.events) {
            if (e.kind == EventKind::kBlockStored && e.block_size != options_.block_size) {
              status = absl::FailedPreconditionError(
                  absl::StrCat("the engine's block size ", e.block_size,
                               " is not the configured block_size ", options_.block_size));
              break;
            }
          }
        }
        if (!status.ok()) {
          Malformed(rank, absl::StrCat("message ", a.seq, ": ", status.message()), now);
          break;
        }
        Fine(rank);
        steps_.push_back({.kind = Step::Kind::kApply,
                          .rank = rank,
                          .batch = next - 1,
                          .seq = a.seq,
                          .replayed = a.seq == replayed_seq});
        break;
      }
    }
  }
}

void BackendEventFeed::Malformed(int rank, std::string reason, TimePoint now) {
  Rank& r = ranks_[static_cast<size_t>(rank)];
  if (!r.failing) ++error_transitions_;
  r.failing = true;
  last_error_ = dp_ranks() > 1 ? absl::StrCat("rank ", rank, ": ", reason) : std::move(reason);
  const StreamCounters before = r.stream.counters();
  StreamActions actions = r.stream.OnMalformed(now);
  CountStream(before, r.stream.counters());
  Perform(rank, actions, kNotReplayed, now);
}

void BackendEventFeed::ClearRank(int rank, uint64_t from_seq, TimePoint now) {
  EventStream& stream = ranks_[static_cast<size_t>(rank)].stream;
  const StreamCounters before = stream.counters();
  const StreamActions actions = stream.ClearFrom(from_seq, now);
  CountStream(before, stream.counters());
  for (const StreamAction& a : actions) {
    // Its kClearSlice is the clear already queued; a replay request goes out.
    if (a.kind == StreamAction::Kind::kRequestReplay) {
      replay_requests_.push_back({.rank = rank, .from_seq = a.seq});
    }
  }
}

void BackendEventFeed::ClearOtherRanks(int rank, TimePoint now) {
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (static_cast<int>(i) != rank) ClearRank(static_cast<int>(i), ranks_[i].history_from, now);
  }
}

void BackendEventFeed::OnLive(uint64_t seq, std::string_view payload, TimePoint now, int rank) {
  EventStream& stream = ranks_[static_cast<size_t>(rank)].stream;
  const StreamCounters before = stream.counters();
  StreamActions actions = stream.OnLive(seq, payload, now);
  CountStream(before, stream.counters());
  Perform(rank, actions, kNotReplayed, now);
}

void BackendEventFeed::OnLiveFrames(std::span<const std::string_view> frames, TimePoint now,
                                    int rank) {
  if (frames.size() != 3) {
    Malformed(rank,
              absl::StrCat("a live message of ", frames.size(),
                           " frames, not 3 (topic, sequence, payload)"),
              now);
    return;
  }
  absl::StatusOr<uint64_t> seq = DecodeSequence(frames[1]);
  if (!seq.ok()) {
    Malformed(rank, absl::StrCat("live sequence frame: ", seq.status().message()), now);
    return;
  }
  if (*seq == kEndOfReplay) {
    Malformed(rank, "live sequence number -1", now);
    return;
  }
  OnLive(*seq, frames[2], now, rank);
}

void BackendEventFeed::OnReplayed(uint64_t seq, std::string_view payload, TimePoint now, int rank) {
  EventStream& stream = ranks_[static_cast<size_t>(rank)].stream;
  const StreamCounters before = stream.counters();
  StreamActions actions =
      seq == kEndOfReplay ? stream.OnReplayEnd(now) : stream.OnReplayed(seq, payload, now);
  CountStream(before, stream.counters());
  Perform(rank, actions, seq, now);
}

void BackendEventFeed::OnReplayFrames(std::span<const std::string_view> frames, TimePoint now,
                                      int rank) {
  // A DEALER receives the ROUTER's reply after an empty delimiter frame; a REQ does not.
  if (frames.size() == 3 && frames[0].empty()) frames = frames.subspan(1);
  if (frames.size() != 2) {
    Malformed(
        rank,
        absl::StrCat("a replay reply of ", frames.size(), " frames, not 2 (sequence, payload)"),
        now);
    return;
  }
  absl::StatusOr<uint64_t> seq = DecodeSequence(frames[0]);
  if (!seq.ok()) {
    Malformed(rank, absl::StrCat("replay sequence frame: ", seq.status().message()), now);
    return;
  }
  OnReplayed(*seq, frames[1], now, rank);
}

void BackendEventFeed::Tick(TimePoint now) {
  for (size_t i = 0; i < ranks_.size(); ++i) {
    EventStream& stream = ranks_[i].stream;
    const StreamCounters before = stream.counters();
    StreamActions actions = stream.Tick(now);
    CountStream(before, stream.counters());
    Perform(static_cast<int>(i), actions, kNotReplayed, now);
  }
}

void BackendEventFeed::Clear(TimePoint now) {
  ++counters_.clears;
  // The engine may have restarted unseen: every rank's whole history, from seq 0.
  for (size_t i = 0; i < ranks_.size(); ++i) {
    ranks_[i].history_from = 0;
    ClearRank(static_cast<int>(i), 0, now);
  }
  const int slices = separate() ? dp_ranks() : 1;
  for (int r = 0; r < slices; ++r) {
    steps_.push_back(
        {.kind = Step::Kind::kClear, .rank = r, .batch = 0, .seq = 0, .replayed = false});
  }
}

size_t BackendEventFeed::blocks() const {
  if (!separate()) return writer_.blocks(backend_);
  size_t total = 0;
  for (routing::BackendId slice : options_.rank_slices) total += writer_.blocks(slice);
  return total;
}

void BackendEventFeed::ApplyTo(routing::Router& router) {
  applied_ts_.clear();
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step step = steps_[i];
    updates_.clear();
    const routing::BackendId slice = slice_of(step.rank);
    if (step.kind == Step::Kind::kClear) {
      writer_.Clear(slice, updates_);
      router.ApplyIndexUpdates(slice, updates_);
      continue;
    }
    const EventBatch& batch = batches_[step.batch].batch;
    absl::Status status = writer_.Apply(slice, batch, router.attribution(), updates_);
    if (!status.ok()) {
      // Phase 1 checked what the writer rejects; should it still reject a batch, it is dropped
      // as malformed and the slice rebuilt, like any unreadable message.
      Malformed(step.rank, std::string(status.message()), pending_now_);
      continue;  // Malformed queued a clear step, performed by this loop
    }
    router.ApplyIndexUpdates(slice, updates_);
    ++counters_.applied;
    ++ranks_[static_cast<size_t>(step.rank)].applied;
    if (step.replayed) ++counters_.replayed;
    applied_ts_.push_back(batch.ts);
    for (const Event& e : batch.events) {
      if (e.kind != EventKind::kAllBlocksCleared) continue;
      // The rank's cache is empty now, and the writer cleared its slice (the shared one: the
      // other ranks' blocks went with it).
      ++counters_.clears;
      ranks_[static_cast<size_t>(step.rank)].history_from = step.seq + 1;
      ranks_[static_cast<size_t>(step.rank)].stream.MarkComplete();
      if (!separate()) ClearOtherRanks(step.rank, pending_now_);
    }
  }
  steps_.clear();
  used_batches_ = 0;
  auto state_of = [](StreamState s) {
    return s == StreamState::kPrecise ? routing::KvEventState::kPrecise
                                      : routing::KvEventState::kUncertain;
  };
  if (!separate()) {
    router.SetKvEventState(backend_, state_of(state()));
    return;
  }
  for (int r = 0; r < dp_ranks(); ++r) router.SetKvEventState(slice_of(r), state_of(rank_state(r)));
}

std::vector<ReplayRequest> BackendEventFeed::TakeReplayRequests() {
  return std::exchange(replay_requests_, {});
}

StreamState BackendEventFeed::state() const {
  StreamState worst = StreamState::kPrecise;
  auto rank_of = [](StreamState s) {
    switch (s) {
      case StreamState::kStarting:
        return 3;
      case StreamState::kAwaitingReplay:
        return 2;
      case StreamState::kRebuilding:
        return 1;
      case StreamState::kPrecise:
        return 0;
    }
    return 0;
  };
  for (const Rank& r : ranks_) {
    if (rank_of(r.stream.state()) > rank_of(worst)) worst = r.stream.state();
  }
  return worst;
}

}  // namespace warmroute::kv_events
