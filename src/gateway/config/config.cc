#include "gateway/config/config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_writer.h"
#include "common/status.h"
#include "gateway/config/backend_url.h"
#include "gateway/config/config_document.h"
#include "gateway/config/config_reader.h"
#include "net/tls/tls.h"

// The schema walker (MapReader and the typed readers) is gateway/config/config_reader.h.

namespace warmroute::gateway {
namespace {

using Type = ConfigNode::Type;

constexpr size_t kMaxConfigFileBytes = size_t{16} << 20;

// An optional file path: absent leaves `out` as it is, given it must not be empty.
absl::Status ReadPath(const ConfigNode* node, std::string_view path, std::string* out) {
  if (node == nullptr) return absl::OkStatus();
  return ReadNonEmptyString(node, path, out);
}

// An error of net/tls/tls.h (its param names the option at fault) as an error of key
// `tls_path`.<option>, with the line of that option when given.
absl::Status TlsKeyError(const absl::Status& status, const std::string& tls_path,
                         const ConfigNode* tls_node) {
  const std::string option = ParamOf(status).value_or("");
  const ConfigNode* at = tls_node;
  if (tls_node != nullptr) {
    for (const auto& [key, value] : tls_node->entries) {
      if (key == option) at = &value;
    }
  }
  return KeyError(option.empty() ? tls_path : absl::StrCat(tls_path, ".", option), at,
                  std::string(status.message()));
}

// listen.tls; the files are read and checked by building the TLS context.
absl::Status ParseListenTls(MapReader& listen, ListenTlsConfig* out) {
  const ConfigNode* node = listen.Get("tls");
  if (node == nullptr) return absl::OkStatus();
  const std::string path = listen.PathOf("tls");
  WR_RETURN_IF_ERROR(MapReader::CheckMap(*node, path));
  MapReader map(*node, path);
  const ConfigNode* cert = map.Get("cert_file");
  const ConfigNode* key = map.Get("key_file");
  if (cert == nullptr) return KeyError(map.PathOf("cert_file"), node, "required");
  if (key == nullptr) return KeyError(map.PathOf("key_file"), node, "required");
  WR_RETURN_IF_ERROR(ReadPath(cert, map.PathOf("cert_file"), &out->cert_file));
  WR_RETURN_IF_ERROR(ReadPath(key, map.PathOf("key_file"), &out->key_file));
  WR_RETURN_IF_ERROR(
      ReadPath(map.Get("client_ca_file"), map.PathOf("client_ca_file"), &out->client_ca_file));
  WR_RETURN_IF_ERROR(map.CheckNoUnknownKeys());
  const absl::StatusOr<std::shared_ptr<net::TlsContext>> context = net::MakeTlsServerContext(
      {.cert_file = out->cert_file, .key_file = out->key_file,
       .client_ca_file = out->client_ca_file});
  if (!context.ok()) return TlsKeyError(context.status(), path, node);
  return absl::OkStatus();
}

// backends[i].tls. REQUIRES: out->tls.enabled is set from the url.
absl::Status ParseBackendTls(MapReader& backend, BackendConfig* out) {
  const ConfigNode* node = backend.Get("tls");
  const std::string path = backend.PathOf("tls");
  BackendTlsConfig& tls = out->tls;
  if (node != nullptr) {
    if (!tls.enabled) return KeyError(path, node, "needs an https:// url");
    WR_RETURN_IF_ERROR(MapReader::CheckMap(*node, path));
    MapReader map(*node, path);
    WR_RETURN_IF_ERROR(ReadPath(map.Get("ca_file"), map.PathOf("ca_file"), &tls.ca_file));
    WR_RETURN_IF_ERROR(ReadPath(map.Get("cert_file"), map.PathOf("cert_file"), &tls.cert_file));
    WR_RETURN_IF_ERROR(ReadPath(map.Get("key_file"), map.PathOf("key_file"), &tls.key_file));
    const ConfigNode* name = map.Get("server_name");
    WR_RETURN_IF_ERROR(ReadPath(name, map.PathOf("server_name"), &tls.server_name));
    WR_RETURN_IF_ERROR(CheckToken(name, map.PathOf("server_name"), tls.server_name));
    WR_RETURN_IF_ERROR(map.CheckNoUnknownKeys());
  }
  if (!tls.enabled) return absl::OkStatus();
  const absl::StatusOr<std::shared_ptr<net::TlsContext>> context = net::MakeTlsClientContext(
      {.ca_file = tls.ca_file, .cert_file = tls.cert_file, .key_file = tls.key_file});
  if (!context.ok()) return TlsKeyError(context.status(), path, node);
  return absl::OkStatus();
}

absl::Status ParseListen(MapReader& map, ListenConfig* out) {
  WR_RETURN_IF_ERROR(ReadNonEmptyString(map.Get("host"), map.PathOf("host"), &out->host));
  WR_RETURN_IF_ERROR(ReadSmallInt(map.Get("port"), map.PathOf("port"), 0, 65535, &out->port));
  WR_RETURN_IF_ERROR(
      ReadSmallInt(map.Get("threads"), map.PathOf("threads"), 0, kMaxListenThreads, &out->threads));
  WR_RETURN_IF_ERROR(
      ReadInt(map.Get("body_limit_mb"), map.PathOf("body_limit_mb"), 1, 4096, &out->body_limit_mb));
  WR_RETURN_IF_ERROR(ReadInt(map.Get("header_limit_kb"), map.PathOf("header_limit_kb"), 1, 65536,
                             &out->header_limit_kb));
  WR_RETURN_IF_ERROR(ReadMillis(map.Get("header_timeout_ms"), map.PathOf("header_timeout_ms"), 1,
                                &out->header_timeout));
  WR_RETURN_IF_ERROR(
      ReadMillis(map.Get("body_timeout_ms"), map.PathOf("body_timeout_ms"), 1, &out->body_timeout));
  WR_RETURN_IF_ERROR(ReadMillis(map.Get("shutdown_grace_ms"), map.PathOf("shutdown_grace_ms"), 0,
                                &out->shutdown_grace));
  WR_RETURN_IF_ERROR(ParseListenTls(map, &out->tls));
  return ReadMillis(map.Get("idle_timeout_ms"), map.PathOf("idle_timeout_ms"), 1,
                    &out->idle_timeout);
}

absl::Status ParsePolicy(MapReader& map, PolicyConfig* out) {
  const ConfigNode* name = map.Get("name");
  WR_RETURN_IF_ERROR(ReadNonEmptyString(name, map.PathOf("name"), &out->name));
  const ConfigNode* params = map.Get("params");
  if (params != nullptr) {
    WR_RETURN_IF_ERROR(MapReader::CheckMap(*params, map.PathOf("params")));
    for (const auto& [key, value] : params->entries) {
      double number = 0;
      WR_RETURN_IF_ERROR(ReadDouble(&value, absl::StrCat(map.PathOf("params"), ".", key), &number));
      out->params[key] = number;
    }
  }
  absl::StatusOr<std::unique_ptr<routing::Policy>> policy =
      routing::MakePolicy(out->name, out->params);
  if (policy.status().code() == absl::StatusCode::kNotFound) {
    return KeyError(map.PathOf("name"), name, std::string(policy.status().message()));
  }
  if (!policy.ok()) {
    return KeyError(map.PathOf("params"), params, std::string(policy.status().message()));
  }
  return absl::OkStatus();
}

absl::Status ParsePrefixKeyMode(MapReader& map, GatewayConfig* out) {
  const ConfigNode* mode = map.Get("mode");
  if (mode != nullptr) {
    std::string text;
    WR_RETURN_IF_ERROR(ReadString(mode, map.PathOf("mode"), &text));
    constexpr PrefixKeyMode kModes[] = {PrefixKeyMode::kApproximate, PrefixKeyMode::kPrecise,
                                        PrefixKeyMode::kAuto};
    bool found = false;
    for (PrefixKeyMode m : kModes) {
      if (text == PrefixKeyModeName(m)) {
        out->prefix_key_mode = m;
        found = true;
      }
    }
    if (!found) {
      return WrongType(map.PathOf("mode"), *mode, "approximate, precise or auto");
    }
  }
  return ReadMillis(map.Get("parity_check_interval_ms"), map.PathOf("parity_check_interval_ms"),
                    0, &out->parity_check_interval);
}

absl::Status ParsePrefixKey(MapReader& map, GatewayConfig* config) {
  WR_RETURN_IF_ERROR(ParsePrefixKeyMode(map, config));
  routing::PrefixKeyOptions* out = &config->prefix_key;
  WR_RETURN_IF_ERROR(ReadSmallInt(map.Get("block_chars"), map.PathOf("block_chars"), 1, 1 << 20,
                                  &out->block_chars));
  // max_chars 0 (the default) keys the whole prompt; a cap must hold at least one block.
  const ConfigNode* max_chars = map.Get("max_chars");
  WR_RETURN_IF_ERROR(
      ReadInt(max_chars, map.PathOf("max_chars"), 0, int64_t{1} << 30, &out->max_chars));
  if (out->max_chars != 0 && out->max_chars < out->block_chars) {
    return KeyError(map.PathOf("max_chars"), max_chars,
                    absl::StrCat("max_chars (", out->max_chars, ") must be 0 (the whole prompt) or >= block_chars (",
                                 out->block_chars, ")"));
  }
  return absl::OkStatus();
}

// One backend entry; `map`'s path is "backends[i]" (or "" for the admin API's JSON body).

// A backend's name is also a path segment of the admin API (/admin/backends/<name>/drain): one
// holding '/', '?', '#' or '%' could never be drained or removed there, and it is a label of
// several series on /metrics, so it is bounded.
constexpr size_t kMaxBackendNameChars = 256;

absl::Status CheckBackendName(const ConfigNode* node, std::string_view path,
                              std::string_view name) {
  if (name.size() > kMaxBackendNameChars) {
    return KeyError(path, node,
                    absl::StrCat("must be at most ", kMaxBackendNameChars, " characters"));
  }
  if (name.find_first_of("/?#%") != std::string_view::npos) {
    return KeyError(path, node,
                    "must not contain '/', '?', '#' or '%' (it names the backend in the admin "
                    "API's paths)");
  }
  return absl::OkStatus();
}

absl::Status ParseBackend(MapReader& map, BackendConfig* out) {
  const ConfigNode* url = map.Get("url");
  if (url == nullptr) return KeyError(map.PathOf("url"), nullptr, "required");
  std::string url_text;
  WR_RETURN_IF_ERROR(ReadString(url, map.PathOf("url"), &url_text));
  absl::StatusOr<HttpHostPort> address = ParseBackendUrl(url_text);
  if (!address.ok()) {
    return KeyError(map.PathOf("url"), url, std::string(address.status().message()));
  }
  out->url = CanonicalBackendUrl(*address);
  out->host = address->host;
  out->port = address->port;
  out->tls.enabled = address->tls;
  WR_RETURN_IF_ERROR(ParseBackendTls(map, out));

  out->name = HostPortString(*address);
  const ConfigNode* name = map.Get("name");
  WR_RETURN_IF_ERROR(ReadNonEmptyString(name, map.PathOf("name"), &out->name));
  WR_RETURN_IF_ERROR(CheckToken(name, map.PathOf("name"), out->name));
  WR_RETURN_IF_ERROR(CheckBackendName(name, map.PathOf("name"), out->name));

  WR_RETURN_IF_ERROR(ParseBackendTraits(map, out));
  return map.CheckNoUnknownKeys();
}

}  // namespace

absl::Status ParseBackendTraits(MapReader& map, BackendConfig* out) {
  const ConfigNode* kind = map.Get("kind");
  if (kind != nullptr) {
    std::string kind_text;
    WR_RETURN_IF_ERROR(ReadString(kind, map.PathOf("kind"), &kind_text));
    absl::StatusOr<EngineKind> parsed = ParseEngineKind(kind_text);
    if (!parsed.ok()) {
      return KeyError(map.PathOf("kind"), kind, std::string(parsed.status().message()));
    }
    out->kind = *parsed;
  }

  WR_RETURN_IF_ERROR(ReadStringList(map.Get("models"), map.PathOf("models"), &out->models));
  WR_RETURN_IF_ERROR(ReadInt(map.Get("kv_capacity_tokens"), map.PathOf("kv_capacity_tokens"), 0,
                             int64_t{1} << 40, &out->kv_capacity_tokens));
  const ConfigNode* pool = map.Get("pool");
  WR_RETURN_IF_ERROR(ReadNonEmptyString(pool, map.PathOf("pool"), &out->pool));
  WR_RETURN_IF_ERROR(CheckToken(pool, map.PathOf("pool"), out->pool));
  return ParseKvEventsConfig(map, &out->kv_events);
}

void WriteBackendTraits(const BackendConfig& b, JsonWriter& w) {
  w.Key("kind").String(EngineKindName(b.kind));
  w.Key("models").BeginArray();
  for (const std::string& model : b.models) w.String(model);
  w.EndArray();
  w.Key("kv_capacity_tokens").Int(b.kv_capacity_tokens);
  w.Key("pool").String(b.pool);
  WriteKvEventsConfig(b.kv_events, w);
}

namespace {

absl::Status ParseBackends(const ConfigNode& list, std::vector<BackendConfig>* out) {
  return ReadMapList(list, "backends", [out](size_t, MapReader& map, const ConfigNode& item) {
    BackendConfig backend;
    WR_RETURN_IF_ERROR(ParseBackend(map, &backend));
    for (size_t j = 0; j < out->size(); ++j) {
      const BackendConfig& other = (*out)[j];
      if (other.name == backend.name) {
        return KeyError(
            map.PathOf("name"), &item,
            absl::StrCat("duplicate backend name '", backend.name, "' (also backends[", j, "])"));
      }
      if (other.port == backend.port &&
          absl::AsciiStrToLower(other.host) == absl::AsciiStrToLower(backend.host)) {
        return KeyError(
            map.PathOf("url"), &item,
            absl::StrCat("duplicate backend url '", backend.url, "' (also backends[", j, "])"));
      }
    }
    out->push_back(std::move(backend));
    return absl::OkStatus();
  });
}

absl::Status ParseModels(const ConfigNode& list, std::vector<ModelConfig>* out) {
  return ReadMapList(list, "models", [out](size_t, MapReader& map, const ConfigNode& item) {
    ModelConfig model;
    const ConfigNode* name = map.Get("name");
    if (name == nullptr) return KeyError(map.PathOf("name"), &item, "required");
    WR_RETURN_IF_ERROR(ReadNonEmptyString(name, map.PathOf("name"), &model.name));
    WR_RETURN_IF_ERROR(ReadPath(map.Get("tokenizer"), map.PathOf("tokenizer"), &model.tokenizer));
    WR_RETURN_IF_ERROR(ReadSmallInt(map.Get("block_size"), map.PathOf("block_size"), 1, 1024,
                                    &model.block_size));
    WR_RETURN_IF_ERROR(map.CheckNoUnknownKeys());
    for (size_t j = 0; j < out->size(); ++j) {
      if ((*out)[j].name == model.name) {
        return KeyError(map.PathOf("name"), name,
                        absl::StrCat("duplicate model '", model.name, "' (also models[", j, "])"));
      }
    }
    out->push_back(std::move(model));
    return absl::OkStatus();
  });
}

absl::Status ParseTimeouts(MapReader& map, TimeoutsConfig* out) {
  WR_RETURN_IF_ERROR(ReadMillis(map.Get("connect_ms"), map.PathOf("connect_ms"), 1, &out->connect));
  WR_RETURN_IF_ERROR(
      ReadMillis(map.Get("first_byte_ms"), map.PathOf("first_byte_ms"), 1, &out->first_byte));
  return ReadMillis(map.Get("idle_stream_ms"), map.PathOf("idle_stream_ms"), 1, &out->idle_stream);
}

absl::Status ParseHealth(MapReader& map, HealthConfig* out) {
  WR_RETURN_IF_ERROR(ReadMillis(map.Get("probe_interval_ms"), map.PathOf("probe_interval_ms"), 1,
                                &out->probe_interval));
  WR_RETURN_IF_ERROR(ReadMillis(map.Get("probe_timeout_ms"), map.PathOf("probe_timeout_ms"), 1,
                                &out->probe_timeout));
  WR_RETURN_IF_ERROR(ReadSmallInt(map.Get("eject_after_failures"),
                                  map.PathOf("eject_after_failures"), 1, 1000,
                                  &out->eject_after_failures));
  WR_RETURN_IF_ERROR(ReadMillis(map.Get("backoff_initial_ms"), map.PathOf("backoff_initial_ms"), 1,
                                &out->backoff_initial));
  const ConfigNode* backoff_max = map.Get("backoff_max_ms");
  WR_RETURN_IF_ERROR(ReadMillis(backoff_max, map.PathOf("backoff_max_ms"), 1, &out->backoff_max));
  if (out->backoff_max < out->backoff_initial) {
    return KeyError(map.PathOf("backoff_max_ms"), backoff_max,
                    absl::StrCat("must be >= backoff_initial_ms (", out->backoff_initial.count(),
                                 "), got ", out->backoff_max.count()));
  }
  return absl::OkStatus();
}

absl::Status ParseScrape(MapReader& map, ScrapeConfig* out) {
  WR_RETURN_IF_ERROR(
      ReadMillis(map.Get("interval_ms"), map.PathOf("interval_ms"), 0, &out->interval));
  return ReadMillis(map.Get("timeout_ms"), map.PathOf("timeout_ms"), 1, &out->timeout);
}

absl::Status ParseAdmission(MapReader& map, AdmissionConfig* out) {
  WR_RETURN_IF_ERROR(ReadInt(map.Get("max_in_flight"), map.PathOf("max_in_flight"), 0, 1'000'000,
                             &out->max_in_flight));
  WR_RETURN_IF_ERROR(
      ReadInt(map.Get("max_queue"), map.PathOf("max_queue"), 0, 10'000'000, &out->max_queue));
  return ReadMillis(map.Get("queue_timeout_ms"), map.PathOf("queue_timeout_ms"), 1,
                    &out->queue_timeout);
}

absl::Status ParsePrewarm(MapReader& map, PrewarmConfig* out) {
  if (const ConfigNode* enabled = map.Get("enabled"); enabled != nullptr) {
    bool on = false;
    WR_RETURN_IF_ERROR(ReadBool(enabled, map.PathOf("enabled"), &on));
    out->enabled = on;
  }
  WR_RETURN_IF_ERROR(ReadInt(map.Get("max_prefixes"), map.PathOf("max_prefixes"), 0, 1'000'000,
                             &out->max_prefixes));
  const ConfigNode* rate = map.Get("max_tokens_per_s");
  WR_RETURN_IF_ERROR(ReadDouble(rate, map.PathOf("max_tokens_per_s"), &out->max_tokens_per_s));
  if (!(out->max_tokens_per_s > 0)) {
    return KeyError(map.PathOf("max_tokens_per_s"), rate,
                    absl::StrCat("must be > 0, got ", out->max_tokens_per_s));
  }
  WR_RETURN_IF_ERROR(
      ReadInt(map.Get("max_in_flight"), map.PathOf("max_in_flight"), 1, 1024, &out->max_in_flight));
  WR_RETURN_IF_ERROR(ReadInt(map.Get("max_target_queue_tokens"),
                             map.PathOf("max_target_queue_tokens"), 0, int64_t{1} << 40,
                             &out->max_target_queue_tokens));
  WR_RETURN_IF_ERROR(
      ReadMillis(map.Get("max_wait_ms"), map.PathOf("max_wait_ms"), 1, &out->max_wait));
  return ReadInt(map.Get("join_homes"), map.PathOf("join_homes"), 0, 64, &out->join_homes);
}

absl::Status ParseAdmin(MapReader& map, AdminConfig* out) {
  const ConfigNode* token = map.Get("token");
  WR_RETURN_IF_ERROR(ReadString(token, map.PathOf("token"), &out->token));
  return CheckToken(token, map.PathOf("token"), out->token);
}

absl::Status ParseObservability(MapReader& map, ObservabilityConfig* out) {
  WR_RETURN_IF_ERROR(
      ReadNonEmptyString(map.Get("access_log"), map.PathOf("access_log"), &out->access_log));
  WR_RETURN_IF_ERROR(ReadBool(map.Get("response_headers"), map.PathOf("response_headers"),
                              &out->response_headers));
  WR_RETURN_IF_ERROR(
      ReadBool(map.Get("log_prompts"), map.PathOf("log_prompts"), &out->log_prompts));
  WR_RETURN_IF_ERROR(ReadBool(map.Get("dashboard"), map.PathOf("dashboard"), &out->dashboard));
  const ConfigNode* sample = map.Get("sample_requests");
  if (sample == nullptr) return absl::OkStatus();
  const std::string path = map.PathOf("sample_requests");
  WR_RETURN_IF_ERROR(MapReader::CheckMap(*sample, path));
  MapReader s(*sample, path);
  const ConfigNode* file = s.Get("file");
  if (file == nullptr) return KeyError(s.PathOf("file"), sample, "required");
  WR_RETURN_IF_ERROR(ReadNonEmptyString(file, s.PathOf("file"), &out->sample_file));
  const ConfigNode* rate = s.Get("rate");
  if (rate == nullptr) return KeyError(s.PathOf("rate"), sample, "required");
  WR_RETURN_IF_ERROR(ReadDouble(rate, s.PathOf("rate"), &out->sample_rate));
  if (!(out->sample_rate > 0 && out->sample_rate <= 1)) {
    return KeyError(s.PathOf("rate"), rate, "must be > 0 and <= 1");
  }
  return s.CheckNoUnknownKeys();
}

// Reads section `key` of `root` with `parse` when present.
template <typename T>
absl::Status ParseSection(MapReader& root, std::string_view key,
                          absl::Status (*parse)(MapReader&, T*), T* out) {
  const ConfigNode* node = root.Get(key);
  if (node == nullptr) return absl::OkStatus();
  WR_RETURN_IF_ERROR(MapReader::CheckMap(*node, key));
  MapReader map(*node, std::string(key));
  WR_RETURN_IF_ERROR(parse(map, out));
  return map.CheckNoUnknownKeys();
}

}  // namespace

std::string_view PrefixKeyModeName(PrefixKeyMode mode) {
  switch (mode) {
    case PrefixKeyMode::kApproximate:
      return "approximate";
    case PrefixKeyMode::kPrecise:
      return "precise";
    case PrefixKeyMode::kAuto:
      return "auto";
  }
  return "auto";
}

absl::Status ValidatePreciseMode(const GatewayConfig& config) {
  if (config.prefix_key_mode != PrefixKeyMode::kPrecise) return absl::OkStatus();
  std::vector<std::string> no_events, no_tokenizer;
  for (const BackendConfig& b : config.backends) {
    if (!b.kv_events.enabled()) no_events.push_back(b.name);
  }
  if (config.discovery.enabled() && !config.discovery.backend.kv_events.enabled()) {
    no_events.push_back("discovery");
  }
  for (const ModelConfig& m : config.models) {
    if (m.tokenizer.empty()) no_tokenizer.push_back(m.name);
  }
  std::vector<std::string> problems;
  if (!no_events.empty()) {
    problems.push_back(absl::StrCat(
        "kv_events on every backend (missing on: ", absl::StrJoin(no_events, ", "), ")"));
  }
  if (!no_tokenizer.empty()) {
    problems.push_back(absl::StrCat(
        "a tokenizer for every model (missing for: ", absl::StrJoin(no_tokenizer, ", "), ")"));
  }
  if (config.models.empty()) problems.push_back("at least one model with a tokenizer (models)");
  if (problems.empty()) return absl::OkStatus();
  return WithParam(absl::InvalidArgumentError(absl::StrCat(
                       "prefix_key.mode precise needs ", absl::StrJoin(problems, " and "),
                       "; use mode auto to subscribe where kv_events are configured")),
                   "prefix_key.mode");
}

absl::StatusOr<int> KvEventsBlockSize(const GatewayConfig& config, const BackendConfig& backend) {
  std::vector<int> sizes;
  for (const ModelConfig& m : config.models) {
    const bool served =
        backend.models.empty() ||
        std::find(backend.models.begin(), backend.models.end(), m.name) != backend.models.end();
    if (served && std::find(sizes.begin(), sizes.end(), m.block_size) == sizes.end()) {
      sizes.push_back(m.block_size);
    }
  }
  if (sizes.empty()) return 16;
  if (sizes.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the models backend '", backend.name, "' serves have different block sizes (",
                     absl::StrJoin(sizes, ", "), "); one engine publishes one block size"));
  }
  return sizes.front();
}

std::vector<PoolMember> PoolMembers(const std::vector<BackendConfig>& backends) {
  std::vector<PoolMember> out;
  out.reserve(backends.size());
  for (const BackendConfig& b : backends) out.push_back({b.name, b.pool, b.kind});
  return out;
}

namespace {

absl::StatusOr<GatewayConfig> ParseDocument(const ConfigNode& doc) {
  GatewayConfig config;
  if (doc.type == Type::kNull) return config;
  WR_RETURN_IF_ERROR(MapReader::CheckMap(doc, ""));
  MapReader root(doc, "");
  WR_RETURN_IF_ERROR(ParseSection(root, "listen", &ParseListen, &config.listen));
  WR_RETURN_IF_ERROR(ParseSection(root, "policy", &ParsePolicy, &config.policy));
  WR_RETURN_IF_ERROR(ParseSection(root, "prefix_key", &ParsePrefixKey, &config));
  if (const ConfigNode* backends = root.Get("backends"); backends != nullptr) {
    WR_RETURN_IF_ERROR(ParseBackends(*backends, &config.backends));
  }
  if (const ConfigNode* models = root.Get("models"); models != nullptr) {
    WR_RETURN_IF_ERROR(ParseModels(*models, &config.models));
  }
  WR_RETURN_IF_ERROR(ParseSection(root, "discovery", &ParseDiscoveryConfig, &config.discovery));
  WR_RETURN_IF_ERROR(ParseSection(root, "gossip", &ParseGossipConfig, &config.gossip));
  WR_RETURN_IF_ERROR(ParseSection(root, "timeouts", &ParseTimeouts, &config.timeouts));
  WR_RETURN_IF_ERROR(ReadSmallInt(root.Get("retries"), "retries", 0, 2, &config.retries));
  WR_RETURN_IF_ERROR(ParseSection(root, "health", &ParseHealth, &config.health));
  WR_RETURN_IF_ERROR(ParseSection(root, "scrape", &ParseScrape, &config.scrape));
  WR_RETURN_IF_ERROR(ParseSection(root, "admission", &ParseAdmission, &config.admission));
  WR_RETURN_IF_ERROR(ParseSection(root, "prewarm", &ParsePrewarm, &config.prewarm));
  WR_RETURN_IF_ERROR(ParseSection(root, "admin", &ParseAdmin, &config.admin));
  WR_RETURN_IF_ERROR(
      ParseSection(root, "observability", &ParseObservability, &config.observability));
  WR_RETURN_IF_ERROR(ParseTenancy(root, &config.tenancy));
  WR_RETURN_IF_ERROR(ParseNormalize(root, &config.normalize));
  WR_RETURN_IF_ERROR(root.CheckNoUnknownKeys());
  WR_RETURN_IF_ERROR(ValidateNormalizeTenants(config.normalize, config.tenancy));
  std::vector<PoolMember> members = PoolMembers(config.backends);
  if (config.discovery.enabled()) {
    members.push_back({"discovery", config.discovery.backend.pool, config.discovery.backend.kind});
  }
  WR_RETURN_IF_ERROR(ValidateTenancy(config.tenancy, members));
  for (size_t i = 0; i < config.backends.size(); ++i) {
    if (!config.backends[i].kv_events.enabled()) continue;
    absl::StatusOr<int> block_size = KvEventsBlockSize(config, config.backends[i]);
    if (!block_size.ok()) {
      return KeyError(absl::StrCat("backends[", i, "].kv_events"), nullptr,
                      std::string(block_size.status().message()));
    }
  }
  if (config.discovery.backend.kv_events.enabled()) {
    absl::StatusOr<int> block_size = KvEventsBlockSize(config, config.discovery.backend);
    if (!block_size.ok()) {
      return KeyError("discovery.kv_events", nullptr, std::string(block_size.status().message()));
    }
  }
  WR_RETURN_IF_ERROR(ValidatePreciseMode(config));
  return config;
}

// Adds `prefix` to the message of a non-OK `status`, keeping its code and param.
absl::Status Prefixed(const absl::Status& status, std::string_view prefix) {
  absl::Status out(status.code(), absl::StrCat(std::string(prefix), status.message()));
  if (std::optional<std::string> param = ParamOf(status)) out = WithParam(out, *param);
  return out;
}

}  // namespace

absl::StatusOr<GatewayConfig> ParseGatewayConfig(std::string_view yaml) {
  WR_ASSIGN_OR_RETURN(const ConfigNode doc, ParseYamlDocument(yaml));
  return ParseDocument(doc);
}

absl::StatusOr<GatewayConfig> LoadGatewayConfig(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  const auto read_error = [&path](int error) {
    return absl::ErrnoToStatus(error, absl::StrCat("cannot read config file '", path, "'"));
  };
  if (file == nullptr) return read_error(errno);
  std::string text;
  char buffer[64 * 1024];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file.get())) > 0) {
    text.append(buffer, n);
    if (text.size() > kMaxConfigFileBytes) {
      return absl::InvalidArgumentError(absl::StrCat("config file '", path, "' is larger than ",
                                                     kMaxConfigFileBytes >> 20, " MiB"));
    }
  }
  if (std::ferror(file.get())) return read_error(errno);
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(text);
  if (!config.ok()) return Prefixed(config.status(), absl::StrCat(path, ": "));
  return config;
}

absl::StatusOr<BackendConfig> ParseBackendJson(std::string_view json) {
  WR_ASSIGN_OR_RETURN(const ConfigNode doc, ParseJsonDocument(json));
  if (doc.type != Type::kMap) return WrongType("backend", doc, "a JSON object");
  WR_RETURN_IF_ERROR(MapReader::CheckMap(doc, ""));
  MapReader map(doc, "");
  BackendConfig backend;
  WR_RETURN_IF_ERROR(ParseBackend(map, &backend));
  return backend;
}

bool PrewarmOn(const GatewayConfig& config) {
  return config.prewarm.enabled.value_or(config.policy.name == "warmroute");
}

std::string EffectiveConfigJson(const GatewayConfig& config) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();

  const ListenConfig& listen = config.listen;
  w.Key("listen").BeginObject();
  w.Key("host").String(listen.host);
  w.Key("port").Int(listen.port);
  w.Key("threads").Int(listen.threads);
  w.Key("body_limit_mb").Int(listen.body_limit_mb);
  w.Key("header_limit_kb").Int(listen.header_limit_kb);
  w.Key("header_timeout_ms").Int(listen.header_timeout.count());
  w.Key("body_timeout_ms").Int(listen.body_timeout.count());
  w.Key("idle_timeout_ms").Int(listen.idle_timeout.count());
  w.Key("shutdown_grace_ms").Int(listen.shutdown_grace.count());
  if (listen.tls.enabled()) {
    w.Key("tls").BeginObject();
    w.Key("cert_file").String(listen.tls.cert_file);
    w.Key("key_file").String(listen.tls.key_file);
    if (!listen.tls.client_ca_file.empty()) {
      w.Key("client_ca_file").String(listen.tls.client_ca_file);
    }
    w.EndObject();
  }
  w.EndObject();

  w.Key("policy").BeginObject();
  w.Key("name").String(config.policy.name);
  w.Key("params").BeginObject();
  for (const auto& [key, value] : config.policy.params) w.Key(key).Double(value);
  w.EndObject();
  w.EndObject();

  w.Key("prefix_key").BeginObject();
  w.Key("block_chars").Int(config.prefix_key.block_chars);
  w.Key("max_chars").Int(config.prefix_key.max_chars);
  w.Key("mode").String(PrefixKeyModeName(config.prefix_key_mode));
  w.Key("parity_check_interval_ms").Int(config.parity_check_interval.count());
  w.EndObject();


  w.Key("backends").BeginArray();
  for (const BackendConfig& b : config.backends) {
    w.BeginObject();
    w.Key("name").String(b.name);
    w.Key("url").String(b.url);
    WriteBackendTraits(b, w);
    if (b.tls.enabled) {
      // Only the keys given: an absent key means its default, an empty one is an error.
      w.Key("tls").BeginObject();
      const std::pair<const char*, const std::string*> keys[] = {
          {"ca_file", &b.tls.ca_file},
          {"cert_file", &b.tls.cert_file},
          {"key_file", &b.tls.key_file},
          {"server_name", &b.tls.server_name}};
      for (const auto& [key, value] : keys) {
        if (!value->empty()) w.Key(key).String(*value);
      }
      w.EndObject();
    }
    w.EndObject();
  }
  w.EndArray();

  WriteDiscoveryConfig(config.discovery, w);
  WriteGossipConfig(config.gossip, w);
  WriteNormalizeConfig(config.normalize, w);

  w.Key("models").BeginArray();
  for (const ModelConfig& m : config.models) {
    w.BeginObject();
    w.Key("name").String(m.name);
    if (!m.tokenizer.empty()) w.Key("tokenizer").String(m.tokenizer);
    w.Key("block_size").Int(m.block_size);
    w.EndObject();
  }
  w.EndArray();

  w.Key("timeouts").BeginObject();
  w.Key("connect_ms").Int(config.timeouts.connect.count());
  w.Key("first_byte_ms").Int(config.timeouts.first_byte.count());
  w.Key("idle_stream_ms").Int(config.timeouts.idle_stream.count());
  w.EndObject();

  w.Key("retries").Int(config.retries);

  const HealthConfig& health = config.health;
  w.Key("health").BeginObject();
  w.Key("probe_interval_ms").Int(health.probe_interval.count());
  w.Key("probe_timeout_ms").Int(health.probe_timeout.count());
  w.Key("eject_after_failures").Int(health.eject_after_failures);
  w.Key("backoff_initial_ms").Int(health.backoff_initial.count());
  w.Key("backoff_max_ms").Int(health.backoff_max.count());
  w.EndObject();

  w.Key("scrape").BeginObject();
  w.Key("interval_ms").Int(config.scrape.interval.count());
  w.Key("timeout_ms").Int(config.scrape.timeout.count());
  w.EndObject();

  w.Key("admission").BeginObject();
  w.Key("max_in_flight").Int(config.admission.max_in_flight);
  w.Key("max_queue").Int(config.admission.max_queue);
  w.Key("queue_timeout_ms").Int(config.admission.queue_timeout.count());
  w.EndObject();

  const PrewarmConfig& prewarm = config.prewarm;
  w.Key("prewarm").BeginObject();
  w.Key("enabled").Bool(PrewarmOn(config));
  w.Key("max_prefixes").Int(prewarm.max_prefixes);
  w.Key("max_tokens_per_s").Double(prewarm.max_tokens_per_s);
  w.Key("max_in_flight").Int(prewarm.max_in_flight);
  w.Key("max_target_queue_tokens").Int(prewarm.max_target_queue_tokens);
  w.Key("max_wait_ms").Int(prewarm.max_wait.count());
  w.Key("join_homes").Int(prewarm.join_homes);
  w.EndObject();

  w.Key("admin").BeginObject();
  w.Key("token").String(config.admin.token.empty() ? "" : "<redacted>");
  w.EndObject();

  w.Key("observability").BeginObject();
  w.Key("access_log").String(config.observability.access_log);
  w.Key("response_headers").Bool(config.observability.response_headers);
  w.Key("log_prompts").Bool(config.observability.log_prompts);
  w.Key("dashboard").Bool(config.observability.dashboard);
  if (!config.observability.sample_file.empty()) {
    w.Key("sample_requests").BeginObject();
    w.Key("file").String(config.observability.sample_file);
    w.Key("rate").Double(config.observability.sample_rate);
    w.EndObject();
  }
  w.EndObject();

  const TenancyConfig& tenancy = config.tenancy;
  if (tenancy.enabled()) {
    w.Key("tenancy").BeginObject();
    w.Key("salt_secret").String("<redacted>");
    if (!tenancy.anonymous_tenant.empty()) {
      w.Key("anonymous_tenant").String(tenancy.anonymous_tenant);
    }
    w.EndObject();
    w.Key("tenants").BeginArray();
    for (const TenantConfig& t : tenancy.tenants) {
      w.BeginObject();
      w.Key("name").String(t.name);
      w.Key("api_keys").Int(static_cast<int64_t>(t.api_key_digests.size()));
      w.Key("models").BeginArray();
      for (const std::string& model : t.models) w.String(model);
      w.EndArray();
      w.Key("pools").BeginArray();
      for (const std::string& pool : t.pools) w.String(pool);
      w.EndArray();
      if (t.shared_group.empty()) {
        w.Key("isolation").String("isolated");
      } else {
        w.Key("isolation").BeginObject().Key("shared_group").String(t.shared_group).EndObject();
      }
      w.Key("weight").Double(t.weight);
      w.Key("rate_limits").BeginObject();
      if (t.limits.requests) {
        w.Key("requests_per_s").Double(t.limits.requests->rate_per_s);
        w.Key("requests_burst").Double(t.limits.requests->burst);
      }
      if (t.limits.prompt_tokens) {
        w.Key("prompt_tokens_per_s").Double(t.limits.prompt_tokens->rate_per_s);
        w.Key("prompt_tokens_burst").Double(t.limits.prompt_tokens->burst);
      }
      w.Key("max_concurrent").Int(t.limits.max_concurrent);
      w.EndObject();
      w.EndObject();
    }
    w.EndArray();
  }
  if (!tenancy.redis_url.empty()) {
    w.Key("rate_limits").BeginObject();
    w.Key("redis").String(tenancy.redis_url);
    w.Key("redis_timeout_ms").Int(tenancy.redis_timeout.count());
    w.EndObject();
  }

  w.EndObject();
  return out;
}

}  // namespace warmroute::gateway
