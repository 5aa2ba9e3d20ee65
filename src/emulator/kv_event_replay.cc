#include "emulator/kv_event_replay.h"

#include <algorithm>
#include <limits>

namespace warmroute::emulator {

SequenceFrame EncodeSequence(uint64_t sequence) {
  SequenceFrame frame;
  for (int i = 0; i < 8; ++i) frame[i] = static_cast<unsigned char>(sequence >> (8 * (7 - i)));
  return frame;
}

std::optional<uint64_t> ParseReplayRequest(std::span<const std::string_view> frames) {
  if (frames.size() != 3) return std::nullopt;
  uint64_t start = 0;
  for (const char c : frames[2]) {
    if (start > (std::numeric_limits<uint64_t>::max() >> 8)) {
      return std::numeric_limits<uint64_t>::max();
    }
    start = (start << 8) | static_cast<unsigned char>(c);
  }
  return start;
}

KvEventReplayBuffer::KvEventReplayBuffer(size_t capacity) : capacity_(capacity) {}

void KvEventReplayBuffer::Append(uint64_t sequence, std::string payload) {
  if (capacity_ == 0) return;
  if (messages_.size() == capacity_) messages_.pop_front();
  messages_.emplace_back(sequence, std::move(payload));
}

std::vector<ReplayMessage> KvEventReplayBuffer::Answer(uint64_t start) const {
  const auto first = std::lower_bound(
      messages_.begin(), messages_.end(), start,
      [](const std::pair<uint64_t, std::string>& m, uint64_t s) { return m.first < s; });
  std::vector<ReplayMessage> answer;
  answer.reserve(static_cast<size_t>(messages_.end() - first) + 1);
  for (auto it = first; it != messages_.end(); ++it) {
    answer.push_back({.sequence = EncodeSequence(it->first), .payload = it->second});
  }
  answer.push_back({.sequence = kReplayEndSequence, .payload = {}});
  return answer;
}

}  // namespace warmroute::emulator
