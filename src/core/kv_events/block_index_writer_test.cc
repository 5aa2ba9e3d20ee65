#include "core/kv_events/block_index_writer.h"

#include <string>
#include <vector>

#include "core/kv_events/msgpack_test_util.h"
#include "core/routing/prefix_index.h"
#include "core/routing/prefix_key.h"
#include "core/kv_events/event_encoder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::kv_events {
namespace {

using routing::BackendId;
using ::testing::HasSubstr;

constexpr int kBlock = 4;
constexpr std::string_view kModel = "llama";

std::vector<int32_t> Tokens(int32_t from, int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[static_cast<size_t>(i)] = from + i;
  return t;
}

std::vector<int32_t> Slice(const std::vector<int32_t>& v, size_t from, size_t n) {
  return std::vector<int32_t>(v.begin() + static_cast<std::ptrdiff_t>(from),
                              v.begin() + static_cast<std::ptrdiff_t>(from + n));
}

// A request of one isolation domain: tenant, the cache_salt the engine sees, the model.
struct Domain {
  std::string tenant;
  std::string salt;
  std::string model = std::string(kModel);

  routing::PrefixKey Key(const std::vector<int32_t>& tokens) const {
    return routing::MakePrefixKeyFromTokens(model, routing::PrefixKeySalt(tenant, salt), tokens,
                                            {.block_tokens = kBlock});
  }
};

// Hand-made decoded events, for the shapes the emulator does not encode (tiers, LoRA, salts).
class BatchBuilder {
 public:
  Event& Stored(const std::vector<uint64_t>& hashes, std::optional<uint64_t> parent,
                const std::vector<int32_t>& tokens, Medium medium = Medium::kGpu) {
    Event e;
    e.kind = EventKind::kBlockStored;
    e.medium = medium;
    e.has_parent = parent.has_value();
    e.parent_hash = parent.value_or(0);
    e.block_size = kBlock;
    AddHashes(e, hashes);
    e.tokens_begin = static_cast<uint32_t>(batch_.token_ids.size());
    e.tokens_count = static_cast<uint32_t>(tokens.size());
    batch_.token_ids.insert(batch_.token_ids.end(), tokens.begin(), tokens.end());
    batch_.events.push_back(e);
    return batch_.events.back();
  }
  void FirstBlockStrings(Event& e, std::vector<std::string_view> strings) {
    e.extra_keys = Event::ExtraKeys::kFirstTuple;
    e.strings_begin = static_cast<uint32_t>(batch_.first_block_strings.size());
    e.strings_count = static_cast<uint32_t>(strings.size());
    for (std::string_view s : strings) batch_.first_block_strings.push_back(s);
  }
  void Removed(const std::vector<uint64_t>& hashes, Medium medium = Medium::kGpu) {
    Event e;
    e.kind = EventKind::kBlockRemoved;
    e.medium = medium;
    AddHashes(e, hashes);
    batch_.events.push_back(e);
  }
  const EventBatch& batch() const { return batch_; }

 private:
  void AddHashes(Event& e, const std::vector<uint64_t>& hashes) {
    e.hashes_begin = static_cast<uint32_t>(batch_.block_hashes.size());
    e.hashes_count = static_cast<uint32_t>(hashes.size());
    batch_.block_hashes.insert(batch_.block_hashes.end(), hashes.begin(), hashes.end());
  }
  EventBatch batch_;
};

class BlockIndexWriterTest : public ::testing::Test {
 protected:
  BlockIndexWriterTest() {
    index_.SetCapacity(0, 10000);
    index_.SetCapacity(1, 10000);
  }

  // What the router does at dispatch: remember who sent this first block to `backend`.
  void Dispatched(BackendId backend, const Domain& domain, const std::vector<int32_t>& tokens) {
    const routing::DispatchDomain d =
        routing::DomainOfTokenPrompt(domain.model, domain.tenant, domain.salt, tokens, kBlock);
    attribution_.Record(backend, d.first_block, d.record);
  }

  absl::Status Apply(BackendId backend, const EventBatch& batch) {
    routing::IndexUpdates updates;
    absl::Status s = writer_.Apply(backend, batch, attribution_, updates);
    updates.ApplyTo(index_, backend);
    return s;
  }

  // Encodes as the engines publish, decodes, applies.
  absl::Status ApplyWire(BackendId backend, const std::vector<engine::KvEvent>& events,
                         KvEventEncoding encoding = KvEventEncoding::kArray) {
    const std::string payload = EncodeKvEventBatch(1.0, events, 0, encoding);
    EventBatch batch;
    if (absl::Status s = DecodeEventBatch(payload, batch); !s.ok()) return s;
    return Apply(backend, batch);
  }

  int32_t Matched(BackendId backend, const Domain& domain, const std::vector<int32_t>& tokens) {
    return index_.Match(domain.Key(tokens).block_hashes)[backend];
  }

  routing::PrefixIndex index_{{.max_entries = 1 << 16}};
  routing::DomainAttribution attribution_{{}};
  BlockIndexWriter writer_{{.block_size = kBlock}};
  const std::vector<int32_t> tokens_ = Tokens(100, 16);  // 4 blocks
  const Domain plain_{.tenant = "", .salt = ""};
};

TEST_F(BlockIndexWriterTest, StoredChainIsMatchedByTheTokenKeyInBothWireForms) {
  for (KvEventEncoding encoding : {KvEventEncoding::kArray, KvEventEncoding::kMap}) {
    const BackendId b = encoding == KvEventEncoding::kArray ? 0 : 1;
    Dispatched(b, plain_, tokens_);
    ASSERT_TRUE(ApplyWire(b,
                          {testing::Stored({11, 12}, std::nullopt, Slice(tokens_, 0, 8), kBlock),
                           testing::Stored({13, 14}, 12, Slice(tokens_, 8, 8), kBlock)},
                          encoding)
                    .ok());
    EXPECT_EQ(Matched(b, plain_, tokens_), 4);
    EXPECT_EQ(writer_.blocks(b), 4u);
  }
  // Our keys are MakePrefixKeyFromTokens's, whatever the engine's hashes are.
  EXPECT_EQ(index_.entries(0), 4u);
  EXPECT_EQ(writer_.counters().stored_blocks, 8);
}

TEST_F(BlockIndexWriterTest, RemovedBlocksAndClearedCacheLeaveTheIndex) {
  Dispatched(0, plain_, tokens_);
  ASSERT_TRUE(ApplyWire(0, {testing::Stored({11, 12, 13, 14}, std::nullopt, tokens_, kBlock)}).ok());
  ASSERT_TRUE(ApplyWire(0, {testing::Removed({13, 999})}).ok());
  EXPECT_EQ(Matched(0, plain_, tokens_), 2);
  EXPECT_EQ(writer_.counters().unknown_removals, 1);
  EXPECT_EQ(writer_.blocks(0), 3u);
  ASSERT_TRUE(ApplyWire(0, {testing::Cleared()}).ok());
  EXPECT_EQ(Matched(0, plain_, tokens_), 0);
  EXPECT_EQ(index_.entries(0), 0u);
  EXPECT_EQ(writer_.blocks(0), 0u);
  // A child of a forgotten block has no parent to chain from: not indexed.
  ASSERT_TRUE(ApplyWire(0, {testing::Stored({15}, 14, Slice(tokens_, 0, 4), kBlock)}).ok());
  EXPECT_EQ(writer_.counters().orphan_blocks, 1);
  EXPECT_EQ(index_.entries(0), 0u);
}

TEST_F(BlockIndexWriterTest, ABlockStaysHeldWhileAnyTierHoldsIt) {
  Dispatched(0, plain_, tokens_);
  BatchBuilder stored;
  stored.Stored({11, 12}, std::nullopt, Slice(tokens_, 0, 8));
  stored.Stored({11, 12}, std::nullopt, Slice(tokens_, 0, 8), Medium::kCpu);  // offloaded
  ASSERT_TRUE(Apply(0, stored.batch()).ok());
  BatchBuilder gpu_evicted;
  gpu_evicted.Removed({11, 12}, Medium::kGpu);
  ASSERT_TRUE(Apply(0, gpu_evicted.batch()).ok());
  EXPECT_EQ(Matched(0, plain_, tokens_), 2);  // still on the host
  BatchBuilder cpu_evicted;
  cpu_evicted.Removed({12}, Medium::kCpu);
  ASSERT_TRUE(Apply(0, cpu_evicted.batch()).ok());
  EXPECT_EQ(Matched(0, plain_, tokens_), 1);
}

// The writer fetches each event's first map slot before applying the batch, and a run's slots
// 16 blocks ahead: runs and removals much longer than that, in one batch, land exactly.
TEST_F(BlockIndexWriterTest, LongRunsAndRemovalsInOneBatchAreAppliedExactly) {
  const std::vector<int32_t> tokens = Tokens(100, 70 * kBlock);
  Dispatched(0, plain_, tokens);
  std::vector<uint64_t> first_run;
  std::vector<uint64_t> second_run;
  for (uint64_t i = 0; i < 40; ++i) first_run.push_back(1000 + i);
  for (uint64_t i = 40; i < 70; ++i) second_run.push_back(1000 + i);
  BatchBuilder stored;
  stored.Stored(first_run, std::nullopt, Slice(tokens, 0, 40 * kBlock));
  stored.Stored(second_run, 1039, Slice(tokens, 40 * kBlock, 30 * kBlock));
  ASSERT_TRUE(Apply(0, stored.batch()).ok());
  EXPECT_EQ(Matched(0, plain_, tokens), 70);
  EXPECT_EQ(writer_.blocks(0), 70u);
  EXPECT_EQ(writer_.counters().stored_blocks, 70);
  // Blocks 69 down to 25, each followed by a hash the engine never stored; then 69 again.
  std::vector<uint64_t> removed;
  for (uint64_t i = 70; i-- > 25;) {
    removed.push_back(1000 + i);
    removed.push_back(5000 + i);
  }
  removed.push_back(1069);
  BatchBuilder evicted;
  evicted.Removed(removed);
  evicted.Stored({2000}, 1024, Slice(tokens, 25 * kBlock, kBlock));  // 25 again, another hash
  ASSERT_TRUE(Apply(0, evicted.batch()).ok());
  EXPECT_EQ(Matched(0, plain_, tokens), 26);
  EXPECT_EQ(writer_.blocks(0), 26u);
  EXPECT_EQ(index_.entries(0), 26u);
  EXPECT_EQ(writer_.counters().removed_blocks, 45);
  EXPECT_EQ(writer_.counters().unknown_removals, 46);
}

TEST_F(BlockIndexWriterTest, ABlockSizeOtherThanTheConfiguredOneFailsTheBatch) {
  Dispatched(0, plain_, tokens_);
  const absl::Status s = ApplyWire(
      0, {testing::Stored({11}, std::nullopt, Slice(tokens_, 0, 4), kBlock),
          testing::Stored({21}, std::nullopt, Slice(tokens_, 0, 8), 8)});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("block_size 8"));
  EXPECT_THAT(s.message(), HasSubstr("configured block size is 4"));
  EXPECT_EQ(index_.entries(0), 0u);  // nothing of the batch applied
}

TEST_F(BlockIndexWriterTest, AFirstBlockNobodySentIsNotIndexed) {
  ASSERT_TRUE(ApplyWire(0, {testing::Stored({11, 12}, std::nullopt, Slice(tokens_, 0, 8), kBlock),
                            testing::Stored({13}, 12, Slice(tokens_, 8, 4), kBlock)})
                  .ok());
  EXPECT_EQ(index_.entries(0), 0u);
  EXPECT_EQ(writer_.counters().unattributed_blocks, 2);
  EXPECT_EQ(writer_.counters().orphan_blocks, 1);
  // Another backend's dispatch is no evidence for this one.
  Dispatched(1, plain_, tokens_);
  ASSERT_TRUE(ApplyWire(0, {testing::Stored({11}, std::nullopt, Slice(tokens_, 0, 4), kBlock)}).ok());
  EXPECT_EQ(index_.entries(0), 0u);
}

// Several gateway replicas: a block another gateway sent there reaches this router only as the
// engine's event. With the engine's salt evidence (vLLM's map form), the domains this router sent
// the same first block in, to any backend, attribute it; the evidence keeps salted blocks apart.
TEST_F(BlockIndexWriterTest, AnotherGatewaysDispatchIsAttributedByTheEnginesSaltEvidence) {
  const Domain salted{.tenant = "acme", .salt = "s3cret"};
  Dispatched(1, plain_, tokens_);
  Dispatched(1, salted, tokens_);
  // Unsalted chain (extra_keys nil), sent to backend 0 by another gateway.
  ASSERT_TRUE(ApplyWire(0, {testing::Stored({11, 12}, std::nullopt, Slice(tokens_, 0, 8), kBlock),
                            testing::Stored({13}, 12, Slice(tokens_, 8, 4), kBlock)},
                        KvEventEncoding::kMap)
                  .ok());
  EXPECT_EQ(Matched(0, plain_, tokens_), 3);
  EXPECT_EQ(Matched(0, salted, tokens_), 0);
  EXPECT_EQ(writer_.counters().fleet_attributed_blocks, 2);
  // The salted tenant's chain there (its salt in extra_keys): its domain only.
  BatchBuilder events;
  Event& chain = events.Stored({31}, std::nullopt, Slice(tokens_, 0, 4));
  events.FirstBlockStrings(chain, {"s3cret"});
  ASSERT_TRUE(Apply(0, events.batch()).ok());
  EXPECT_EQ(Matched(0, salted, tokens_), 1);
  // A salted chain whose salt this router never sent: not indexed.
  BatchBuilder unknown;
  Event& other = unknown.Stored({41}, std::nullopt, Slice(tokens_, 0, 4));
  unknown.FirstBlockStrings(other, {"nobody"});
  const size_t before = index_.entries(0);
  ASSERT_TRUE(Apply(0, unknown.batch()).ok());
  EXPECT_EQ(index_.entries(0), before);
  // Without evidence (vLLM's array form) another backend's records are not used.
  ASSERT_TRUE(ApplyWire(0, {testing::Stored({51}, std::nullopt, Slice(tokens_, 0, 4), kBlock)},
                        KvEventEncoding::kArray)
                  .ok());
  EXPECT_EQ(index_.entries(0), before);
  EXPECT_EQ(writer_.counters().fleet_attributed_blocks, 3);
}

// A first block this router never sent anywhere (another gateway's new prompt): the engine shows
// it unsalted, so it is indexed in the unsalted domain this router routes for, which would hit
// it on the engine; a salted domain never gets it, and without evidence nothing does.
TEST_F(BlockIndexWriterTest, AnUnsaltedBlockNobodyHereSentGoesToTheUnsaltedDomains) {
  const Domain salted{.tenant = "acme", .salt = "s3cret"};
  Dispatched(1, plain_, Tokens(900, 16));  // some other prompt, unsalted
  Dispatched(1, salted, Tokens(900, 16));
  ASSERT_TRUE(ApplyWire(0, {testing::Stored({11, 12}, std::nullopt, Slice(tokens_, 0, 8), kBlock)},
                        KvEventEncoding::kMap)
                  .ok());
  EXPECT_EQ(Matched(0, plain_, tokens_), 2);
  EXPECT_EQ(Matched(0, salted, tokens_), 0);
  EXPECT_EQ(writer_.counters().fleet_attributed_blocks, 2);
  // The array form carries no salt: not indexed.
  ASSERT_TRUE(ApplyWire(1, {testing::Stored({21, 22}, std::nullopt, Slice(tokens_, 0, 8), kBlock)},
                        KvEventEncoding::kArray)
                  .ok());
  EXPECT_EQ(Matched(1, plain_, tokens_), 0);
  // Only salted domains here: an unsalted block is not indexed.
  routing::DomainAttribution only_salted({});
  const routing::DispatchDomain d =
      routing::DomainOfTokenPrompt(kModel, salted.tenant, salted.salt, Tokens(900, 16), kBlock);
  only_salted.Record(1, d.first_block, d.record);
  routing::IndexUpdates updates;
  ASSERT_TRUE(writer_
                  .Apply(1,
                         [&] {
                           BatchBuilder b;
                           b.Stored({31}, std::nullopt, Slice(tokens_, 0, 4)).extra_keys =
                               Event::ExtraKeys::kFirstNil;
                           return b.batch();
                         }(),
                         only_salted, updates)
                  .ok());
  updates.ApplyTo(index_, 1);
  EXPECT_EQ(Matched(1, salted, tokens_), 0);
  EXPECT_EQ(index_.entries(1), 0u);
}

// The engine reports no salt (vLLM's array form): a salted tenant's stored blocks are indexed in
// its own domain only, and not at all once another domain sent the same first block.
TEST_F(BlockIndexWriterTest, SaltedBlocksAreNeverMatchedByAnotherDomain) {
  const Domain salted{.tenant = "acme", .salt = "s3cret"};
  const Domain other_salt{.tenant = "acme", .salt = "other"};
  const Domain other_tenant{.tenant = "globex", .salt = "s3cret"};
  Dispatched(0, salted, tokens_);
  ASSERT_TRUE(ApplyWire(0, {testing::Stored({11, 12, 13, 14}, std::nullopt, tokens_, kBlock)}).ok());
  EXPECT_EQ(Matched(0, salted, tokens_), 4);
  EXPECT_EQ(Matched(0, plain_, tokens_), 0);
  EXPECT_EQ(Matched(0, other_salt, tokens_), 0);
  EXPECT_EQ(Matched(0, other_tenant, tokens_), 0);

  // Backend 1: the salted tenant and an unsalted request sent the same tokens; the engine stores
  // two chains (one per salt) and says nothing of salts: neither can be attributed.
  Dispatched(1, salted, tokens_);
  Dispatched(1, plain_, tokens_);
  ASSERT_TRUE(ApplyWire(1, {testing::Stored({21, 22}, std::nullopt, Slice(tokens_, 0, 8), kBlock),
                            testing::Stored({31, 32}, std::nullopt, Slice(tokens_, 0, 8), kBlock)})
                  .ok());
  EXPECT_EQ(Matched(1, salted, tokens_), 0);
  EXPECT_EQ(Matched(1, plain_, tokens_), 0);
  EXPECT_EQ(index_.entries(1), 0u);
  EXPECT_EQ(writer_.counters().ambiguous_blocks, 4);
}

// vLLM's map form names the salt in the first block's extra_keys (nil: no salt): each chain goes
// to the domain that matches it.
TEST_F(BlockIndexWriterTest, ExtraKeysAttributeEachChainToItsOwnSalt) {
  const Domain salted{.tenant = "", .salt = "s3cret"};
  Dispatched(0, salted, tokens_);
  Dispatched(0, plain_, tokens_);
  BatchBuilder events;
  Event& unsalted_chain = events.Stored({21, 22}, std::nullopt, Slice(tokens_, 0, 8));
  unsalted_chain.extra_keys = Event::ExtraKeys::kFirstNil;
  Event& salted_chain = events.Stored({31}, std::nullopt, Slice(tokens_, 0, 4));
  events.FirstBlockStrings(salted_chain, {"s3cret"});
  ASSERT_TRUE(Apply(0, events.batch()).ok());
  EXPECT_EQ(Matched(0, plain_, tokens_), 2);
  EXPECT_EQ(Matched(0, salted, tokens_), 1);
  EXPECT_EQ(Matched(0, Domain{.tenant = "", .salt = "other"}, tokens_), 0);
  // A salt nobody sent: not indexed.
  BatchBuilder unknown_salt;
  Event& e = unknown_salt.Stored({41}, std::nullopt, Slice(tokens_, 0, 4));
  unknown_salt.FirstBlockStrings(e, {"nobody"});
  const size_t before = index_.entries(0);
  ASSERT_TRUE(Apply(0, unknown_salt.batch()).ok());
  EXPECT_EQ(index_.entries(0), before);
}

// Tenants without a salt share the engine's block (vLLM keys it by model alone): it is indexed
// in each of their domains.
TEST_F(BlockIndexWriterTest, UnsaltedTenantsOfOneModelShareAFirstBlock) {
  const Domain acme{.tenant = "acme", .salt = ""};
  const Domain globex{.tenant = "globex", .salt = ""};
  Dispatched(0, acme, tokens_);
  Dispatched(0, globex, tokens_);
  ASSERT_TRUE(ApplyWire(0, {testing::Stored({11, 12}, std::nullopt, Slice(tokens_, 0, 8), kBlock),
                            testing::Stored({13}, 12, Slice(tokens_, 8, 4), kBlock)})
                  .ok());
  EXPECT_EQ(Matched(0, acme, tokens_), 3);
  EXPECT_EQ(Matched(0, globex, tokens_), 3);
  EXPECT_EQ(Matched(0, plain_, tokens_), 0);
  ASSERT_TRUE(ApplyWire(0, {testing::Removed({12})}).ok());
  EXPECT_EQ(Matched(0, acme, tokens_), 1);
  EXPECT_EQ(Matched(0, globex, tokens_), 1);
}

TEST_F(BlockIndexWriterTest, ALoraBlockGoesToTheAdaptersDomainOnly) {
  const Domain adapter{.tenant = "", .salt = "", .model = "sql-lora"};
  Dispatched(0, plain_, tokens_);
  Dispatched(0, adapter, tokens_);
  BatchBuilder events;
  Event& e = events.Stored({11}, std::nullopt, Slice(tokens_, 0, 4));
  e.lora_name = "sql-lora";
  e.lora_id = 1;
  ASSERT_TRUE(Apply(0, events.batch()).ok());
  EXPECT_EQ(Matched(0, adapter, tokens_), 1);
  EXPECT_EQ(Matched(0, plain_, tokens_), 0);
}

TEST_F(BlockIndexWriterTest, TheMapIsBoundedAndForgetsARemovedBackend) {
  BlockIndexWriter small({.block_size = kBlock, .max_blocks_per_backend = 3});
  Dispatched(0, plain_, tokens_);
  routing::IndexUpdates updates;
  const std::vector<engine::KvEvent> events = {
      testing::Stored({11, 12, 13, 14}, std::nullopt, tokens_, kBlock)};
  const std::string payload =
      EncodeKvEventBatch(1, events, 0, KvEventEncoding::kArray);
  EventBatch batch;
  ASSERT_TRUE(DecodeEventBatch(payload, batch).ok());
  ASSERT_TRUE(small.Apply(0, batch, attribution_, updates).ok());
  EXPECT_TRUE(updates.empty());
  EXPECT_EQ(small.counters().over_capacity, 4);

  ASSERT_TRUE(ApplyWire(0, {testing::Stored({11, 12}, std::nullopt, Slice(tokens_, 0, 8), kBlock)}).ok());
  EXPECT_GT(writer_.MemoryBytes(), 0u);
  writer_.RemoveBackend(0);
  EXPECT_EQ(writer_.blocks(0), 0u);
}

}  // namespace
}  // namespace warmroute::kv_events
