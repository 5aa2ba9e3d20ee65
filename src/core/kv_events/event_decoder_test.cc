#include "core/kv_events/event_decoder.h"

#include <string>
#include <vector>

#include "core/engine/kv_event.h"
#include "core/kv_events/msgpack_test_util.h"
#include "core/kv_events/event_encoder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::kv_events {
namespace {

using engine::KvEvent;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Msgpack;

std::vector<KvEvent> SampleEvents() {
  return {testing::Stored({0xfffffffffffffff1ull, 7}, 42, {1, 2, 3, 4, 5, 6, 7, 8}, 4),
          testing::Stored({9}, std::nullopt, {10, 11, 12, 13}, 4), testing::Removed({7, 9}),
          testing::Cleared()};
}

void ExpectSample(const EventBatch& batch) {
  ASSERT_EQ(batch.events.size(), 4u);
  const Event& stored = batch.events[0];
  EXPECT_EQ(stored.kind, EventKind::kBlockStored);
  EXPECT_THAT(batch.hashes(stored), ElementsAre(0xfffffffffffffff1ull, 7u));
  EXPECT_TRUE(stored.has_parent);
  EXPECT_EQ(stored.parent_hash, 42u);
  EXPECT_THAT(batch.tokens(stored), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_EQ(stored.block_size, 4);
  EXPECT_EQ(stored.medium, Medium::kGpu);
  EXPECT_FALSE(stored.lora_id.has_value());
  EXPECT_FALSE(stored.lora_name.has_value());
  const Event& first = batch.events[1];
  EXPECT_FALSE(first.has_parent);
  EXPECT_THAT(batch.hashes(first), ElementsAre(9u));
  const Event& removed = batch.events[2];
  EXPECT_EQ(removed.kind, EventKind::kBlockRemoved);
  EXPECT_THAT(batch.hashes(removed), ElementsAre(7u, 9u));
  EXPECT_EQ(removed.medium, Medium::kGpu);
  EXPECT_EQ(batch.events[3].kind, EventKind::kAllBlocksCleared);
}

TEST(EventDecoderTest, DecodesTheEmulatorsArrayForm) {
  const std::string payload = EncodeKvEventBatch(12.5, SampleEvents(), 3, KvEventEncoding::kArray);
  EventBatch batch;
  ASSERT_TRUE(DecodeEventBatch(payload, batch).ok());
  EXPECT_EQ(batch.ts, 12.5);
  EXPECT_EQ(batch.dp_rank, 3);
  ExpectSample(batch);
  EXPECT_EQ(batch.events[0].extra_keys, Event::ExtraKeys::kAbsent);
}

TEST(EventDecoderTest, DecodesTheEmulatorsMapForm) {
  const std::string payload =
      EncodeKvEventBatch(1.0, SampleEvents(), std::nullopt, KvEventEncoding::kMap);
  EventBatch batch;
  ASSERT_TRUE(DecodeEventBatch(payload, batch).ok());
  EXPECT_FALSE(batch.dp_rank.has_value());
  ExpectSample(batch);
  EXPECT_EQ(batch.events[0].extra_keys, Event::ExtraKeys::kFirstNil);
  EXPECT_EQ(batch.events[0].group_idx, 0);
}

TEST(EventDecoderTest, ReusesTheBatch) {
  EventBatch batch;
  const std::string a = EncodeKvEventBatch(1, SampleEvents(), 0, KvEventEncoding::kArray);
  ASSERT_TRUE(DecodeEventBatch(a, batch).ok());
  const std::vector<KvEvent> cleared = {testing::Cleared()};
  const std::string b = EncodeKvEventBatch(2, cleared, std::nullopt, KvEventEncoding::kArray);
  ASSERT_TRUE(DecodeEventBatch(b, batch).ok());
  EXPECT_EQ(batch.events.size(), 1u);
  EXPECT_TRUE(batch.block_hashes.empty());
  EXPECT_FALSE(batch.dp_rank.has_value());
}

// Current vLLM: the batch itself is a map; a hash may be bytes (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES
// off); LoRA name, CPU tier and extra_keys with a salt on the first block.
TEST(EventDecoderTest, DecodesVllmMapBatchWithBytesHashesAndExtraKeys) {
  const std::string digest("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10", 16);
  Msgpack m;
  m.Map(3).Str("ts").Double(3.25).Str("events").Array(1);
  m.Map(12)
      .Str("type").Str("BlockStored")
      .Str("block_hashes").Array(2).Bin(digest).Uint(5)
      .Str("parent_block_hash").Nil()
      .Str("token_ids").Ints({1, 2, 3, 4})
      .Str("block_size").Uint(2)
      .Str("lora_id").Uint(7)
      .Str("medium").Str("CPU")
      .Str("lora_name").Str("sql-lora")
      .Str("extra_keys").Array(2);
  m.Array(2).Str("sql-lora").Str("tenant-salt");
  m.Array(1).Str("sql-lora");
  m.Str("group_idx").Uint(0)
      .Str("kv_cache_spec_kind").Str("full_attention")
      .Str("kv_cache_spec_sliding_window").Nil();
  m.Str("data_parallel_rank").Uint(1);
  EventBatch batch;
  ASSERT_TRUE(DecodeEventBatch(m.bytes(), batch).ok()) << DecodeEventBatch(m.bytes(), batch);
  EXPECT_EQ(batch.ts, 3.25);
  EXPECT_EQ(batch.dp_rank, 1);
  ASSERT_EQ(batch.events.size(), 1u);
  const Event& e = batch.events[0];
  EXPECT_THAT(batch.hashes(e), ElementsAre(0x090a0b0c0d0e0f10ull, 5u));
  EXPECT_EQ(e.lora_id, 7);
  EXPECT_EQ(e.lora_name, "sql-lora");
  EXPECT_EQ(e.medium, Medium::kCpu);
  EXPECT_EQ(e.extra_keys, Event::ExtraKeys::kFirstTuple);
  EXPECT_THAT(batch.strings(e), ElementsAre("sql-lora", "tenant-salt"));
}

// SGLang: array_like batch [ts, events, attn_dp_rank]; BlockStored [tag, hashes, parent, tokens,
// block_size, lora_id, medium]; hashes are signed int64 (hash_str_to_int64).
TEST(EventDecoderTest, DecodesSglangArrayFormWithSignedHashes) {
  Msgpack m;
  m.Array(3).Double(9.0).Array(4);
  m.Array(7).Str("BlockStored").Array(1).Int(-2).Int(-3).Ints({5, 6}).Uint(2).Nil().Str(
      "CPU_PINNED");
  m.Array(6).Str("BlockStored").Array(1).Int(11).Nil().Ints({7, 8}).Uint(2).Nil();
  m.Array(8).Str("BlockStored").Array(1).Int(12).Nil().Ints({7, 8}).Uint(2).Nil().Str("GPU");
  m.Map(1).Str("cache_salt").Str("s1");
  m.Array(3).Str("BlockRemoved").Array(1).Int(-2).Str("GPU");
  m.Uint(2);
  EventBatch batch;
  absl::Status s = DecodeEventBatch(m.bytes(), batch);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(batch.dp_rank, 2);
  ASSERT_EQ(batch.events.size(), 4u);
  EXPECT_THAT(batch.hashes(batch.events[0]), ElementsAre(static_cast<uint64_t>(int64_t{-2})));
  EXPECT_EQ(batch.events[0].parent_hash, static_cast<uint64_t>(int64_t{-3}));
  EXPECT_EQ(batch.events[0].medium, Medium::kCpu);
  EXPECT_EQ(batch.events[1].medium, Medium::kUnspecified);
  EXPECT_EQ(batch.events[2].cache_salt, "s1");
  EXPECT_THAT(batch.hashes(batch.events[3]), ElementsAre(static_cast<uint64_t>(int64_t{-2})));
}

TEST(EventDecoderTest, DecodesTheSequenceFrame) {
  EXPECT_EQ(*DecodeSequence(std::string("\0\0\0\0\0\0\x01\x02", 8)), 0x102u);
  EXPECT_EQ(*DecodeSequence(std::string(8, '\xff')), kEndOfReplay);
  EXPECT_FALSE(DecodeSequence("1234567").ok());
  EXPECT_FALSE(DecodeSequence("123456789").ok());
}

TEST(EventDecoderTest, EveryTruncationIsAnErrorAndNeverACrash) {
  for (KvEventEncoding encoding : {KvEventEncoding::kArray, KvEventEncoding::kMap}) {
    const std::string payload = EncodeKvEventBatch(1, SampleEvents(), 0, encoding);
    EventBatch batch;
    for (size_t size = 0; size < payload.size(); ++size) {
      // A copy of exactly `size` bytes, so that a read past it is caught by ASan.
      const std::string prefix = payload.substr(0, size);
      EXPECT_FALSE(DecodeEventBatch(prefix, batch).ok()) << size;
    }
  }
}

TEST(EventDecoderTest, CorruptedBytesNeverCrash) {
  const std::string payload = EncodeKvEventBatch(1, SampleEvents(), 0, KvEventEncoding::kMap);
  EventBatch batch;
  for (size_t i = 0; i < payload.size(); ++i) {
    for (int v : {0x00, 0xc1, 0xd4, 0xdc, 0xdd, 0xdf, 0xff, 0x92}) {
      std::string corrupt = payload;
      corrupt[i] = static_cast<char>(v);
      (void)DecodeEventBatch(corrupt, batch);  // any status; must not crash or over-read
    }
  }
}

absl::Status DecodeOne(const Msgpack& event) {
  Msgpack m;
  m.Array(2).Double(0).Array(1).Raw(event.bytes());
  EventBatch batch;
  return DecodeEventBatch(m.bytes(), batch);
}

TEST(EventDecoderTest, RejectsMalformedEventsNamingTheProblem) {
  auto stored = [](int64_t block_size, std::vector<int64_t> tokens) {
    Msgpack m;
    m.Array(5).Str("BlockStored").Array(1).Uint(1).Nil().Ints(tokens).Int(block_size);
    return m;
  };
  EXPECT_THAT(DecodeOne(stored(4, {1, 2, 3})).message(), HasSubstr("3 token ids for 1 blocks of 4"));
  EXPECT_THAT(DecodeOne(stored(0, {})).message(), HasSubstr("block_size"));
  EXPECT_THAT(DecodeOne(stored(1 << 20, {1})).message(), HasSubstr("block_size"));
  EXPECT_THAT(DecodeOne(stored(1, {-1})).message(), HasSubstr("token id"));
  EXPECT_THAT(DecodeOne(stored(1, {int64_t{1} << 31})).message(), HasSubstr("token id"));
  Msgpack bigram;  // SGLang's EAGLE bigram pages carry pairs
  bigram.Array(5).Str("BlockStored").Array(1).Uint(1).Nil().Array(1).Array(2).Uint(1).Uint(2).Uint(
      1);
  EXPECT_THAT(DecodeOne(bigram).message(), HasSubstr("token id"));
  Msgpack unknown;
  unknown.Array(1).Str("BlockMoved");
  EXPECT_THAT(DecodeOne(unknown).message(), HasSubstr("unknown event type 'BlockMoved'"));
  Msgpack short_stored;
  short_stored.Array(3).Str("BlockStored").Array(0).Nil();
  EXPECT_THAT(DecodeOne(short_stored).message(), HasSubstr("fewer than 5"));
  Msgpack string_hash;
  string_hash.Array(2).Str("BlockRemoved").Array(1).Str("abc");
  EXPECT_THAT(DecodeOne(string_hash).message(), HasSubstr("block hash"));
  Msgpack untyped;
  untyped.Map(1).Str("block_hashes").Array(0);
  EXPECT_THAT(DecodeOne(untyped).message(), HasSubstr("no type"));
  Msgpack no_tokens;
  no_tokens.Map(2).Str("type").Str("BlockStored").Str("block_hashes").Array(0);
  EXPECT_THAT(DecodeOne(no_tokens).message(), HasSubstr("lacks"));
  Msgpack medium;
  medium.Array(3).Str("BlockRemoved").Array(0).Uint(1);
  EXPECT_THAT(DecodeOne(medium).message(), HasSubstr("medium"));
  Msgpack scalar;
  scalar.Uint(5);
  EXPECT_THAT(DecodeOne(scalar).message(), HasSubstr("event 0"));
}

TEST(EventDecoderTest, RejectsMalformedBatches) {
  EventBatch batch;
  EXPECT_THAT(DecodeEventBatch("", batch).message(), HasSubstr("truncated"));
  // An array declaring 2^32 - 1 elements in a few bytes: rejected before anything is allocated.
  EXPECT_THAT(DecodeEventBatch(std::string("\x92\xcb\0\0\0\0\0\0\0\0\xdd\xff\xff\xff\xff", 15),
                               batch)
                  .message(),
              HasSubstr("more elements than"));
  // A map declaring 2^31 pairs (mp_check's int counter would overflow on it).
  EXPECT_THAT(DecodeEventBatch(std::string("\xdf\x80\0\0\0\x01", 6), batch).message(),
              HasSubstr("more elements than"));
  // Headers cut at the payload's end (msgpuck's mp_check_binl asserts on the first).
  for (std::string cut : {"\x91\xc4", "\x91\xd9", "\x91\xdc\x01", "\x91\xcf\0\0"}) {
    EXPECT_THAT(DecodeEventBatch(cut, batch).message(), HasSubstr("truncated")) << cut;
  }
  std::string deep(100, '\x91');
  deep.push_back('\xc0');
  EXPECT_THAT(DecodeEventBatch(deep, batch).message(), HasSubstr("nested too deeply"));
  EXPECT_THAT(DecodeEventBatch(std::string("\xd4\x01\x02", 3), batch).message(), HasSubstr("ext"));
  const std::string good = EncodeKvEventBatch(1, SampleEvents(), 0, KvEventEncoding::kArray);
  EXPECT_THAT(DecodeEventBatch(good + "x", batch).message(), HasSubstr("trailing"));
  Msgpack no_events;
  no_events.Map(1).Str("ts").Double(1);
  EXPECT_THAT(DecodeEventBatch(no_events.bytes(), batch).message(), HasSubstr("lacks"));
  Msgpack bad_ts;
  bad_ts.Array(2).Str("now").Array(0);
  EXPECT_THAT(DecodeEventBatch(bad_ts.bytes(), batch).message(), HasSubstr("ts"));
  Msgpack bad_rank;
  bad_rank.Array(3).Double(1).Array(0).Str("zero");
  EXPECT_THAT(DecodeEventBatch(bad_rank.bytes(), batch).message(), HasSubstr("rank"));
}

}  // namespace
}  // namespace warmroute::kv_events
