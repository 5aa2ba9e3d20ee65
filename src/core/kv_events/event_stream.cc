#include "core/kv_events/event_stream.h"

#include <utility>

namespace warmroute::kv_events {

std::string_view StreamStateName(StreamState state) {
  switch (state) {
    case StreamState::kStarting:
      return "starting";
    case StreamState::kPrecise:
      return "precise";
    case StreamState::kAwaitingReplay:
      return "awaiting_replay";
    case StreamState::kRebuilding:
      return "rebuilding";
  }
  return "unknown";
}

EventStream::EventStream(EventStreamOptions options) : options_(options) {}

void EventStream::Apply(uint64_t seq, std::string_view payload, StreamActions& out) {
  out.push_back({.kind = StreamAction::Kind::kApply, .seq = seq, .payload = payload});
  expected_ = seq + 1;
  ++counters_.applied;
}

void EventStream::Rebuild(TimePoint now, StreamActions& out) {
  out.push_back({.kind = StreamAction::Kind::kClearSlice, .seq = 0, .payload = {}});
  ++counters_.clears;
  ++counters_.rebuilds;
  state_ = StreamState::kRebuilding;
  rebuild_since_ = now;
}

void EventStream::MaybePromote(TimePoint now) {
  if (state_ == StreamState::kRebuilding && now - rebuild_since_ >= options_.rebuild_period) {
    state_ = StreamState::kPrecise;
  }
}

void EventStream::Drain(StreamActions& out) {
  while (!buffer_.empty() && buffer_.front().seq <= expected_) {
    Buffered& front = buffer_.front();
    buffered_bytes_ -= front.payload.size();
    if (front.seq < expected_) {
      ++counters_.duplicates;
    } else {
      released_.push_back(std::move(front.payload));
      Apply(front.seq, released_.back(), out);
    }
    buffer_.pop_front();
  }
}

void EventStream::GiveUp(TimePoint now, StreamActions& out) {
  until_end_ = false;
  ++counters_.replays_failed;
  Rebuild(now, out);
  // The buffered messages follow the gap; applied after the clear they only add what the engine
  // stored since (and remove what it dropped since).
  while (!buffer_.empty()) {
    Buffered& front = buffer_.front();
    if (front.seq > expected_)
      counters_.missed_messages += static_cast<int64_t>(front.seq - expected_);
    released_.push_back(std::move(front.payload));
    Apply(front.seq, released_.back(), out);
    buffer_.pop_front();
  }
  buffered_bytes_ = 0;
}

void EventStream::Buffer(uint64_t seq, std::string_view payload, TimePoint now,
                         StreamActions& out) {
  if (buffer_.size() + 1 > options_.max_buffered_messages ||
      buffered_bytes_ + payload.size() > options_.max_buffered_bytes) {
    GiveUp(now, out);
    if (seq > expected_) counters_.missed_messages += static_cast<int64_t>(seq - expected_);
    Apply(seq, payload, out);
    return;
  }
  buffer_.push_back({.seq = seq, .payload = std::string(payload)});
  buffered_bytes_ += payload.size();
  ++counters_.buffered;
}

void EventStream::AwaitHistory(bool until_end, TimePoint now, StreamActions& out,
                               uint64_t from_seq) {
  expected_ = from_seq;
  resume_ = StreamState::kPrecise;
  state_ = StreamState::kAwaitingReplay;
  until_end_ = until_end;
  deadline_ = now + options_.replay_timeout;
  ++counters_.replays_requested;
  out.push_back({.kind = StreamAction::Kind::kRequestReplay, .seq = from_seq, .payload = {}});
}

void EventStream::ReplayFromStart(uint64_t seq, std::string_view payload, TimePoint now,
                                  StreamActions& out) {
  AwaitHistory(/*until_end=*/false, now, out);
  Buffer(seq, payload, now, out);
}

void EventStream::Restart(uint64_t seq, std::string_view payload, TimePoint now,
                          StreamActions& out) {
  ++counters_.resets;
  buffer_.clear();
  buffered_bytes_ = 0;
  out.push_back({.kind = StreamAction::Kind::kClearSlice, .seq = 0, .payload = {}});
  ++counters_.clears;
  if (seq == 0) {
    state_ = StreamState::kPrecise;  // the new engine's whole history follows
  } else if (options_.replay_configured) {
    ReplayFromStart(seq, payload, now, out);
    return;
  } else {
    ++counters_.rebuilds;
    state_ = StreamState::kRebuilding;
    rebuild_since_ = now;
  }
  Apply(seq, payload, out);
}

StreamActions EventStream::OnLive(uint64_t seq, std::string_view payload, TimePoint now) {
  BeginCall();
  StreamActions out;
  if (state_ == StreamState::kStarting) {
    if (seq == 0) {
      state_ = StreamState::kPrecise;
    } else if (options_.replay_configured) {
      ReplayFromStart(seq, payload, now, out);
      return out;
    } else {
      state_ = StreamState::kRebuilding;
      rebuild_since_ = now;
    }
    Apply(seq, payload, out);
    return out;
  }
  if (seq + 1 == expected_) {
    ++counters_.duplicates;
    return out;
  }
  const bool awaiting = state_ == StreamState::kAwaitingReplay;
  if (seq < expected_ || (awaiting && !buffer_.empty() && seq <= buffer_.back().seq)) {
    Restart(seq, payload, now, out);
    return out;
  }
  if (awaiting) {
    if (seq == expected_) {  // the gap closed by itself
      Apply(seq, payload, out);
      Drain(out);
      if (buffer_.empty()) state_ = resume_;
    } else {
      Buffer(seq, payload, now, out);
    }
    return out;
  }
  if (seq > expected_) {
    ++counters_.gaps;
    if (!options_.replay_configured) {
      counters_.missed_messages += static_cast<int64_t>(seq - expected_);
      Rebuild(now, out);
      Apply(seq, payload, out);
      return out;
    }
    resume_ = state_;
    state_ = StreamState::kAwaitingReplay;
    until_end_ = false;
    deadline_ = now + options_.replay_timeout;
    ++counters_.replays_requested;
    out.push_back({.kind = StreamAction::Kind::kRequestReplay, .seq = expected_, .payload = {}});
    Buffer(seq, payload, now, out);
    return out;
  }
  Apply(seq, payload, out);
  MaybePromote(now);
  return out;
}

StreamActions EventStream::OnReplayed(uint64_t seq, std::string_view payload, TimePoint now) {
  BeginCall();
  StreamActions out;
  if (state_ != StreamState::kAwaitingReplay || seq < expected_) {
    ++counters_.duplicates;  // already applied, or a replay we no longer wait for
    return out;
  }
  if (seq > expected_) {
    // The publisher's replay buffer no longer has the missing messages: the slice is rebuilt,
    // and the rest of the replay still fills the buffer's holes, if any.
    counters_.missed_messages += static_cast<int64_t>(seq - expected_);
    ++counters_.replays_failed;
    Rebuild(now, out);
    resume_ = StreamState::kRebuilding;
    state_ = StreamState::kAwaitingReplay;
    Apply(seq, payload, out);
    Drain(out);
    if (buffer_.empty() && !until_end_) state_ = resume_;
    return out;
  }
  Apply(seq, payload, out);
  // Buffered live messages continuing the history end Clear's replay too: it has caught up.
  if (!buffer_.empty()) until_end_ = false;
  Drain(out);
  if (buffer_.empty() && !until_end_) {
    ++counters_.replays_completed;
    state_ = resume_;
    MaybePromote(now);
  }
  return out;
}

StreamActions EventStream::OnReplayEnd(TimePoint now) {
  BeginCall();
  StreamActions out;
  if (state_ != StreamState::kAwaitingReplay) return out;
  if (until_end_ && buffer_.empty()) {
    // Clear's replay from seq 0 ended with the history applied in order (none at all: the engine
    // has published nothing since it started, so it stores nothing and the empty slice is exact),
    // or, when the publisher no longer held its start, the rebuild goes on.
    until_end_ = false;
    if (resume_ == StreamState::kPrecise) ++counters_.replays_completed;
    state_ = resume_;
    MaybePromote(now);
    return out;
  }
  until_end_ = false;
  GiveUp(now, out);
  return out;
}

StreamActions EventStream::Tick(TimePoint now) {
  BeginCall();
  StreamActions out;
  if (state_ == StreamState::kAwaitingReplay && now >= deadline_) GiveUp(now, out);
  MaybePromote(now);
  return out;
}

StreamActions EventStream::OnMalformed(TimePoint now) {
  BeginCall();
  StreamActions out;
  ++counters_.malformed;
  if (state_ == StreamState::kAwaitingReplay) {
    GiveUp(now, out);
  } else {
    Rebuild(now, out);
  }
  return out;
}

StreamActions EventStream::Clear(TimePoint now) { return ClearFrom(0, now); }

StreamActions EventStream::ClearFrom(uint64_t from_seq, TimePoint now) {
  BeginCall();
  StreamActions out;
  buffer_.clear();
  buffered_bytes_ = 0;
  out.push_back({.kind = StreamAction::Kind::kClearSlice, .seq = 0, .payload = {}});
  ++counters_.clears;
  if (state_ == StreamState::kStarting) return out;
  if (options_.replay_configured) {
    // The engine's history from seq 0 (or from its last AllBlocksCleared) restores the slice
    // exactly (or, empty, shows a fresh engine, or one that stored nothing since); a history the
    // publisher no longer holds whole rebuilds, as after any gap.
    AwaitHistory(/*until_end=*/true, now, out, from_seq);
    return out;
  }
  state_ = StreamState::kRebuilding;
  rebuild_since_ = now;
  return out;
}

void EventStream::MarkComplete() {
  if (state_ == StreamState::kRebuilding || state_ == StreamState::kStarting) {
    state_ = StreamState::kPrecise;
  }
}

}  // namespace warmroute::kv_events
