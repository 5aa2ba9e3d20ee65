// Precise mode end to end in the sans-I/O core: a token-keyed request routed by the Router, the
// engine's KV events for it (as the emulator encodes them) through the stream, the decoder and
// the writer, back into the Router's index.
#include <string>
#include <vector>

#include "common/clock.h"
#include "core/kv_events/block_index_writer.h"
#include "core/kv_events/event_decoder.h"
#include "core/kv_events/event_stream.h"
#include "core/kv_events/msgpack_test_util.h"
#include "core/routing/policy_registry.h"
#include "core/routing/router.h"
#include "core/kv_events/event_encoder.h"
#include "gtest/gtest.h"

namespace warmroute::kv_events {
namespace {

using routing::BackendId;

constexpr int kBlock = 16;

// The caller's loop for one backend: stream → decode → writer → router.
class Subscriber {
 public:
  Subscriber(routing::Router& router, BackendId backend, const Clock& clock)
      : router_(router), backend_(backend), clock_(clock) {}

  // The array form: it carries no salt evidence, the case attribution alone must make safe. (The
  // emulator's map form reports extra_keys nil for every block, salted or not, which the writer
  // reads as "no salt", so a salted request's blocks would not be indexed at all.)
  void Publish(const std::vector<engine::KvEvent>& events) {
    const std::string payload =
        EncodeKvEventBatch(0, events, 0, KvEventEncoding::kArray);
    Perform(stream_.OnLive(seq_++, payload, clock_.Now()));
  }
  void Skip() { ++seq_; }  // a message the PUB socket dropped
  const EventStream& stream() const { return stream_; }

 private:
  void Perform(const StreamActions& actions) {
    for (const StreamAction& a : actions) {
      routing::IndexUpdates updates;
      if (a.kind == StreamAction::Kind::kClearSlice) {
        writer_.Clear(backend_, updates);
      } else if (a.kind == StreamAction::Kind::kApply) {
        EventBatch batch;
        ASSERT_TRUE(DecodeEventBatch(a.payload, batch).ok());
        ASSERT_TRUE(writer_.Apply(backend_, batch, router_.attribution(), updates).ok());
      }
      router_.ApplyIndexUpdates(backend_, updates);
    }
    router_.SetKvEventState(backend_, stream_.uncertain() ? routing::KvEventState::kUncertain
                                                          : routing::KvEventState::kPrecise);
  }

  routing::Router& router_;
  BackendId backend_;
  const Clock& clock_;
  EventStream stream_{{}};
  BlockIndexWriter writer_{{.block_size = kBlock}};
  uint64_t seq_ = 0;
};

routing::RoutingRequest TokenRequest(uint64_t id, const std::vector<int32_t>& tokens,
                                     std::string_view salt) {
  routing::RoutingRequest r;
  r.id = id;
  r.model = "m";
  r.key = routing::MakePrefixKeyFromTokens("m", routing::PrefixKeySalt("", salt), tokens,
                                           {.block_tokens = kBlock});
  r.prompt_tokens = static_cast<int64_t>(tokens.size());
  return r;
}

TEST(RouterEventsTest, StoredBlocksOfARoutedRequestAreMatchedUntilRemoved) {
  ManualClock clock;
  routing::Router router(routing::MakePolicy("round_robin", {}).value(),
                         {.tokens_per_block = kBlock}, clock, 1);
  const BackendId b0 = router.AddBackend({.name = "r0"});
  router.AddBackend({.name = "r1"});
  Subscriber events(router, b0, clock);
  std::vector<int32_t> tokens(64);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(1000 + i);

  routing::RoutingRequest request = TokenRequest(1, tokens, "tenant-salt");
  absl::StatusOr<routing::Decision> d = router.Route(request);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->backend, b0);
  router.SetDispatchDomain(1, routing::DomainOfTokenPrompt("m", "", "tenant-salt", tokens, kBlock));
  router.CommitInsert(1);
  router.OnFinished(1, 0);
  // The speculative insert predicted the chain; forget it, so that what follows is the events'.
  router.ClearIndex(b0);

  events.Publish({testing::Stored({501, 502}, std::nullopt,
                                  std::vector<int32_t>(tokens.begin(), tokens.begin() + 32), kBlock),
                  testing::Stored({503, 504}, 502,
                                  std::vector<int32_t>(tokens.begin() + 32, tokens.end()), kBlock)});
  EXPECT_EQ(router.fleet().backend(b0).kv_events, routing::KvEventState::kPrecise);
  EXPECT_EQ(router.index().Match(request.key.block_hashes)[b0], 4);
  // Another salt, or none, with the same tokens: nothing.
  EXPECT_EQ(router.index().Match(TokenRequest(2, tokens, "").key.block_hashes)[b0], 0);
  EXPECT_EQ(router.index().Match(TokenRequest(3, tokens, "other").key.block_hashes)[b0], 0);

  events.Publish({testing::Removed({503})});
  EXPECT_EQ(router.index().Match(request.key.block_hashes)[b0], 2);

  // A lost message: no replay endpoint, so the slice is cleared and rebuilt from live events.
  events.Skip();
  events.Publish({testing::Removed({504})});
  EXPECT_EQ(router.fleet().backend(b0).kv_events, routing::KvEventState::kUncertain);
  EXPECT_EQ(router.index().entries(b0), 0u);

  events.Publish({testing::Cleared()});
  router.RemoveBackend(b0);
  EXPECT_EQ(router.index().entries(), 0u);
}

}  // namespace
}  // namespace warmroute::kv_events
