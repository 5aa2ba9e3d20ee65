// The state of one subscribed KV-event endpoint (a backend, or one data-parallel rank of it)
// over its messages' sequence numbers: which messages to apply, in which order, when to ask for
// a replay, and when the backend's index slice can no longer be trusted.
//
// Sans-I/O: the caller receives the frames (live on the SUB socket, replayed from the ROUTER
// endpoint), passes each message's sequence number and payload here with its clock's time, and
// performs the returned actions in order:
//   kApply          decode and apply `payload` (message `seq`) to the backend's slice;
//   kRequestReplay  ask the replay endpoint for every message from `seq` on (vLLM and SGLang:
//                   send the 8-byte big-endian start; the replies are (seq, payload) pairs
//                   ended by seq -1, event_decoder.h kEndOfReplay → OnReplayEnd);
//   kClearSlice     clear the backend's slice (BlockIndexWriter::Clear) before what follows.
// A kApply's payload is the caller's own (the live or replayed message just passed) or a copy
// the stream buffered; either is valid until the next call on this stream.
//
// States (state(); every state but kPrecise is uncertain: the gateway treats the backend's
// matched depth as approximate, see Router):
//   kStarting        nothing received yet. The first message sets the sequence: seq 0 (the
//                    engine just started, its cache is empty) → kPrecise; else the engine held
//                    blocks published before we subscribed: with a replay endpoint, its whole
//                    history is asked for from seq 0 (kAwaitingReplay, resuming kPrecise: the
//                    publisher keeps its last 10,000 steps by default, so a young engine's
//                    history is all there), else → kRebuilding.
//   kPrecise         every message applied in order.
//   kAwaitingReplay  a gap: messages from `expected` on were lost (PUB drops at its high-water
//                    mark, or a reconnect). A replay is requested; later live messages are
//                    buffered (bounded: max_buffered_messages, max_buffered_bytes). When the
//                    replay fills the gap, the buffer is applied in order and the previous state
//                    resumes. The replay fails when it ends (or skips, because the publisher's
//                    replay buffer no longer has the missing messages) without filling the gap,
//                    after replay_timeout, or when the buffer overflows: then the slice is
//                    rebuilt, the buffered messages applied after the clear.
//   kRebuilding      the slice was cleared after a loss and is refilled from live events (it
//                    lacks what the engine stored before: under-predictions, never a stale hit).
//                    Becomes kPrecise after rebuild_period without a new loss, or at once when
//                    the engine reports its cache cleared (MarkComplete after an AllBlocksCleared).
// Clear (a health flap, a cache reset made through the gateway) empties the slice; with a replay
// endpoint it then asks for the engine's whole history from seq 0 (kAwaitingReplay, resuming
// kPrecise): a restarted engine's history is short, a flapping one's is still buffered unless it
// has published more than the publisher keeps (then the slice is rebuilt, as after any gap); a
// replay from seq 0 that ends with no message, none live having arrived, is an engine that has
// published nothing since it started, hence stores nothing: the empty slice is exact (kPrecise).
// Without a replay endpoint, Clear rebuilds.
// A gap without a configured replay endpoint rebuilds at once. A live sequence number below the
// expected one is an engine restart (vLLM and SGLang number from 0 per process): the slice is
// cleared and the stream restarts from it (from seq 0 by a replay, as when starting, when the
// first message seen of the new process is not seq 0 and a replay endpoint is configured); the same
// number as the last applied message, or a replayed message already applied, is a duplicate,
// ignored. A message the caller could not decode (OnMalformed) is a loss that no replay can repair:
// the slice is rebuilt.
//
// Usage:
//   EventStream stream({.replay_configured = true});
//   for (const StreamAction& a : stream.OnLive(seq, payload, clock.Now())) { ...perform a... }
//   ... stream.Tick(clock.Now()) periodically (replay timeout, rebuild period).
//
// Thread-safety: none; one owner.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "common/clock.h"

namespace warmroute::kv_events {

struct EventStreamOptions {
  bool replay_configured = false;
  Duration replay_timeout = std::chrono::seconds(2);
  size_t max_buffered_messages = 10'000;  // vLLM's replay buffer holds 10,000 steps
  size_t max_buffered_bytes = size_t{64} << 20;
  Duration rebuild_period = std::chrono::seconds(30);
};

enum class StreamState : uint8_t { kStarting, kPrecise, kAwaitingReplay, kRebuilding };
inline constexpr StreamState kStreamStates[] = {StreamState::kStarting, StreamState::kPrecise,
                                                StreamState::kAwaitingReplay,
                                                StreamState::kRebuilding};
// "starting", "precise", "awaiting_replay", "rebuilding" (logs, metrics' labels).
std::string_view StreamStateName(StreamState state);

struct StreamAction {
  enum class Kind : uint8_t { kApply, kRequestReplay, kClearSlice };
  Kind kind = Kind::kApply;
  uint64_t seq = 0;  // kApply: the message; kRequestReplay: the first missing one
  std::string_view payload;
};
using StreamActions = absl::InlinedVector<StreamAction, 2>;

struct StreamCounters {
  int64_t applied = 0;
  int64_t duplicates = 0;
  int64_t buffered = 0;
  int64_t malformed = 0;
  int64_t gaps = 0;
  int64_t missed_messages = 0;  // sequence numbers never applied (lost for good)
  int64_t replays_requested = 0;
  int64_t replays_completed = 0;
  int64_t replays_failed = 0;
  int64_t resets = 0;    // sequence went back (engine restart)
  int64_t clears = 0;    // kClearSlice actions (every cause)
  int64_t rebuilds = 0;  // entries into kRebuilding after a loss
};

class EventStream {
 public:
  explicit EventStream(EventStreamOptions options);

  StreamActions OnLive(uint64_t seq, std::string_view payload, TimePoint now);
  StreamActions OnReplayed(uint64_t seq, std::string_view payload, TimePoint now);
  StreamActions OnReplayEnd(TimePoint now);
  // Replay timeout and the end of a rebuild.
  StreamActions Tick(TimePoint now);
  // The caller could not decode message `seq` (already handed out in a kApply).
  StreamActions OnMalformed(TimePoint now);
  // A health flap (the engine may have restarted unseen) or /reset_prefix_cache: clears the
  // slice, then replays the engine's history from seq 0 when a replay endpoint is configured,
  // else rebuilds.
  StreamActions Clear(TimePoint now);
  // Clear, replaying from `from_seq` instead of 0: the message after the engine's latest
  // AllBlocksCleared that this stream applied, since the engine's cache holds only what it
  // stored after it (BackendEventFeed: another data-parallel rank cleared the shared slice;
  // replaying this rank's own AllBlocksCleared again would clear that rank's blocks in turn,
  // and each rank would clear the other's for ever). REQUIRES: from_seq <= the next expected.
  StreamActions ClearFrom(uint64_t from_seq, TimePoint now);
  // The caller applied an AllBlocksCleared: the slice is complete again (kRebuilding or
  // kStarting → kPrecise).
  void MarkComplete();

  StreamState state() const { return state_; }
  bool uncertain() const { return state_ != StreamState::kPrecise; }
  const StreamCounters& counters() const { return counters_; }
  size_t buffered_messages() const { return buffer_.size(); }

 private:
  struct Buffered {
    uint64_t seq;
    std::string payload;
  };
  void Apply(uint64_t seq, std::string_view payload, StreamActions& out);
  void Rebuild(TimePoint now, StreamActions& out);
  // Applies buffered messages that continue the sequence; drops those already applied.
  void Drain(StreamActions& out);
  // Replay failed: rebuild, then apply everything buffered in order.
  void GiveUp(TimePoint now, StreamActions& out);
  void Buffer(uint64_t seq, std::string_view payload, TimePoint now, StreamActions& out);
  void Restart(uint64_t seq, std::string_view payload, TimePoint now, StreamActions& out);
  // Asks for the engine's history from `from_seq` (0: all of it; kAwaitingReplay, resuming
  // kPrecise); until_end: the replay lasts until its end marker (see until_end_).
  void AwaitHistory(bool until_end, TimePoint now, StreamActions& out, uint64_t from_seq = 0);
  // AwaitHistory, buffering message `seq`.
  void ReplayFromStart(uint64_t seq, std::string_view payload, TimePoint now, StreamActions& out);
  void MaybePromote(TimePoint now);
  void BeginCall() { released_.clear(); }

  EventStreamOptions options_;
  StreamState state_ = StreamState::kStarting;
  StreamState resume_ = StreamState::kPrecise;  // the state a filled gap returns to
  uint64_t expected_ = 0;                       // next sequence number to apply
  TimePoint deadline_{};                        // kAwaitingReplay
  // kAwaitingReplay after Clear: no live message bounds the replay, so it lasts until its end
  // marker (or a live message continuing it), not until the first replayed message.
  bool until_end_ = false;
  TimePoint rebuild_since_{};    // kRebuilding
  std::deque<Buffered> buffer_;  // kAwaitingReplay: ascending seq
  size_t buffered_bytes_ = 0;
  std::deque<std::string> released_;  // buffered payloads handed out by the current call
  StreamCounters counters_;
};

}  // namespace warmroute::kv_events
