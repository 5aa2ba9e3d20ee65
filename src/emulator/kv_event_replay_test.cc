#include "emulator/kv_event_replay.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::emulator {
namespace {

// The sequences of an answer's messages, the end marker as -1.
std::vector<int64_t> Sequences(const std::vector<ReplayMessage>& answer) {
  std::vector<int64_t> out;
  for (const ReplayMessage& m : answer) {
    uint64_t v = 0;
    for (unsigned char b : m.sequence) v = (v << 8) | b;
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

std::vector<std::string> Payloads(const std::vector<ReplayMessage>& answer) {
  std::vector<std::string> out;
  for (const ReplayMessage& m : answer) out.emplace_back(m.payload);
  return out;
}

KvEventReplayBuffer Filled(size_t capacity, uint64_t count) {
  KvEventReplayBuffer buffer(capacity);
  for (uint64_t s = 0; s < count; ++s) buffer.Append(s, "p" + std::to_string(s));
  return buffer;
}

TEST(EncodeSequenceTest, EightBytesBigEndian) {
  EXPECT_THAT(EncodeSequence(0), testing::ElementsAre(0, 0, 0, 0, 0, 0, 0, 0));
  EXPECT_THAT(EncodeSequence(0x0102030405060708), testing::ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_EQ(EncodeSequence(std::numeric_limits<uint64_t>::max()), kReplayEndSequence)
      << "vLLM's end marker is (-1).to_bytes(8, 'big', signed=True)";
}

TEST(ParseReplayRequestTest, ThreeFramesWithAnEightByteStart) {
  const std::string start("\0\0\0\0\0\0\x01\x02", 8);
  const std::vector<std::string_view> frames = {"client-id", "", start};
  EXPECT_EQ(ParseReplayRequest(frames), 258u);
}

TEST(ParseReplayRequestTest, StartOfAnyLengthReadsAsPythonsIntFromBytes) {
  const std::string short_start("\x01\x00", 2);
  const std::vector<std::string_view> two = {"id", "", short_start};
  EXPECT_EQ(ParseReplayRequest(two), 256u);
  const std::vector<std::string_view> empty = {"id", "", ""};
  EXPECT_EQ(ParseReplayRequest(empty), 0u);
  const std::string huge("\x01\0\0\0\0\0\0\0\0", 9);  // 2^64: past every sequence
  const std::vector<std::string_view> nine = {"id", "", huge};
  EXPECT_EQ(ParseReplayRequest(nine), std::numeric_limits<uint64_t>::max());
}

TEST(ParseReplayRequestTest, OtherFrameCountsAreIgnoredLikeVllm) {
  const std::string start(8, '\0');
  const std::vector<std::string_view> two = {"id", start};
  const std::vector<std::string_view> four = {"id", "", start, "extra"};
  EXPECT_EQ(ParseReplayRequest(two), std::nullopt);
  EXPECT_EQ(ParseReplayRequest(four), std::nullopt);
  EXPECT_EQ(ParseReplayRequest({}), std::nullopt);
}

TEST(KvEventReplayBufferTest, AnswersFromTheStartThenTheEndMarker) {
  const KvEventReplayBuffer buffer = Filled(10, 5);
  const std::vector<ReplayMessage> answer = buffer.Answer(2);
  EXPECT_THAT(Sequences(answer), testing::ElementsAre(2, 3, 4, -1));
  EXPECT_THAT(Payloads(answer), testing::ElementsAre("p2", "p3", "p4", ""));
}

TEST(KvEventReplayBufferTest, StartZeroReplaysEverything) {
  const KvEventReplayBuffer buffer = Filled(10, 3);
  EXPECT_THAT(Sequences(buffer.Answer(0)), testing::ElementsAre(0, 1, 2, -1));
}

TEST(KvEventReplayBufferTest, StartPastTheNewestGetsTheEndMarkerAlone) {
  const KvEventReplayBuffer buffer = Filled(10, 3);
  EXPECT_THAT(Sequences(buffer.Answer(3)), testing::ElementsAre(-1));
  EXPECT_THAT(Sequences(buffer.Answer(std::numeric_limits<uint64_t>::max())),
              testing::ElementsAre(-1));
}

TEST(KvEventReplayBufferTest, KeepsTheLastCapacityMessages) {
  const KvEventReplayBuffer buffer = Filled(4, 10);
  EXPECT_EQ(buffer.size(), 4u);
  // A start older than the buffer gets what is left: the gap 2..5 shows in the first sequence.
  EXPECT_THAT(Sequences(buffer.Answer(2)), testing::ElementsAre(6, 7, 8, 9, -1));
  EXPECT_THAT(Payloads(buffer.Answer(8)), testing::ElementsAre("p8", "p9", ""));
}

TEST(KvEventReplayBufferTest, CapacityZeroKeepsNothing) {
  const KvEventReplayBuffer buffer = Filled(0, 5);
  EXPECT_EQ(buffer.size(), 0u);
  EXPECT_THAT(Sequences(buffer.Answer(0)), testing::ElementsAre(-1));
}

TEST(KvEventReplayBufferTest, EmptyBufferAnswersTheEndMarker) {
  const KvEventReplayBuffer buffer(10);
  const std::vector<ReplayMessage> answer = buffer.Answer(0);
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_EQ(answer[0].sequence, kReplayEndSequence);
  EXPECT_TRUE(answer[0].payload.empty());
}

TEST(KvEventReplayBufferTest, SequencesNeedNotBeContiguous) {
  KvEventReplayBuffer buffer(10);
  buffer.Append(3, "a");
  buffer.Append(7, "b");
  buffer.Append(8, "c");
  EXPECT_THAT(Sequences(buffer.Answer(4)), testing::ElementsAre(7, 8, -1));
  EXPECT_THAT(Sequences(buffer.Answer(0)), testing::ElementsAre(3, 7, 8, -1));
}

TEST(KvEventReplayBufferTest, PayloadsAreKeptByteForByte) {
  KvEventReplayBuffer buffer(2);
  const std::string binary("\x92\xcb\0\0\x90\xff", 6);
  buffer.Append(0, binary);
  EXPECT_EQ(buffer.Answer(0)[0].payload, binary);
}

}  // namespace
}  // namespace warmroute::emulator
