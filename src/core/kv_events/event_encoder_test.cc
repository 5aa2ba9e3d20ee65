#include "core/kv_events/event_encoder.h"

#include <msgpuck.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::kv_events {
namespace {

using engine::KvEvent;

// A decoded msgpack value, read back with msgpuck's own reader so the test checks the bytes on
// the wire, not our encoder's idea of them.
struct Value {
  enum class Type { kNil, kUint, kInt, kDouble, kStr, kArray, kMap, kOther };
  Type type = Type::kOther;
  uint64_t u = 0;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<Value> items;             // kArray
  std::map<std::string, Value> fields;  // kMap (string keys only)

  bool is_nil() const { return type == Type::kNil; }
  const Value& operator[](size_t index) const { return items.at(index); }
  const Value& operator[](const std::string& key) const { return fields.at(key); }
};

Value Decode(const char** data) {
  Value v;
  switch (mp_typeof(**data)) {
    case MP_NIL:
      mp_decode_nil(data);
      v.type = Value::Type::kNil;
      break;
    case MP_UINT:
      v.type = Value::Type::kUint;
      v.u = mp_decode_uint(data);
      break;
    case MP_INT:
      v.type = Value::Type::kInt;
      v.i = mp_decode_int(data);
      break;
    case MP_DOUBLE:
      v.type = Value::Type::kDouble;
      v.d = mp_decode_double(data);
      break;
    case MP_STR: {
      v.type = Value::Type::kStr;
      uint32_t len = 0;
      const char* str = mp_decode_str(data, &len);
      v.s.assign(str, len);
      break;
    }
    case MP_ARRAY: {
      v.type = Value::Type::kArray;
      const uint32_t n = mp_decode_array(data);
      for (uint32_t k = 0; k < n; ++k) v.items.push_back(Decode(data));
      break;
    }
    case MP_MAP: {
      v.type = Value::Type::kMap;
      const uint32_t n = mp_decode_map(data);
      for (uint32_t k = 0; k < n; ++k) {
        Value key = Decode(data);
        EXPECT_EQ(key.type, Value::Type::kStr) << "map keys must be strings";
        EXPECT_FALSE(v.fields.contains(key.s)) << "duplicate key " << key.s;
        v.fields[key.s] = Decode(data);
      }
      break;
    }
    default:
      mp_next(data);
      break;
  }
  return v;
}

// Decodes a whole payload, asserting it is one well-formed msgpack value with nothing after it.
Value DecodePayload(const std::string& payload) {
  const char* check = payload.data();
  EXPECT_EQ(mp_check(&check, payload.data() + payload.size()), 0) << "malformed msgpack";
  EXPECT_EQ(check, payload.data() + payload.size()) << "trailing bytes after the batch";
  const char* p = payload.data();
  return Decode(&p);
}

std::vector<uint64_t> Uints(const Value& array) {
  EXPECT_EQ(array.type, Value::Type::kArray);
  std::vector<uint64_t> out;
  for (const Value& item : array.items) {
    EXPECT_EQ(item.type, Value::Type::kUint);
    out.push_back(item.u);
  }
  return out;
}

KvEvent Stored(std::vector<uint64_t> hashes, std::optional<uint64_t> parent, int block_size) {
  KvEvent e;
  e.kind = KvEvent::Kind::kBlockStored;
  e.block_hashes = std::move(hashes);
  e.parent_block_hash = parent;
  e.block_size = block_size;
  for (size_t k = 0; k < e.block_hashes.size() * block_size; ++k) {
    e.token_ids.push_back(static_cast<int32_t>(100 + k));
  }
  return e;
}

KvEvent Removed(std::vector<uint64_t> hashes) {
  KvEvent e;
  e.kind = KvEvent::Kind::kBlockRemoved;
  e.block_hashes = std::move(hashes);
  return e;
}

KvEvent Cleared() {
  KvEvent e;
  e.kind = KvEvent::Kind::kAllBlocksCleared;
  return e;
}

// A hash with the top bit set: must travel as an unsigned 64-bit integer, not a negative one.
constexpr uint64_t kHighHash = 0xF00DFACE12345678ULL;

TEST(EncodeKvEventBatchTest, BatchIsTimestampEventsAndRank) {
  const std::vector<KvEvent> events = {Cleared()};
  const Value batch =
      DecodePayload(EncodeKvEventBatch(1700000000.25, events, 3, KvEventEncoding::kArray));
  ASSERT_EQ(batch.type, Value::Type::kArray);
  ASSERT_EQ(batch.items.size(), 3u);
  EXPECT_EQ(batch[0].type, Value::Type::kDouble);
  EXPECT_DOUBLE_EQ(batch[0].d, 1700000000.25);
  ASSERT_EQ(batch[1].type, Value::Type::kArray);
  EXPECT_EQ(batch[1].items.size(), 1u);
  EXPECT_EQ(batch[2].type, Value::Type::kUint);
  EXPECT_EQ(batch[2].u, 3u);
}

TEST(EncodeKvEventBatchTest, UnknownRankIsOmittedAsATrailingDefault) {
  const Value batch =
      DecodePayload(EncodeKvEventBatch(1.5, {}, std::nullopt, KvEventEncoding::kMap));
  ASSERT_EQ(batch.type, Value::Type::kArray);
  ASSERT_EQ(batch.items.size(), 2u);
  EXPECT_DOUBLE_EQ(batch[0].d, 1.5);
  EXPECT_TRUE(batch[1].items.empty());
}

TEST(EncodeKvEventBatchTest, ArrayBlockStoredHasEveryFieldInVllmOrder) {
  const std::vector<KvEvent> events = {Stored({kHighHash, 7}, 42, 4)};
  const Value batch = DecodePayload(EncodeKvEventBatch(2.0, events, 0, KvEventEncoding::kArray));
  const Value& e = batch[1][0];
  ASSERT_EQ(e.type, Value::Type::kArray);
  ASSERT_EQ(e.items.size(), 8u);
  EXPECT_EQ(e[0].s, "BlockStored");
  EXPECT_THAT(Uints(e[1]), testing::ElementsAre(kHighHash, 7u));
  EXPECT_EQ(e[2].type, Value::Type::kUint);
  EXPECT_EQ(e[2].u, 42u);
  EXPECT_THAT(Uints(e[3]), testing::ElementsAre(100, 101, 102, 103, 104, 105, 106, 107));
  EXPECT_EQ(e[4].type, Value::Type::kUint);
  EXPECT_EQ(e[4].u, 4u);
  EXPECT_TRUE(e[5].is_nil());  // lora_id
  EXPECT_EQ(e[6].type, Value::Type::kStr);
  EXPECT_EQ(e[6].s, "GPU");    // medium
  EXPECT_TRUE(e[7].is_nil());  // lora_name
}

TEST(EncodeKvEventBatchTest, FirstBlockHasNilParent) {
  const std::vector<KvEvent> events = {Stored({5}, std::nullopt, 16)};
  const Value array = DecodePayload(EncodeKvEventBatch(0, events, 0, KvEventEncoding::kArray));
  EXPECT_TRUE(array[1][0][2].is_nil());
  const Value map = DecodePayload(EncodeKvEventBatch(0, events, 0, KvEventEncoding::kMap));
  EXPECT_TRUE(map[1][0]["parent_block_hash"].is_nil());
  EXPECT_EQ(map[1][0]["token_ids"].items.size(), 16u);
}

TEST(EncodeKvEventBatchTest, ArrayBlockRemovedAndCleared) {
  const std::vector<KvEvent> events = {Removed({kHighHash, 9}), Cleared()};
  const Value batch = DecodePayload(EncodeKvEventBatch(3.0, events, 0, KvEventEncoding::kArray));
  ASSERT_EQ(batch[1].items.size(), 2u);
  const Value& removed = batch[1][0];
  ASSERT_EQ(removed.items.size(), 3u);
  EXPECT_EQ(removed[0].s, "BlockRemoved");
  EXPECT_THAT(Uints(removed[1]), testing::ElementsAre(kHighHash, 9u));
  EXPECT_EQ(removed[2].s, "GPU");
  const Value& cleared = batch[1][1];
  ASSERT_EQ(cleared.type, Value::Type::kArray);
  ASSERT_EQ(cleared.items.size(), 1u);
  EXPECT_EQ(cleared[0].s, "AllBlocksCleared");
}

TEST(EncodeKvEventBatchTest, MapBlockStoredHasTypeTagAndNamedFields) {
  const std::vector<KvEvent> events = {Stored({kHighHash, 8, 9}, 11, 2)};
  const Value batch = DecodePayload(EncodeKvEventBatch(4.0, events, 0, KvEventEncoding::kMap));
  ASSERT_EQ(batch.type, Value::Type::kArray) << "the batch stays array_like in both encodings";
  const Value& e = batch[1][0];
  ASSERT_EQ(e.type, Value::Type::kMap);
  std::vector<std::string> keys;
  for (const auto& [key, value] : e.fields) keys.push_back(key);
  EXPECT_THAT(
      keys, testing::UnorderedElementsAre("type", "block_hashes", "parent_block_hash", "token_ids",
                                          "block_size", "lora_id", "medium", "lora_name",
                                          "extra_keys", "group_idx", "kv_cache_spec_kind"));
  EXPECT_EQ(e["type"].s, "BlockStored");
  EXPECT_THAT(Uints(e["block_hashes"]), testing::ElementsAre(kHighHash, 8u, 9u));
  EXPECT_EQ(e["parent_block_hash"].u, 11u);
  EXPECT_THAT(Uints(e["token_ids"]), testing::ElementsAre(100, 101, 102, 103, 104, 105));
  EXPECT_EQ(e["block_size"].u, 2u);
  EXPECT_TRUE(e["lora_id"].is_nil());
  EXPECT_EQ(e["medium"].s, "GPU");
  EXPECT_TRUE(e["lora_name"].is_nil());
  ASSERT_EQ(e["extra_keys"].items.size(), 3u) << "one entry per block";
  for (const Value& key : e["extra_keys"].items) EXPECT_TRUE(key.is_nil());
  EXPECT_EQ(e["group_idx"].type, Value::Type::kUint);
  EXPECT_EQ(e["group_idx"].u, 0u);
  EXPECT_EQ(e["kv_cache_spec_kind"].s, "full_attention");
}

TEST(EncodeKvEventBatchTest, MapBlockRemovedAndCleared) {
  const std::vector<KvEvent> events = {Removed({1, kHighHash}), Cleared()};
  const Value batch = DecodePayload(EncodeKvEventBatch(5.0, events, 0, KvEventEncoding::kMap));
  const Value& removed = batch[1][0];
  ASSERT_EQ(removed.type, Value::Type::kMap);
  EXPECT_EQ(removed.fields.size(), 4u);
  EXPECT_EQ(removed["type"].s, "BlockRemoved");
  EXPECT_THAT(Uints(removed["block_hashes"]), testing::ElementsAre(1u, kHighHash));
  EXPECT_EQ(removed["medium"].s, "GPU");
  EXPECT_EQ(removed["group_idx"].u, 0u);
  const Value& cleared = batch[1][1];
  ASSERT_EQ(cleared.type, Value::Type::kMap);
  EXPECT_EQ(cleared.fields.size(), 1u);
  EXPECT_EQ(cleared["type"].s, "AllBlocksCleared");
}

TEST(EncodeKvEventBatchTest, SglangEventsHaveSglangsFields) {
  const std::vector<KvEvent> events = {Stored({kHighHash, 7}, 42, 4), Removed({9}), Cleared()};
  const Value batch = DecodePayload(EncodeKvEventBatch(7.0, events, 0, KvEventEncoding::kSglang));
  ASSERT_EQ(batch.items.size(), 3u) << "[ts, events, attn_dp_rank]";
  const Value& stored = batch[1][0];
  ASSERT_EQ(stored.type, Value::Type::kArray);
  ASSERT_EQ(stored.items.size(), 6u) << "tag, block_hashes, parent, token_ids, block_size, lora_id";
  EXPECT_EQ(stored[0].s, "BlockStored");
  EXPECT_THAT(Uints(stored[1]), testing::ElementsAre(kHighHash, 7u));
  EXPECT_EQ(stored[2].u, 42u);
  EXPECT_EQ(stored[3].items.size(), 8u);
  EXPECT_EQ(stored[4].u, 4u);
  EXPECT_TRUE(stored[5].is_nil());
  const Value& removed = batch[1][1];
  ASSERT_EQ(removed.items.size(), 2u) << "SGLang's BlockRemoved has no medium";
  EXPECT_EQ(removed[0].s, "BlockRemoved");
  EXPECT_THAT(Uints(removed[1]), testing::ElementsAre(9u));
  ASSERT_EQ(batch[1][2].items.size(), 1u);
  EXPECT_EQ(batch[1][2][0].s, "AllBlocksCleared");
}

TEST(EncodeKvEventBatchTest, KeepsEventOrderAndLargeBatches) {
  std::vector<KvEvent> events;
  for (uint64_t k = 0; k < 70000; ++k) events.push_back(Removed({k}));
  const Value batch = DecodePayload(EncodeKvEventBatch(6.0, events, 0, KvEventEncoding::kArray));
  ASSERT_EQ(batch[1].items.size(), 70000u);  // beyond array16: needs an array32 header
  for (uint64_t k = 0; k < 70000; k += 9999) EXPECT_EQ(batch[1][k][1][0].u, k);
}

TEST(EncodeKvEventBatchTest, NegativeTokenIdsStaySigned) {
  KvEvent e = Stored({1}, std::nullopt, 1);
  e.token_ids = {-3};
  const std::vector<KvEvent> events = {e};
  const Value batch = DecodePayload(EncodeKvEventBatch(0, events, 0, KvEventEncoding::kArray));
  EXPECT_EQ(batch[1][0][3][0].type, Value::Type::kInt);
  EXPECT_EQ(batch[1][0][3][0].i, -3);
}

}  // namespace
}  // namespace warmroute::kv_events
