#include "emulator/kv_events_config.h"

#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/status.h"
#include "core/request/json_fields.h"
#include "simdjson.h"

namespace warmroute::emulator {
namespace {

using simdjson::dom::element;

constexpr std::string_view kFlag = "kv-events-config";

absl::Status Bad(std::string_view message) {
  return InvalidParam(kFlag, absl::StrCat("--kv-events-config: ", AbslView(message)));
}

// A JSON string (null only where `nullable`).
absl::Status ReadString(element value, std::string_view key, bool nullable, std::string& out) {
  if (value.is_null() && nullable) {
    out.clear();
    return absl::OkStatus();
  }
  if (!value.is_string()) {
    return Bad(absl::StrCat("'", AbslView(key), "' must be a string", nullable ? " or null" : "",
                            ", got ", AbslView(request::JsonTypeName(value.type()))));
  }
  out.assign(value.get_string().value_unsafe());
  return absl::OkStatus();
}

absl::Status ReadInt(element value, std::string_view key, int64_t min, int64_t max, int64_t& out) {
  const std::optional<int64_t> n =
      request::IsJsonNumber(value) ? request::AsInt64(value) : std::nullopt;
  if (!n || *n < min || *n > max) {
    return Bad(absl::StrCat("'", AbslView(key), "' must be an integer in [", min, ", ", max,
                            "], got ", simdjson::minify(value)));
  }
  out = *n;
  return absl::OkStatus();
}

// tcp://HOST:PORT (PORT in [1, 65535] or "*"), ipc://PATH or inproc://NAME.
absl::Status CheckEndpoint(std::string_view key, const std::string& endpoint) {
  if (endpoint.starts_with("ipc://") || endpoint.starts_with("inproc://")) {
    if (endpoint.find("://") + 3 < endpoint.size()) return absl::OkStatus();
  } else if (endpoint.starts_with("tcp://")) {
    const size_t colon = endpoint.rfind(':');
    const std::string_view port = std::string_view(endpoint).substr(colon + 1);
    const bool has_host = colon > 6;
    int64_t value = 0;
    bool numeric = !port.empty() && port.size() <= 5;
    for (const char c : port) {
      numeric = numeric && c >= '0' && c <= '9';
      value = value * 10 + (c - '0');
    }
    if (has_host && (port == "*" || (numeric && value >= 1 && value <= 65535))) {
      return absl::OkStatus();
    }
  }
  return Bad(absl::StrCat("'", AbslView(key),
                          "' must be tcp://HOST:PORT, ipc://PATH or inproc://NAME, got '", endpoint,
                          "'"));
}

}  // namespace

absl::StatusOr<KvEventsConfig> ParseKvEventsConfig(std::string_view json) {
  simdjson::dom::parser parser;
  const std::string padded(json);  // simdjson reads past the end of unpadded input otherwise
  absl::StatusOr<simdjson::dom::object> fields = request::ParseJsonObject(parser, padded);
  if (!fields.ok()) {
    return Bad(absl::StrCat("not a JSON object (", fields.status().message(), ")"));
  }
  KvEventsConfig config;
  std::optional<std::string> publisher;
  for (simdjson::dom::key_value_pair field : *fields) {
    const std::string_view key = field.key;
    const element value = field.value;
    if (key == "enable_kv_cache_events") {
      if (!value.is_bool()) {
        return Bad(absl::StrCat("'enable_kv_cache_events' must be true or false, got ",
                                AbslView(request::JsonTypeName(value.type()))));
      }
      config.enable_kv_cache_events = value.get_bool().value_unsafe();
    } else if (key == "publisher") {
      std::string name;
      WR_RETURN_IF_ERROR(ReadString(value, key, /*nullable=*/true, name));
      if (!value.is_null()) publisher = name;
    } else if (key == "endpoint") {
      WR_RETURN_IF_ERROR(ReadString(value, key, /*nullable=*/false, config.endpoint));
    } else if (key == "replay_endpoint") {
      WR_RETURN_IF_ERROR(ReadString(value, key, /*nullable=*/true, config.replay_endpoint));
    } else if (key == "topic") {
      WR_RETURN_IF_ERROR(ReadString(value, key, /*nullable=*/false, config.topic));
    } else if (key == "buffer_steps") {
      WR_RETURN_IF_ERROR(ReadInt(value, key, 0, 100'000'000, config.buffer_steps));
    } else if (key == "hwm") {
      WR_RETURN_IF_ERROR(ReadInt(value, key, 0, INT32_MAX, config.hwm));
    } else if (key == "max_queue_size") {
      WR_RETURN_IF_ERROR(ReadInt(value, key, INT64_MIN, INT64_MAX, config.max_queue_size));
    } else {
      return Bad(
          absl::StrCat("unknown key '", AbslView(key),
                       "' (vLLM's KVEventsConfig has enable_kv_cache_events, publisher, endpoint, "
                       "replay_endpoint, buffer_steps, hwm, max_queue_size, topic)"));
    }
  }
  // vLLM's KVEventsConfig.__post_init__: the publisher defaults by enable_kv_cache_events.
  config.publisher = publisher.value_or(config.enable_kv_cache_events ? "zmq" : "null");
  if (config.publisher != "zmq" && config.publisher != "null") {
    return Bad(
        absl::StrCat("unknown publisher '", config.publisher, "' (vLLM has 'zmq' and 'null')"));
  }
  WR_RETURN_IF_ERROR(CheckEndpoint("endpoint", config.endpoint));
  if (!config.replay_endpoint.empty()) {
    WR_RETURN_IF_ERROR(CheckEndpoint("replay_endpoint", config.replay_endpoint));
    if (config.replay_endpoint == config.endpoint) {
      return Bad("'replay_endpoint' must differ from 'endpoint'");
    }
  }
  return config;
}

absl::Status ApplyKvEventsConfig(std::string_view json, FleetOptions& fleet) {
  WR_ASSIGN_OR_RETURN(const KvEventsConfig config, ParseKvEventsConfig(json));
  fleet.kv_events = config.publishes();
  fleet.kv_events_endpoint = config.endpoint;
  fleet.kv_events_replay_endpoint = config.replay_endpoint;
  fleet.kv_events_topic = config.topic;
  fleet.kv_events_buffer_steps = static_cast<size_t>(config.buffer_steps);
  fleet.kv_events_hwm = static_cast<int>(config.hwm);
  return absl::OkStatus();
}

}  // namespace warmroute::emulator
