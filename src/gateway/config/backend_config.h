// One backend's configuration (a `backends:` entry, the admin API's "add backend" body, and the
// template `discovery:` gives the backends it finds), split from config.h so that the sections
// that build backends (discovery_config.h) can hold one. The schema is in config.h.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/json_writer.h"
#include "gateway/config/config_reader.h"
#include "gateway/config/kv_events_config.h"
#include "gateway/config/tenancy_config.h"
#include "gateway/fleet/engine_metrics.h"

namespace warmroute::gateway {

// backends[i].tls: TLS (and optionally mTLS) to an https:// backend (net/http1/http_client.h); also
// used by its health probes and metrics scrapes.
struct BackendTlsConfig {
  bool enabled = false;     // the url is https://
  std::string ca_file;      // PEM CAs that verify the backend; empty: the system's CA store
  std::string cert_file;    // PEM client certificate presented to the backend, with key_file
  std::string key_file;
  std::string server_name;  // SNI and the name its certificate must match; empty: the url's host
  bool operator==(const BackendTlsConfig&) const = default;
};

struct BackendConfig {
  std::string name;  // unique; default: host:port
  std::string url;   // canonical: "http://host:port" or "https://..." (no trailing '/')
  std::string host;  // IPv6 without brackets
  uint16_t port = 0;
  BackendTlsConfig tls;
  EngineKind kind = EngineKind::kVllm;
  std::vector<std::string> models;  // empty: serves any model
  int64_t kv_capacity_tokens = 0;   // 0: unknown (read from the engine's metrics when it can)
  std::string pool{kDefaultPool};   // the backend pool tenants are given (tenancy_config.h)
  KvEventsConfig kv_events;         // disabled: the engine's KV events are not subscribed
  bool operator==(const BackendConfig&) const = default;
};

// Reads the keys of a backend that do not depend on its address: kind, models,
// kv_capacity_tokens, pool and kv_events (config.cc; shared by `backends:` and `discovery:`).
absl::Status ParseBackendTraits(MapReader& map, BackendConfig* out);
// Writes those keys into the JSON object being written.
void WriteBackendTraits(const BackendConfig& backend, JsonWriter& w);

}  // namespace warmroute::gateway
