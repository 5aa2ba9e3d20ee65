#include "emulator/kv_events_config.h"

#include <string>

#include "common/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::emulator {
namespace {

using testing::HasSubstr;

TEST(ParseKvEventsConfigTest, VllmsDocumentedForm) {
  absl::StatusOr<KvEventsConfig> c = ParseKvEventsConfig(
      R"({"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:5557",
          "replay_endpoint": "tcp://*:5558", "topic": "kv@0", "buffer_steps": 300})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->publishes());
  EXPECT_EQ(c->endpoint, "tcp://*:5557");
  EXPECT_EQ(c->replay_endpoint, "tcp://*:5558");
  EXPECT_EQ(c->topic, "kv@0");
  EXPECT_EQ(c->buffer_steps, 300);
  EXPECT_EQ(c->hwm, 100'000);
}

TEST(ParseKvEventsConfigTest, DefaultsAreVllms) {
  absl::StatusOr<KvEventsConfig> c = ParseKvEventsConfig(R"({"enable_kv_cache_events": true})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->publisher, "zmq") << "__post_init__: zmq when events are enabled";
  EXPECT_EQ(c->endpoint, "tcp://*:5557");
  EXPECT_EQ(c->replay_endpoint, "");
  EXPECT_EQ(c->buffer_steps, 10'000);
  EXPECT_EQ(c->topic, "");
  EXPECT_TRUE(c->publishes());
}

TEST(ParseKvEventsConfigTest, DisabledOrNullPublisherPublishesNothing) {
  absl::StatusOr<KvEventsConfig> off = ParseKvEventsConfig(R"({"publisher": "zmq"})");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->publishes());
  absl::StatusOr<KvEventsConfig> null_publisher =
      ParseKvEventsConfig(R"({"enable_kv_cache_events": true, "publisher": "null"})");
  ASSERT_TRUE(null_publisher.ok());
  EXPECT_FALSE(null_publisher->publishes());
  absl::StatusOr<KvEventsConfig> empty = ParseKvEventsConfig("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->publisher, "null");
}

TEST(ParseKvEventsConfigTest, NullReplayEndpointMeansNoReplay) {
  absl::StatusOr<KvEventsConfig> c =
      ParseKvEventsConfig(R"({"enable_kv_cache_events": true, "replay_endpoint": null})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->replay_endpoint, "");
}

TEST(ParseKvEventsConfigTest, OtherTransportsAndEphemeralPorts) {
  for (const char* endpoint :
       {"ipc:///tmp/kv", "inproc://kv", "tcp://127.0.0.1:*", "tcp://[::1]:5557", "tcp://*:65535"}) {
    const std::string json = std::string(R"({"endpoint": ")") + endpoint + "\"}";
    EXPECT_TRUE(ParseKvEventsConfig(json).ok()) << endpoint;
  }
}

// Each bad config: InvalidArgument naming the flag and the problem.
void ExpectBad(const std::string& json, const std::string& problem) {
  absl::StatusOr<KvEventsConfig> c = ParseKvEventsConfig(json);
  ASSERT_FALSE(c.ok()) << json;
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(c.status()), "kv-events-config");
  EXPECT_THAT(c.status().message(), HasSubstr("--kv-events-config"));
  EXPECT_THAT(c.status().message(), HasSubstr(problem)) << json;
}

TEST(ParseKvEventsConfigTest, ErrorsNameTheProblem) {
  ExpectBad("not json", "not a JSON object");
  ExpectBad("[1]", "not a JSON object");
  ExpectBad(R"({"replay_endpiont": "tcp://*:5558"})", "unknown key 'replay_endpiont'");
  ExpectBad(R"({"publisher": "kafka"})", "unknown publisher 'kafka'");
  ExpectBad(R"({"enable_kv_cache_events": "yes"})", "'enable_kv_cache_events' must be true or");
  ExpectBad(R"({"buffer_steps": -1})", "'buffer_steps' must be an integer");
  ExpectBad(R"({"buffer_steps": 1.5})", "'buffer_steps' must be an integer");
  ExpectBad(R"({"hwm": "10"})", "'hwm' must be an integer");
  ExpectBad(R"({"endpoint": 5557})", "'endpoint' must be a string");
  ExpectBad(R"({"endpoint": null})", "'endpoint' must be a string");
  ExpectBad(R"({"endpoint": "localhost:5557"})", "'endpoint' must be tcp://HOST:PORT");
  ExpectBad(R"({"endpoint": "tcp://*:70000"})", "'endpoint' must be tcp://HOST:PORT");
  ExpectBad(R"({"endpoint": "tcp://*:"})", "'endpoint' must be tcp://HOST:PORT");
  ExpectBad(R"({"replay_endpoint": "udp://*:1"})", "'replay_endpoint' must be tcp://HOST:PORT");
  ExpectBad(R"({"endpoint": "tcp://*:5557", "replay_endpoint": "tcp://*:5557"})",
            "'replay_endpoint' must differ from 'endpoint'");
}

}  // namespace
}  // namespace warmroute::emulator
