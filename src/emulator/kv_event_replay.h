// vLLM's KV-event replay protocol without sockets: the bounded buffer of recently published
// messages, and the answer to one replay request. The ZMQ ROUTER socket that carries it is
// emulator/kv_event_replay_server.h.
//
// The protocol, as vllm/distributed/kv_events.py (ZmqEventPublisher) implements it:
// - The publisher keeps the last `buffer_steps` messages it published (default 10,000) as
//   (sequence, payload) pairs: `deque(maxlen=buffer_steps)`, so the oldest falls out first and
//   buffer_steps 0 keeps nothing. Every published message enters the buffer, delivered to
//   subscribers or not.
// - A replay request arrives at the ROUTER as exactly three frames:
//     [client identity, empty delimiter, start sequence]
//   A REQ client sends the start alone (ZMQ adds the delimiter); a DEALER client sends the empty
//   frame and the start. vLLM reads the start with `int.from_bytes(frame, "big")`: unsigned, of
//   any length (the documented form is 8 bytes; an empty frame reads 0). A request with another
//   frame count is logged and ignored: no answer at all.
// - The answer is one message per buffered batch whose sequence is >= start, oldest first,
//     [identity, empty, sequence (8 bytes, big-endian), payload]
//   then the end marker
//     [identity, empty, (-1).to_bytes(8, "big", signed=True) = FF FF FF FF FF FF FF FF, empty]
//   (the client sees [sequence, payload] after the delimiter; vLLM's example subscriber stops
//   at the empty payload). The topic frame is not replayed.
// - A start older than the buffer gets every buffered message and nothing else: the first
//   replayed sequence above the start is the only sign that messages are lost for good. A start
//   past the newest message gets the end marker alone.
//
// Usage:
//   KvEventReplayBuffer buffer(/*capacity=*/10'000);
//   buffer.Append(seq, payload);                       // after each publish
//   if (std::optional<uint64_t> start = ParseReplayRequest(frames)) {
//     for (const ReplayMessage& m : buffer.Answer(*start)) send(identity, "", m.sequence,
//     m.payload);
//   }
//
// Thread-safety: none; one thread at a time. ReplayMessage payloads view the buffer and are valid
// until the next Append.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warmroute::emulator {

using SequenceFrame = std::array<unsigned char, 8>;

// `sequence` as 8 big-endian bytes: the sequence frame of a published and of a replayed message.
SequenceFrame EncodeSequence(uint64_t sequence);

// The end marker's sequence frame: -1 as a signed 8-byte big-endian integer.
inline constexpr SequenceFrame kReplayEndSequence = {0xFF, 0xFF, 0xFF, 0xFF,
                                                     0xFF, 0xFF, 0xFF, 0xFF};

// The start sequence of a request as the ROUTER received it (`frames[0]` is the identity), or
// nullopt when vLLM would ignore it (not exactly three frames). A start too large for 64 bits
// reads as UINT64_MAX (no buffered sequence reaches it).
std::optional<uint64_t> ParseReplayRequest(std::span<const std::string_view> frames);

// One message of an answer, the frames after the identity and the empty delimiter.
struct ReplayMessage {
  SequenceFrame sequence;
  std::string_view payload;  // empty for the end marker
};

class KvEventReplayBuffer {
 public:
  // Keeps the last `capacity` messages (vLLM's buffer_steps).
  explicit KvEventReplayBuffer(size_t capacity);

  // Records a published message. `sequence` is above every sequence appended before.
  void Append(uint64_t sequence, std::string payload);

  // The answer to a request for `start`: the buffered messages with sequence >= start, oldest
  // first, then the end marker.
  std::vector<ReplayMessage> Answer(uint64_t start) const;

  size_t size() const { return messages_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::deque<std::pair<uint64_t, std::string>> messages_;
};

}  // namespace warmroute::emulator
