// The gateway's configuration (`warmroute serve --config FILE`): parsed once from YAML into an
// immutable GatewayConfig, every value validated, defaults filled in. The admin API's "add
// backend" body is one backend entry in JSON, validated by the same code.
//
// Schema (every key optional unless noted; unknown keys are errors; a key given as null means
// its default). Defaults are the member initialisers below.
//   listen:        host, port (0..65535, 0 = ephemeral), threads (0 = all cores), body_limit_mb,
//                  header_limit_kb, header_timeout_ms, body_timeout_ms, idle_timeout_ms,
//                  shutdown_grace_ms,
//                  tls: {cert_file, key_file (both required), client_ca_file} (absent: plaintext)
//   policy:        name (routing::PolicyNames), params (name -> number), validated by building
//                  the policy with routing::MakePolicy
//   prefix_key:    block_chars (> 0), max_chars (0: the whole prompt, else >= block_chars), mode
//                  (approximate | precise | auto), parity_check_interval_ms (>= 0; 0: only when a
//                  backend joins). mode precise requires every backend to have kv_events and
//                  every model a tokenizer (the error names those that do not)
//   models:        list of {name (required, unique), tokenizer (a directory holding
//                  tokenizer.json and tokenizer_config.json), block_size (the engine's KV block
//                  size, 1..1024)}: the models whose requests get precise prefix keys
//                  (gateway/keys/key_modes.h); the files are loaded by the gateway
//                  (gateway/keys/model_tokenizers.h), not here
//   backends:      list of {name (default host:port of the url), url (required,
//                  http://host:port or https://host:port),
//                  kind (vllm|sglang|llamacpp|trtllm|openai), models ([] = any),
//                  kv_capacity_tokens (0 = unknown), pool (default "default"), tls: {ca_file,
//                  cert_file, key_file, server_name} (only with an https:// url), kv_events:
//                  {endpoint, topic, replay_endpoint, dp_ranks} (its engine's KV-event
//                  publisher: kv_events_config.h)}; names and urls (host:port) unique
//   discovery:     {dns (required: "name:port", or an SRV name "_svc._proto.name"), interval_ms,
//                  timeout_ms, resolver, and a backend's kind, models, kv_capacity_tokens, pool,
//                  kv_events ("{host}" in its endpoints: each discovered address)}: backends
//                  from DNS (discovery_config.h, docs/discovery.md)
//   gossip:        {port, host, peers, interval_ms, resolve_interval_ms}: placement gossip between
//                  the gateway replicas of one fleet (gossip_config.h, docs/many-gateways.md)
//   timeouts:      connect_ms, first_byte_ms (request sent -> response head), idle_stream_ms
//                  (between two body reads of a response)
//   retries:       0..2
//   health:        probe_interval_ms, probe_timeout_ms, eject_after_failures, backoff_initial_ms,
//                  backoff_max_ms (>= backoff_initial_ms)
//   scrape:        interval_ms (0 = no scraping), timeout_ms
//   admission:     max_in_flight (0 = unlimited), max_queue (beyond: 429), queue_timeout_ms
//   admin:         token (bearer token; empty = admin API disabled)
//   observability: access_log (stderr | off | a file path), response_headers, log_prompts, dashboard,
//                  sample_requests {file, rate}
//   tenancy, tenants, rate_limits: API keys, tenants, isolation and limits (tenancy_config.h)
//   normalize:     list of {tenant, model, collapse_whitespace, canonical_tools, move_to_end}:
//                  opt-in prompt rewrites per tenant and/or model (normalize_config.h)
// Durations are in milliseconds, > 0 (scrape.interval_ms >= 0) and at most one day.
// TLS files are read and checked while parsing (net/tls/tls.h): "listen.tls.cert_file: cannot read
// '/x': No such file or directory", "listen.tls.key_file: the private key in ... does not match".
// Errors are InvalidArgument naming the key path and the value, with the YAML line when known:
//   "backends[1].url: expected http://host:port or https://host:port, got 'ftp://x' (the scheme
//    must be http:// or https://) (line 12)", "timeouts.connect_ms: must be > 0, got -3 (line 20)",
//   "line 4, column 3: YAML error: ..." for a syntax error.
// The offending key path is also attached as the status's param (common/status.h).
// See deploy/*.yaml for a complete example per routing policy.
//
// Usage:
//   absl::StatusOr<GatewayConfig> config = LoadGatewayConfig("deploy/warmroute.yaml");
//   if (!config.ok()) { std::cerr << config.status().message(); return 2; }
//   spdlog::info("config: {}", EffectiveConfigJson(*config));
//   absl::StatusOr<BackendConfig> b = ParseBackendJson(R"({"url": "http://10.0.0.5:8000"})");
//
// Thread-safety: pure functions; a GatewayConfig is an immutable value once parsed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/routing/policies/param_reader.h"
#include "core/routing/policy_registry.h"
#include "core/routing/prefix_key.h"
#include "gateway/config/backend_config.h"
#include "gateway/config/discovery_config.h"
#include "gateway/config/gossip_config.h"
#include "gateway/config/kv_events_config.h"
#include "gateway/config/normalize_config.h"
#include "gateway/config/tenancy_config.h"
#include "gateway/fleet/engine_metrics.h"

namespace warmroute::gateway {

using Millis = std::chrono::milliseconds;

// listen.tls: TLS termination on the client listener (net/http1/http_server.h). Absent: plaintext.
struct ListenTlsConfig {
  std::string cert_file;       // PEM certificate chain (required)
  std::string key_file;        // PEM private key of that certificate (required)
  std::string client_ca_file;  // set: clients must present a certificate signed by these CAs
  bool enabled() const { return !cert_file.empty(); }
  bool operator==(const ListenTlsConfig&) const = default;
};

// listen.threads at most (and the --threads flag): each worker thread has its own event loop
// and descriptors.
inline constexpr int kMaxListenThreads = 1024;

struct ListenConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0: ephemeral
  int threads = 0;       // 0: one per core
  int64_t body_limit_mb = 32;
  int64_t header_limit_kb = 64;
  Millis header_timeout{10'000};  // a request's first byte to the end of its head (slowloris)
  Millis body_timeout{60'000};    // the end of a request's head to the end of its body
  Millis idle_timeout{120'000};
  // SIGTERM/SIGINT: how long requests in progress may run on before they are cut (0: cut at
  // once). Read when the signal arrives, so a reload changes it.
  Millis shutdown_grace{30'000};
  ListenTlsConfig tls;
};

struct PolicyConfig {
  std::string name{routing::kDefaultPolicy};
  routing::PolicyParams params;  // overrides of the policy's defaults
};

struct TimeoutsConfig {
  Millis connect{2'000};
  Millis first_byte{300'000};  // request sent -> response head
  Millis idle_stream{60'000};  // between two body reads of a response
};

struct HealthConfig {
  Millis probe_interval{1'000};
  Millis probe_timeout{1'000};
  int eject_after_failures = 3;  // consecutive connect failures or 5xx
  Millis backoff_initial{1'000};
  Millis backoff_max{30'000};
};

struct ScrapeConfig {
  Millis interval{200};  // 0: no scraping
  Millis timeout{1'000};
};

struct AdmissionConfig {
  int64_t max_in_flight = 0;  // 0: unlimited; beyond it requests wait in a queue
  int64_t max_queue = 1024;   // waiting requests beyond this get 429
  Millis queue_timeout{30'000};
};

// prewarm: what the gateway sends a backend that joins, and the others when one leaves
// (gateway/fleet/prewarmer.h; the rule and its defaults' reasons: core/routing/prewarm_planner.h).
struct PrewarmConfig {
  std::optional<bool> enabled;             // unset: on for policy warmroute (see PrewarmOn)
  int64_t max_prefixes = 1024;             // hot prefixes kept (their prompts in memory only)
  double max_tokens_per_s = 20000;         // prompt tokens per second of prewarm, all backends
  int64_t max_in_flight = 4;               // prewarm requests in flight (one per backend)
  int64_t max_target_queue_tokens = 2048;  // a job waits while its target has more prefill queued
  Millis max_wait{60'000};                 // a job older than this is dropped
  int64_t join_homes = 3;  // a join prewarms the prefixes it is among the first join_homes homes of
  bool operator==(const PrewarmConfig&) const = default;
};

struct AdminConfig {
  std::string token;  // bearer token; empty: admin API disabled
};

struct ObservabilityConfig {
  std::string access_log = "stderr";  // "stderr", "off" or a file path
  bool response_headers = true;       // x-warmroute-backend / x-warmroute-reason
  bool log_prompts = false;           // the access log carries each request's prompt text
  bool dashboard = true;              // GET /dashboard (its data behind the admin token if set)
  // sample_requests: {file, rate}: that share (0 < rate <= 1) of the prompt requests written to
  // `file` as clients sent them (observability/request_sample.h); "" = off. Needs a restart.
  std::string sample_file;
  double sample_rate = 0;
};

// prefix_key.mode: how requests are keyed (gateway/keys/key_modes.h).
enum class PrefixKeyMode {
  kApproximate,  // the rendered text's character blocks, for every model; no KV events
  kPrecise,      // as kAuto, but every backend must publish KV events and every model have a
                 // tokenizer (ValidatePreciseMode)
  kAuto,         // exact token ids for the models given a tokenizer, text blocks for the others;
                 // the KV events of the backends that configure kv_events
};
std::string_view PrefixKeyModeName(PrefixKeyMode mode);

// models[i].
struct ModelConfig {
  std::string name;       // the model name clients send
  std::string tokenizer;  // a directory with tokenizer.json and tokenizer_config.json; "": none
  int block_size = 16;    // the engine's KV block size (vLLM --block-size)
  bool operator==(const ModelConfig&) const = default;
};

struct GatewayConfig {
  ListenConfig listen;
  PolicyConfig policy;
  // Only block_chars and max_chars come from the config; the rest keep their defaults.
  routing::PrefixKeyOptions prefix_key;
  PrefixKeyMode prefix_key_mode = PrefixKeyMode::kAuto;
  // How often each backend's /tokenize is compared with the gateway's ids, besides when it
  // joins (gateway/keys/parity_schedule.h). 0: only when it joins.
  Millis parity_check_interval{600'000};
  std::vector<ModelConfig> models;
  std::vector<BackendConfig> backends;  // may be empty (backends added by the admin API)
  DiscoveryConfig discovery;            // disabled: no backends from DNS
  GossipConfig gossip;                  // disabled: this gateway shares nothing with others
  TimeoutsConfig timeouts;
  int retries = 2;  // 0..2
  HealthConfig health;
  ScrapeConfig scrape;
  AdmissionConfig admission;
  PrewarmConfig prewarm;
  AdminConfig admin;
  ObservabilityConfig observability;
  TenancyConfig tenancy;  // sections tenancy, tenants, rate_limits
  NormalizeConfig normalize;
};

// Whether the gateway prewarms: prewarm.enabled, else true for policy warmroute.
bool PrewarmOn(const GatewayConfig& config);

// The config of a YAML document (an empty document gives every default).
absl::StatusOr<GatewayConfig> ParseGatewayConfig(std::string_view yaml);

// The config in file `path`. Errors name the path: NotFound / PermissionDenied / ... when it
// cannot be read ("cannot read config file '<path>': <reason>"), else ParseGatewayConfig's error
// prefixed with "<path>: ".
absl::StatusOr<GatewayConfig> LoadGatewayConfig(const std::string& path);

// One backend from a JSON object with the keys of a `backends` entry, validated the same way
// (key paths without the "backends[i]." prefix). Uniqueness against the running fleet is the
// caller's to check.
absl::StatusOr<BackendConfig> ParseBackendJson(std::string_view json);

// mode precise: InvalidArgument naming the backends without kv_events and the models without
// a tokenizer ("prefix_key.mode precise needs kv_events on every backend (missing: r0, r1) ...").
// OK in the other modes.
absl::Status ValidatePreciseMode(const GatewayConfig& config);

// The engine block size of a backend's KV events: the block_size of the models it serves that
// are configured (of every configured model when it serves any); 16 when none is. Several
// different sizes: InvalidArgument naming them (its events could not be matched to all of them).
absl::StatusOr<int> KvEventsBlockSize(const GatewayConfig& config, const BackendConfig& backend);

// The pools and kinds of `backends`, for ValidateTenancy.
std::vector<PoolMember> PoolMembers(const std::vector<BackendConfig>& backends);

// Every effective value of `config` as one JSON object with the YAML's keys and nesting
// (durations as *_ms integers; the admin token and the salt secret as "<redacted>" when set,
// tenants' API key digests as their count "api_keys"). Policy params list the overrides given;
// the policy's own defaults are documented in its file. Without a token and tenants the JSON is
// itself a valid config that parses back to `config`.
std::string EffectiveConfigJson(const GatewayConfig& config);

}  // namespace warmroute::gateway
