#include "gateway/config/config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "common/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The schema as documented, every key given (values differ from the defaults where they can).
constexpr std::string_view kFullConfig = R"(
listen:
  host: 0.0.0.0
  port: 9090
  threads: 4
  body_limit_mb: 64
  header_limit_kb: 32
  header_timeout_ms: 5000
  body_timeout_ms: 20000
  idle_timeout_ms: 60000
  shutdown_grace_ms: 0
policy:
  name: consistent_hash
  params: {balance_factor: 1.5, prefix_blocks: 8}
prefix_key:
  block_chars: 32
  max_chars: 8192
  mode: precise
  parity_check_interval_ms: 60000
models:
  - name: Qwen/Qwen3-8B
    tokenizer: /models/qwen3
    block_size: 32
  - name: m2
    tokenizer: /models/m2
    block_size: 32
backends:
  - name: r0
    url: http://127.0.0.1:8001/
    kind: sglang
    models: [m1, m2]
    kv_capacity_tokens: 460000
    kv_events:
      endpoint: tcp://127.0.0.1:5557
      topic: kv
      replay_endpoint: tcp://127.0.0.1:5600
      dp_ranks: 2
      route_ranks: false
  - url: http://[::1]:8002
    kv_events: {endpoint: "tcp://[::1]:5557"}
timeouts:
  connect_ms: 1000
  first_byte_ms: 200000
  idle_stream_ms: 30000
retries: 1
health:
  probe_interval_ms: 500
  probe_timeout_ms: 250
  eject_after_failures: 5
  backoff_initial_ms: 2000
  backoff_max_ms: 20000
scrape:
  interval_ms: 0
  timeout_ms: 500
admission:
  max_in_flight: 256
  max_queue: 64
  queue_timeout_ms: 1000
admin:
  token: s3cret-token
observability:
  access_log: /var/log/warmroute/access.log
  response_headers: false
)";

TEST(GatewayConfigTest, EmptyDocumentGivesDocumentedDefaults) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig("");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->listen.host, "127.0.0.1");
  EXPECT_EQ(config->listen.port, 8080);
  EXPECT_EQ(config->listen.threads, 0);
  EXPECT_EQ(config->listen.body_limit_mb, 32);
  EXPECT_EQ(config->listen.header_limit_kb, 64);
  EXPECT_EQ(config->listen.header_timeout, Millis(10000));
  EXPECT_EQ(config->listen.body_timeout, Millis(60000));
  EXPECT_EQ(config->listen.idle_timeout, Millis(120000));
  EXPECT_EQ(config->listen.shutdown_grace, Millis(30000));
  EXPECT_EQ(config->policy.name, "warmroute");
  EXPECT_TRUE(config->policy.params.empty());
  EXPECT_EQ(config->prefix_key.block_chars, 64);
  EXPECT_EQ(config->prefix_key.max_chars, 0);  // the whole prompt
  EXPECT_TRUE(config->backends.empty());
  EXPECT_EQ(config->timeouts.connect, Millis(2000));
  EXPECT_EQ(config->timeouts.first_byte, Millis(300000));
  EXPECT_EQ(config->timeouts.idle_stream, Millis(60000));
  EXPECT_EQ(config->retries, 2);
  EXPECT_EQ(config->health.probe_interval, Millis(1000));
  EXPECT_EQ(config->health.probe_timeout, Millis(1000));
  EXPECT_EQ(config->health.eject_after_failures, 3);
  EXPECT_EQ(config->health.backoff_initial, Millis(1000));
  EXPECT_EQ(config->health.backoff_max, Millis(30000));
  EXPECT_EQ(config->scrape.interval, Millis(200));
  EXPECT_EQ(config->scrape.timeout, Millis(1000));
  EXPECT_EQ(config->admission.max_in_flight, 0);
  EXPECT_EQ(config->admission.max_queue, 1024);
  EXPECT_EQ(config->admission.queue_timeout, Millis(30000));
  EXPECT_EQ(config->admin.token, "");
  EXPECT_EQ(config->observability.access_log, "stderr");
  EXPECT_TRUE(config->observability.response_headers);
  EXPECT_EQ(config->prefix_key_mode, PrefixKeyMode::kAuto);
  EXPECT_EQ(config->parity_check_interval, Millis(600000));
  EXPECT_TRUE(config->models.empty());
}

TEST(GatewayConfigTest, ReadsEveryKey) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(kFullConfig);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->listen.host, "0.0.0.0");
  EXPECT_EQ(config->listen.port, 9090);
  EXPECT_EQ(config->listen.threads, 4);
  EXPECT_EQ(config->listen.body_limit_mb, 64);
  EXPECT_EQ(config->listen.header_limit_kb, 32);
  EXPECT_EQ(config->listen.header_timeout, Millis(5000));
  EXPECT_EQ(config->listen.body_timeout, Millis(20000));
  EXPECT_EQ(config->listen.idle_timeout, Millis(60000));
  EXPECT_EQ(config->listen.shutdown_grace, Millis(0));  // 0 is allowed: cut at once
  EXPECT_EQ(config->policy.name, "consistent_hash");
  EXPECT_THAT(config->policy.params,
              ElementsAre(std::pair<const std::string, double>("balance_factor", 1.5),
                          std::pair<const std::string, double>("prefix_blocks", 8)));
  EXPECT_EQ(config->prefix_key.block_chars, 32);
  EXPECT_EQ(config->prefix_key.max_chars, 8192);
  EXPECT_EQ(config->prefix_key_mode, PrefixKeyMode::kPrecise);
  EXPECT_EQ(config->parity_check_interval, Millis(60000));
  EXPECT_THAT(
      config->models,
      ElementsAre(
          ModelConfig{.name = "Qwen/Qwen3-8B", .tokenizer = "/models/qwen3", .block_size = 32},
          ModelConfig{.name = "m2", .tokenizer = "/models/m2", .block_size = 32}));
  ASSERT_EQ(config->backends.size(), 2u);
  const BackendConfig& r0 = config->backends[0];
  EXPECT_EQ(r0.name, "r0");
  EXPECT_EQ(r0.url, "http://127.0.0.1:8001");  // canonical: no trailing slash
  EXPECT_EQ(r0.host, "127.0.0.1");
  EXPECT_EQ(r0.port, 8001);
  EXPECT_EQ(r0.kind, EngineKind::kSglang);
  EXPECT_THAT(r0.models, ElementsAre("m1", "m2"));
  EXPECT_EQ(r0.kv_capacity_tokens, 460000);
  EXPECT_EQ(r0.kv_events, (KvEventsConfig{.endpoint = "tcp://127.0.0.1:5557",
                                          .topic = "kv",
                                          .replay_endpoint = "tcp://127.0.0.1:5600",
                                          .dp_ranks = 2,
                                          .route_ranks = false}));
  EXPECT_FALSE(r0.kv_events.routes_ranks());
  EXPECT_EQ(KvEventsEndpointOfRank(r0.kv_events.endpoint, 1), "tcp://127.0.0.1:5558");
  const BackendConfig& r1 = config->backends[1];
  EXPECT_EQ(r1.name, "[::1]:8002");  // default: host:port
  EXPECT_EQ(r1.host, "::1");
  EXPECT_EQ(r1.kind, EngineKind::kVllm);
  EXPECT_TRUE(r1.models.empty());
  EXPECT_EQ(r1.kv_capacity_tokens, 0);
  EXPECT_EQ(r1.kv_events.endpoint, "tcp://[::1]:5557");
  EXPECT_EQ(KvEventsEndpointOfRank(r1.kv_events.endpoint, 3), "tcp://[::1]:5560");
  EXPECT_EQ(r1.kv_events.dp_ranks, 1);
  EXPECT_TRUE(r1.kv_events.route_ranks);
  EXPECT_FALSE(r1.kv_events.routes_ranks());  // one rank: nothing to route
  EXPECT_EQ(config->timeouts.connect, Millis(1000));
  EXPECT_EQ(config->timeouts.first_byte, Millis(200000));
  EXPECT_EQ(config->timeouts.idle_stream, Millis(30000));
  EXPECT_EQ(config->retries, 1);
  EXPECT_EQ(config->health.probe_interval, Millis(500));
  EXPECT_EQ(config->health.probe_timeout, Millis(250));
  EXPECT_EQ(config->health.eject_after_failures, 5);
  EXPECT_EQ(config->health.backoff_initial, Millis(2000));
  EXPECT_EQ(config->health.backoff_max, Millis(20000));
  EXPECT_EQ(config->scrape.interval, Millis(0));
  EXPECT_EQ(config->scrape.timeout, Millis(500));
  EXPECT_EQ(config->admission.max_in_flight, 256);
  EXPECT_EQ(config->admission.max_queue, 64);
  EXPECT_EQ(config->admission.queue_timeout, Millis(1000));
  EXPECT_EQ(config->admin.token, "s3cret-token");
  EXPECT_EQ(config->observability.access_log, "/var/log/warmroute/access.log");
  EXPECT_FALSE(config->observability.response_headers);
}

TEST(GatewayConfigTest, NullValuesMeanTheDefault) {
  absl::StatusOr<GatewayConfig> config =
      ParseGatewayConfig("listen:\n  port:\npolicy:\n  params:\nbackends: ~\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->listen.port, 8080);
  EXPECT_TRUE(config->backends.empty());
}

TEST(GatewayConfigTest, UnquotedScalarsReadAsStringsWhereAStringIsExpected) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(
      "backends:\n  - {name: 7, url: http://h:1, models: [7b, 1.5]}\nadmin: {token: 12345}\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->backends[0].name, "7");
  EXPECT_THAT(config->backends[0].models, ElementsAre("7b", "1.5"));
  EXPECT_EQ(config->admin.token, "12345");
}

// Every error names the key path, what was wrong with the value, and its line.
TEST(GatewayConfigTest, ErrorsNameKeyPathValueAndLine) {
  struct Case {
    std::string yaml;
    std::string expected;
  };
  const Case cases[] = {
      {"timeouts:\n  connect_ms: -3\n", "timeouts.connect_ms: must be > 0, got -3 (line 2)"},
      {"backends:\n  - url: http://a:1\n  - url: ftp://x\n",
       "backends[1].url: expected http://host:port or https://host:port, got 'ftp://x'"},
      {"listen:\n  port: 70000\n", "listen.port: must be <= 65535, got 70000 (line 2)"},
      {"listen:\n  port: \"8080\"\n", "listen.port: expected an integer, got '8080' (line 2)"},
      {"listen:\n  port: 80.5\n", "listen.port: expected an integer, got 80.5"},
      {"listen:\n  threads: -1\n", "listen.threads: must be >= 0, got -1"},
      {"listen:\n  host: \"\"\n", "listen.host: must not be empty"},
      {"listen:\n  body_limit_mb: 0\n", "listen.body_limit_mb: must be > 0, got 0"},
      {"listen:\n  idle_timeout_ms: 100000000\n",
       "listen.idle_timeout_ms: must be <= 86400000, got 100000000"},
      {"listen:\n  shutdown_grace_ms: -1\n", "listen.shutdown_grace_ms: must be >= 0, got -1"},
      {"listen: 8080\n", "listen: expected a map, got 8080 (line 1)"},
      {"listen:\n  prot: 1\n", "listen.prot: unknown key (known: host, port, threads,"},
      {"lisen:\n  port: 1\n", "lisen: unknown key (known: listen, policy, prefix_key, backends"},
      {"retries: 3\n", "retries: must be <= 2, got 3 (line 1)"},
      {"retries: -1\n", "retries: must be >= 0, got -1"},
      {"policy:\n  name: fastest\n", "policy.name: unknown routing policy 'fastest' (known: "},
      {"policy:\n  params: {balance_factr: 1.5}\n",
       "policy.params: policy warmroute has no parameter 'balance_factr'"},
      {"policy:\n  name: consistent_hash\n  params: {balance_factor: 0.5}\n",
       "policy.params: policy consistent_hash: parameter balance_factor"},
      {"policy:\n  params: {x: abc}\n", "policy.params.x: expected a number, got 'abc'"},
      {"policy:\n  params: {x: .nan}\n", "policy.params.x: must be a finite number"},
      {"policy:\n  params: [1]\n", "policy.params: expected a map, got a list"},
      {"prefix_key:\n  block_chars: 0\n", "prefix_key.block_chars: must be > 0, got 0"},
      {"prefix_key:\n  block_chars: 64\n  max_chars: 32\n",
       "prefix_key.max_chars: max_chars (32) must be 0 (the whole prompt) or >= block_chars (64) "
       "(line 3)"},
      {"prefix_key:\n  max_chars: -1\n", "prefix_key.max_chars: must be >= 0, got -1"},
      {"prefix_key:\n  mode: exact\n",
       "prefix_key.mode: expected approximate, precise or auto, got 'exact' (line 2)"},
      {"prefix_key:\n  parity_check_interval_ms: -1\n",
       "prefix_key.parity_check_interval_ms: must be >= 0, got -1"},
      {"models: {a: 1}\n", "models: expected a list, got a map"},
      {"models:\n  - tokenizer: /t\n", "models[0].name: required (line 2)"},
      {"models:\n  - {name: m, tokenizer: \"\"}\n", "models[0].tokenizer: must not be empty"},
      {"models:\n  - {name: m, block_size: 0}\n", "models[0].block_size: must be > 0, got 0"},
      {"models:\n  - {name: m, block_size: 2048}\n",
       "models[0].block_size: must be <= 1024, got 2048"},
      {"models:\n  - {name: m, tokeniser: /t}\n",
       "models[0].tokeniser: unknown key (known: name, tokenizer, block_size)"},
      {"models:\n  - {name: m}\n  - {name: m}\n",
       "models[1].name: duplicate model 'm' (also models[0]) (line 3)"},
      {"backends: {a: 1}\n", "backends: expected a list, got a map"},
      {"backends:\n  - http://a:1\n", "backends[0]: expected a map, got 'http://a:1'"},
      {"backends:\n  - name: r0\n", "backends[0].url: required"},
      {"backends:\n  - url: http://a:1\n    kind: vllm2\n",
       "backends[0].kind: unknown engine kind 'vllm2' (known: vllm, sglang, llamacpp, trtllm, "
       "openai) (line 3)"},
      {"backends:\n  - url: http://a:1\n    models: m1\n",
       "backends[0].models: expected a list, got 'm1'"},
      {"backends:\n  - url: http://a:1\n    models: [m1, \"\"]\n",
       "backends[0].models[1]: must not be empty"},
      {"backends:\n  - url: http://a:1\n    kv_capacity_tokens: -1\n",
       "backends[0].kv_capacity_tokens: must be >= 0, got -1"},
      {"backends:\n  - url: http://a:1\n    name: my backend\n",
       "backends[0].name: must be printable ASCII without spaces"},
      {"backends:\n  - url: http://a:1\n    weight: 2\n", "backends[0].weight: unknown key"},
      {"backends:\n  - {url: http://a:1, name: a/b}\n",
       "backends[0].name: must not contain '/', '?', '#' or '%'"},
      {"backends:\n  - {url: http://a:1, name: 'q?z'}\n", "backends[0].name: must not contain"},
      {"backends:\n  - {url: http://a:1, name: " + std::string(257, 'n') + "}\n",
       "backends[0].name: must be at most 256 characters"},
      {"backends:\n  - {name: r0, url: http://a:1}\n  - {name: r0, url: http://b:1}\n",
       "backends[1].name: duplicate backend name 'r0' (also backends[0]) (line 3)"},
      {"backends:\n  - {name: r0, url: http://a:1}\n  - {name: r1, url: 'HTTP://A:1/'}\n",
       "backends[1].url: duplicate backend url 'http://A:1' (also backends[0])"},
      {"backends:\n  - url: http://a:1\n    kv_events: {topic: kv}\n",
       "backends[0].kv_events.endpoint: required"},
      {"backends:\n  - url: http://a:1\n    kv_events: {endpoint: 'udp://h:1'}\n",
       "backends[0].kv_events.endpoint: expected tcp://HOST:PORT, got 'udp://h:1' (the scheme "
       "must be tcp://)"},
      {"backends:\n  - url: http://a:1\n    kv_events: {endpoint: 'tcp://*:5557'}\n",
       "backends[0].kv_events.endpoint: expected tcp://HOST:PORT, got 'tcp://*:5557' ('*' binds"},
      {"backends:\n  - url: http://a:1\n    kv_events: {endpoint: 'tcp://h:0'}\n",
       "the port must be a number in 1..65535"},
      {"backends:\n  - url: http://a:1\n    kv_events: {endpoint: 'tcp://h:65535', dp_ranks: 2}\n",
       "backends[0].kv_events.endpoint: port 65535 + dp_ranks - 1 = 65536 is above 65535"},
      {"backends:\n  - url: http://a:1\n    kv_events: {endpoint: 'tcp://h:1', dp_ranks: 0}\n",
       "backends[0].kv_events.dp_ranks: must be > 0, got 0 (line 3)"},
      {"backends:\n  - url: http://a:1\n    kv_events: {endpoint: 'tcp://h:1', replay: x}\n",
       "backends[0].kv_events.replay: unknown key"},
      {"models:\n  - {name: a, block_size: 16}\n  - {name: b, block_size: 32}\nbackends:\n"
       "  - {url: 'http://a:1', kv_events: {endpoint: 'tcp://h:1'}}\n",
       "backends[0].kv_events: the models backend 'a:1' serves have different block sizes (16, "
       "32)"},
      {"prefix_key: {mode: precise}\nmodels:\n  - {name: a, tokenizer: /t}\n  - {name: b}\n"
       "backends:\n  - {name: r0, url: 'http://a:1'}\n"
       "  - {name: r1, url: 'http://a:2', kv_events: {endpoint: 'tcp://h:1'}}\n",
       "prefix_key.mode precise needs kv_events on every backend (missing on: r0) and a tokenizer "
       "for every model (missing for: b)"},
      {"prefix_key: {mode: precise}\n",
       "prefix_key.mode precise needs at least one model with a tokenizer"},
      {"health:\n  eject_after_failures: 0\n", "health.eject_after_failures: must be > 0, got 0"},
      {"health:\n  backoff_initial_ms: 5000\n  backoff_max_ms: 1000\n",
       "health.backoff_max_ms: must be >= backoff_initial_ms (5000), got 1000 (line 3)"},
      {"health:\n  backoff_initial_ms: 60000\n",
       "health.backoff_max_ms: must be >= backoff_initial_ms (60000), got 30000"},
      {"scrape:\n  interval_ms: -1\n", "scrape.interval_ms: must be >= 0, got -1"},
      {"scrape:\n  timeout_ms: 0\n", "scrape.timeout_ms: must be > 0, got 0"},
      {"listen:\n  body_timeout_ms: 0\n", "listen.body_timeout_ms: must be > 0, got 0"},
      {"admission:\n  max_queue: -5\n", "admission.max_queue: must be >= 0, got -5"},
      {"admin:\n  token: \"a b\"\n", "admin.token: must be printable ASCII without spaces"},
      {"observability:\n  response_headers: yes\n",
       "observability.response_headers: expected true or false, got 'yes'"},
      {"observability:\n  access_log: \"\"\n", "observability.access_log: must not be empty"},
      {"listen:\n  port: 1\n  port: 2\n", "listen.port: duplicate key (line 3)"},
      {"- a\n- b\n", "config: expected a map, got a list"},
      {"listen:\n  port: [1\n", "YAML error"},
      {"listen:\n  tls:\n    cert_file: /nonexistent/c.pem\n    key_file: /nonexistent/k.pem\n",
       "listen.tls.cert_file: cannot read '/nonexistent/c.pem': No such file or directory "
       "(line 3)"},
      {"listen:\n  tls:\n    key_file: k.pem\n", "listen.tls.cert_file: required"},
      {"listen:\n  tls:\n    cert_file: c.pem\n    key_file: \"\"\n",
       "listen.tls.key_file: must not be empty"},
      {"listen:\n  tls: {cert_file: c, key_file: k, ca_file: x}\n",
       "listen.tls.ca_file: unknown key (known: cert_file, key_file, client_ca_file)"},
      {"backends:\n  - url: http://a:1\n    tls: {ca_file: x}\n",
       "backends[0].tls: needs an https:// url (line 3)"},
      {"backends:\n  - url: https://a:1\n    tls:\n      ca_file: /nonexistent/ca.pem\n",
       "backends[0].tls.ca_file: cannot read '/nonexistent/ca.pem': No such file or directory "
       "(line 4)"},
      {"backends:\n  - url: https://a:1\n    tls: {cert_file: /x}\n",
       "backends[0].tls.key_file: required with cert_file"},
      {"backends:\n  - url: https://a:1\n    tls: {sni: x}\n",
       "backends[0].tls.sni: unknown key (known: ca_file, cert_file, key_file, server_name)"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(c.yaml);
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(c.expected)) << c.yaml;
  }
}

TEST(GatewayConfigTest, HttpsBackendSpeaksTlsAndRoundTrips) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(
      "backends:\n  - {name: r0, url: 'HTTPS://a:8443/', tls: {server_name: vllm-0.internal}}\n"
      "  - {name: r1, url: http://b:1}\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->backends[0].url, "https://a:8443");
  EXPECT_TRUE(config->backends[0].tls.enabled);
  EXPECT_EQ(config->backends[0].tls.server_name, "vllm-0.internal");
  EXPECT_FALSE(config->backends[1].tls.enabled);
  EXPECT_FALSE(config->listen.tls.enabled());
  const std::string json = EffectiveConfigJson(*config);
  EXPECT_THAT(json, HasSubstr(R"("tls":{"server_name":"vllm-0.internal"})"));
  absl::StatusOr<GatewayConfig> again = ParseGatewayConfig(json);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->backends[0].tls, config->backends[0].tls);
  EXPECT_EQ(EffectiveConfigJson(*again), json);
}

TEST(GatewayConfigTest, ErrorCarriesKeyPathAsParam) {
  absl::Status status = ParseGatewayConfig("timeouts:\n  connect_ms: 0\n").status();
  EXPECT_EQ(ParamOf(status), "timeouts.connect_ms");
}

TEST(BackendJsonTest, ParsesOneBackendLikeAYamlEntry) {
  absl::StatusOr<BackendConfig> backend = ParseBackendJson(
      R"({"name": "r9", "url": "http://10.0.0.5:8000/", "kind": "llamacpp",
          "models": ["m"], "kv_capacity_tokens": 1000})");
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ(backend->name, "r9");
  EXPECT_EQ(backend->url, "http://10.0.0.5:8000");
  EXPECT_EQ(backend->host, "10.0.0.5");
  EXPECT_EQ(backend->port, 8000);
  EXPECT_EQ(backend->kind, EngineKind::kLlamaCpp);
  EXPECT_THAT(backend->models, ElementsAre("m"));
  EXPECT_EQ(backend->kv_capacity_tokens, 1000);

  backend = ParseBackendJson(R"({"url": "http://h:1"})");
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ(backend->name, "h:1");
  EXPECT_EQ(backend->kind, EngineKind::kVllm);
}

TEST(BackendJsonTest, SameValidationAndMessagesAsYaml) {
  struct Case {
    std::string json;
    std::string expected;
    std::string param;
  };
  const Case cases[] = {
      {R"({"url": "ftp://x"})",
       "url: expected http://host:port or https://host:port, got 'ftp://x'", "url"},
      {R"({"name": "r0"})", "url: required", "url"},
      {R"({"url": "http://h:1", "kind": "tgi"})", "kind: unknown engine kind 'tgi'", "kind"},
      {R"({"url": "http://h:1", "kv_capacity_tokens": "5"})",
       "kv_capacity_tokens: expected an integer, got '5'", "kv_capacity_tokens"},
      {R"({"url": "http://h:1", "models": [1]})", "models[0]: expected a string, got 1",
       "models[0]"},
      {R"({"url": "http://h:1", "url": "http://h:2"})", "url: duplicate key", "url"},
      {R"({"url": "http://h:1", "weight": 1})",
       "weight: unknown key (known: url, tls, name, kind, "
       "models, kv_capacity_tokens, pool, kv_events)",
       "weight"},
      {R"({"url": "http://h:1", "kv_events": {"endpoint": "tcp://h"}})",
       "kv_events.endpoint: expected tcp://HOST:PORT, got 'tcp://h' (no port)",
       "kv_events.endpoint"},
      {R"({"url": "http://h:1", "name": null, "kind": null})", "", ""},  // nulls: defaults
  };
  for (const Case& c : cases) {
    absl::StatusOr<BackendConfig> backend = ParseBackendJson(c.json);
    if (c.expected.empty()) {
      EXPECT_TRUE(backend.ok()) << c.json << ": " << backend.status();
      continue;
    }
    ASSERT_FALSE(backend.ok()) << c.json;
    EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(std::string(backend.status().message()), HasSubstr(c.expected)) << c.json;
    EXPECT_THAT(std::string(backend.status().message()), Not(HasSubstr("(line"))) << c.json;
    EXPECT_EQ(ParamOf(backend.status()), c.param) << c.json;
  }
  for (std::string_view json : {"[1]", "\"http://h:1\"", "{", ""}) {
    absl::Status status = ParseBackendJson(json).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << json;
  }
}

TEST(EffectiveConfigTest, DefaultsInFull) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig("");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(
      EffectiveConfigJson(*config),
      R"({"listen":{"host":"127.0.0.1","port":8080,"threads":0,"body_limit_mb":32,)"
      R"("header_limit_kb":64,"header_timeout_ms":10000,"body_timeout_ms":60000,)"
      R"("idle_timeout_ms":120000,)"
      R"("shutdown_grace_ms":30000},)"
      R"("policy":{"name":"warmroute","params":{}},"prefix_key":{"block_chars":64,)"
      R"("max_chars":0,"mode":"auto","parity_check_interval_ms":600000},"backends":[],)"
      R"("models":[],"timeouts":{"connect_ms":2000,"first_byte_ms":300000,)"
      R"("idle_stream_ms":60000},"retries":2,"health":{"probe_interval_ms":1000,)"
      R"("probe_timeout_ms":1000,"eject_after_failures":3,"backoff_initial_ms":1000,)"
      R"("backoff_max_ms":30000},"scrape":{"interval_ms":200,"timeout_ms":1000},)"
      R"("admission":{"max_in_flight":0,"max_queue":1024,"queue_timeout_ms":30000},)"
      R"("prewarm":{"enabled":true,"max_prefixes":1024,"max_tokens_per_s":20000,)"
      R"("max_in_flight":4,"max_target_queue_tokens":2048,"max_wait_ms":60000,)"
      R"("join_homes":3},)"
      R"("admin":{"token":""},"observability":{"access_log":"stderr","response_headers":true,)"
      R"("log_prompts":false,"dashboard":true}})");
}

TEST(PrewarmConfigTest, OnByDefaultForWarmrouteOnly) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig("");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(PrewarmOn(*config));
  config = ParseGatewayConfig("policy: {name: least_request}");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(PrewarmOn(*config));
  config = ParseGatewayConfig("policy: {name: least_request}\nprewarm: {enabled: true}");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(PrewarmOn(*config));
  config = ParseGatewayConfig(
      "prewarm: {enabled: false, max_prefixes: 64, max_tokens_per_s: 500, max_in_flight: 2,\n"
      "  max_target_queue_tokens: 0, max_wait_ms: 5000, join_homes: 1}");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(PrewarmOn(*config));
  EXPECT_EQ(config->prewarm.max_prefixes, 64);
  EXPECT_EQ(config->prewarm.max_tokens_per_s, 500);
  EXPECT_EQ(config->prewarm.max_in_flight, 2);
  EXPECT_EQ(config->prewarm.max_target_queue_tokens, 0);
  EXPECT_EQ(config->prewarm.max_wait, Millis(5000));
  EXPECT_EQ(config->prewarm.join_homes, 1);
}

TEST(PrewarmConfigTest, ErrorsNameTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"prewarm: {enabled: maybe}", "prewarm.enabled"},
      {"prewarm: {max_prefixes: -1}", "prewarm.max_prefixes"},
      {"prewarm: {max_tokens_per_s: 0}", "prewarm.max_tokens_per_s"},
      {"prewarm: {max_in_flight: 0}", "prewarm.max_in_flight"},
      {"prewarm: {max_wait_ms: 0}", "prewarm.max_wait_ms"},
      {"prewarm: {join_homes: 100}", "prewarm.join_homes"},
      {"prewarm: {max_prefix: 10}", "prewarm.max_prefix"},
      {"prewarm: 3", "prewarm"},
  };
  for (const auto& [yaml, key] : cases) {
    absl::Status status = ParseGatewayConfig(yaml).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << yaml;
    EXPECT_THAT(status.message(), HasSubstr(key)) << yaml;
  }
}

TEST(EffectiveConfigTest, RedactsTheAdminToken) {
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(kFullConfig);
  ASSERT_TRUE(config.ok()) << config.status();
  const std::string json = EffectiveConfigJson(*config);
  EXPECT_THAT(json, HasSubstr(R"("admin":{"token":"<redacted>"})"));
  EXPECT_THAT(json, Not(HasSubstr("s3cret")));
}

// The effective JSON (a YAML flow document) parses back to the same config.
TEST(EffectiveConfigTest, RoundTripsThroughTheParser) {
  std::string yaml(kFullConfig);
  yaml.replace(yaml.find("token: s3cret-token"), 19, "token: \"\"");
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(yaml);
  ASSERT_TRUE(config.ok()) << config.status();
  const std::string json = EffectiveConfigJson(*config);
  EXPECT_THAT(json, HasSubstr(R"("params":{"balance_factor":1.5,"prefix_blocks":8})"));
  EXPECT_THAT(json,
              HasSubstr(R"({"name":"r0","url":"http://127.0.0.1:8001","kind":"sglang",)"
                        R"("models":["m1","m2"],"kv_capacity_tokens":460000,"pool":"default",)"
                        R"("kv_events":{"endpoint":"tcp://127.0.0.1:5557","topic":"kv",)"
                        R"("replay_endpoint":"tcp://127.0.0.1:5600","dp_ranks":2,)"
                        R"("route_ranks":false}})"));
  absl::StatusOr<GatewayConfig> again = ParseGatewayConfig(json);
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << json;
  EXPECT_EQ(EffectiveConfigJson(*again), json);
  EXPECT_EQ(again->backends[1].host, "::1");
}

class LoadGatewayConfigTest : public ::testing::Test {
 protected:
  std::string WriteFile(std::string_view name, std::string_view text) {
    const std::string path = ::testing::TempDir() + "/" + std::string(name);
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(LoadGatewayConfigTest, MissingFileIsNotFoundNamingThePath) {
  const std::string path = ::testing::TempDir() + "/no-such-dir/gateway.yaml";
  absl::Status status = LoadGatewayConfig(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr("cannot read config file '" + path + "'"));
}

TEST_F(LoadGatewayConfigTest, DirectoryIsAnErrorNamingThePath) {
  const std::string path = ::testing::TempDir();
  absl::Status status = LoadGatewayConfig(path).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr(path));
}

TEST_F(LoadGatewayConfigTest, ParseErrorsArePrefixedWithThePath) {
  const std::string path = WriteFile("bad_gateway.yaml", "listen:\n  port: -1\n");
  absl::Status status = LoadGatewayConfig(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), path + ": listen.port: must be >= 0, got -1 (line 2)");
  EXPECT_EQ(ParamOf(status), "listen.port");
}

TEST_F(LoadGatewayConfigTest, LoadsAValidFile) {
  const std::string path = WriteFile("good_gateway.yaml", "listen: {port: 0}\n");
  absl::StatusOr<GatewayConfig> config = LoadGatewayConfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->listen.port, 0);
}

// deploy/<policy>.yaml: one example per routing policy, each valid, each naming its own policy
// and the four local vLLM backends.
TEST(DeployConfigsTest, EveryPolicyHasAValidExample) {
  const std::filesystem::path dir = std::filesystem::path(WARMROUTE_SOURCE_DIR) / "deploy";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::set<std::string> policies_with_file;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    absl::StatusOr<GatewayConfig> config = LoadGatewayConfig(entry.path().string());
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->policy.name, entry.path().stem().string());
    policies_with_file.insert(config->policy.name);
    ASSERT_EQ(config->backends.size(), 4u);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(config->backends[i].url, "http://127.0.0.1:" + std::to_string(8001 + i));
      EXPECT_EQ(config->backends[i].kind, EngineKind::kVllm);
    }
  }
  for (const std::string& policy : routing::PolicyNames()) {
    EXPECT_TRUE(policies_with_file.count(policy)) << "no deploy/" << policy << ".yaml";
  }
  EXPECT_EQ(files, static_cast<int>(routing::PolicyNames().size()));
}

}  // namespace
}  // namespace warmroute::gateway
