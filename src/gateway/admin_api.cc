#include "gateway/admin_api.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/json_writer.h"
#include "gateway/config/config.h"

namespace warmroute::gateway {
namespace {

constexpr std::string_view kPrefix = "/admin/backends/";

net::Task<void> ReplyJson(net::ResponseWriter& writer, int status, std::string body) {
  net::ResponseHead head;
  head.status = status;
  (void)co_await writer.Reply(std::move(head), std::move(body));
}

// A scraped load sample (null: none yet); `age_s` < 0: not written.
void WriteMetrics(JsonWriter& w, const std::optional<routing::EngineMetricsSample>& metrics,
                  double age_s) {
  if (!metrics) {
    w.Null();
    return;
  }
  w.BeginObject();
  w.Key("num_running").Int(metrics->num_running);
  w.Key("num_waiting").Int(metrics->num_waiting);
  w.Key("kv_usage").Double(metrics->kv_usage);
  if (age_s >= 0) w.Key("age_s").Double(age_s);
  w.EndObject();
}

std::string_view KvEventStateText(routing::KvEventState state) {
  switch (state) {
    case routing::KvEventState::kNone:
      return "none";
    case routing::KvEventState::kPrecise:
      return "precise";
    case routing::KvEventState::kUncertain:
      return "uncertain";
  }
  return "none";
}

// "routing_targets": null for a backend that is one routing target; else each rank's target
// (gateway/fleet/rank_targets.h) as the Router sees it, rank 0 first.
void WriteRanks(JsonWriter& w, const BackendSnapshot& b) {
  w.Key("routing_targets");
  if (b.ranks.empty()) {
    w.Null();
    return;
  }
  w.BeginArray();
  for (const RankSnapshot& r : b.ranks) {
    w.BeginObject();
    w.Key("name").String(r.target->name);
    w.Key("dp_rank").Int(r.target->dp_rank);
    w.Key("in_flight").Int(r.in_flight);
    w.Key("outstanding_prefill_tokens").Int(r.outstanding_prefill_tokens);
    w.Key("running_decodes").Int(r.running_decodes);
    w.Key("dispatched_total").Int(r.dispatched_total);
    w.Key("kv_capacity_tokens").Int(r.kv_capacity_tokens);
    w.Key("prefill_tokens_per_s").Double(r.prefill_tokens_per_s);
    w.Key("index_entries").Int(r.index_entries);
    w.Key("kv_event_state").String(KvEventStateText(r.kv_event_state));
    w.Key("metrics");
    WriteMetrics(w, r.metrics, -1);
    w.EndObject();
  }
  w.EndArray();
}

// The backend's kv_events config and, once subscribed, its feed's state and counts.
void WriteKvEvents(JsonWriter& w, const BackendSnapshot& b) {
  const KvEventsConfig& config = b.target->kv_events;
  w.Key("kv_events");
  if (!config.enabled()) {
    w.Null();
    return;
  }
  w.BeginObject();
  w.Key("endpoint").String(config.endpoint);
  w.Key("topic").String(config.topic);
  w.Key("replay_endpoint").String(config.replay_endpoint);
  w.Key("dp_ranks").Int(config.dp_ranks);
  w.Key("route_ranks").Bool(config.routes_ranks());
  w.Key("subscribed").Bool(b.kv_events.subscribed);
  w.Key("state").String(b.kv_events.subscribed ? kv_events::StreamStateName(b.kv_events.state)
                                               : "unsubscribed");
  const kv_events::FeedCounters& c = b.kv_events.counters;
  w.Key("applied").Int(c.applied);
  w.Key("replayed").Int(c.replayed);
  w.Key("duplicates").Int(c.duplicates);
  w.Key("malformed").Int(c.malformed);
  w.Key("missed").Int(c.missed);
  w.Key("restarts").Int(c.restarts);
  w.Key("clears").Int(c.clears);
  w.Key("rebuilds").Int(c.rebuilds);
  w.Key("blocks").Int(b.kv_events.blocks);
  w.Key("last_error").String(b.kv_events.last_error);
  // Each data-parallel rank's stream (the backend's state is precise when every rank's is).
  w.Key("ranks").BeginArray();
  for (const KvEventsRankStatus& rank : b.kv_events.ranks) {
    w.BeginObject();
    w.Key("state").String(kv_events::StreamStateName(rank.state));
    w.Key("applied").Int(rank.applied);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

AdminApi::AdminApi(Backends& backends, std::function<std::string()> effective_config,
                   std::function<std::string()> token,
                   std::function<absl::Status(const BackendConfig&)> check_backend,
                   Prewarmer* prewarmer)
    : backends_(backends),
      effective_config_(std::move(effective_config)),
      token_(std::move(token)),
      check_backend_(std::move(check_backend)),
      prewarmer_(prewarmer) {}

std::string AdminApi::BackendsJson() const {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("backends").BeginArray();
  for (const BackendSnapshot& b : backends_.Snapshot()) {
    w.BeginObject();
    w.Key("name").String(b.target->name);
    w.Key("url").String(b.target->url);
    w.Key("kind").String(EngineKindName(b.target->kind));
    w.Key("pool").String(b.target->pool);
    w.Key("models").BeginArray();
    for (const std::string& m : b.target->models) w.String(m);
    w.EndArray();
    w.Key("discovered_models").BeginArray();
    for (const std::string& m : b.discovered_models) w.String(m);
    w.EndArray();
    w.Key("state").String(b.state);
    w.Key("eligible").Bool(b.eligible);
    w.Key("in_flight").Int(b.in_flight);
    w.Key("outstanding_prefill_tokens").Int(b.outstanding_prefill_tokens);
    w.Key("running_decodes").Int(b.running_decodes);
    w.Key("dispatched_total").Int(b.dispatched_total);
    w.Key("kv_capacity_tokens").Int(b.kv_capacity_tokens);
    w.Key("prefill_tokens_per_s").Double(b.prefill_tokens_per_s);
    w.Key("index_entries").Int(b.index_entries);
    w.Key("ejections").Int(b.ejections);
    WriteKvEvents(w, b);
    w.Key("metrics");
    WriteMetrics(w, b.metrics, b.metrics_age_s);
    WriteRanks(w, b);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return out;
}

absl::Status CheckBearerToken(const net::HttpRequest& request, std::string_view token) {
  const absl::StatusOr<std::string_view> credentials = request.SingleHeader("Authorization");
  if (!credentials.ok()) return credentials.status();
  const std::string_view auth = *credentials;
  // The scheme is case-insensitive (RFC 9110 11.1): "bearer x" is "Bearer x".
  constexpr std::string_view kBearer = "bearer ";
  if (!net::HeaderNameIs(auth.substr(0, kBearer.size()), kBearer) ||
      !ConstantTimeEquals(auth.substr(kBearer.size()), token)) {
    return absl::UnauthenticatedError("this needs 'Authorization: Bearer <admin.token>'");
  }
  return absl::OkStatus();
}

net::Task<void> AdminApi::Handle(net::HttpRequest& request, net::ResponseWriter& writer) {
  const std::string token = token_();
  if (token.empty()) {
    absl::Status status = absl::NotFoundError("the admin API is disabled (set admin.token)");
    (void)co_await writer.ReplyError(status);
    co_return;
  }
  if (absl::Status authorized = CheckBearerToken(request, token); !authorized.ok()) {
    (void)co_await writer.ReplyError(authorized);
    co_return;
  }
  const std::string& path = request.path;
  const std::string& method = request.method;
  absl::Status result = absl::OkStatus();
  const bool get = method == "GET" || method == "HEAD";  // the server leaves a HEAD's body out
  if (path == "/admin/backends" || path == "/admin/backends/") {
    if (get) {
      std::string body = BackendsJson();
      co_await ReplyJson(writer, 200, std::move(body));
      co_return;
    }
    if (method == "POST") {
      absl::StatusOr<BackendConfig> config = ParseBackendJson(request.body);
      if (config.ok()) result = check_backend_(*config);
      if (!config.ok()) {
        result = config.status();
      } else if (result.ok()) {
        auto added = backends_.Add(*config, /*await_first_probe=*/true);
        if (!added.ok()) {
          result = added.status();
        } else {
          spdlog::info("admin: added backend {} ({})", (*added)->name, (*added)->url);
          if (prewarmer_ != nullptr) prewarmer_->OnJoined((*added)->name);
          std::string body = absl::StrCat("{\"added\":", JsonString((*added)->name), "}");
          co_await ReplyJson(writer, 201, std::move(body));
          co_return;
        }
      }
    } else {
      co_await net::ReplyMethodNotAllowed(writer, request, "GET, HEAD, POST");
      co_return;
    }
  } else if (path.rfind(kPrefix, 0) == 0) {
    std::string name = path.substr(kPrefix.size());
    std::string action;
    if (const size_t slash = name.find('/'); slash != std::string::npos) {
      action = name.substr(slash + 1);
      name.resize(slash);
    }
    if (action.empty() && method == "DELETE") {
      if (prewarmer_ != nullptr) prewarmer_->OnLeaving(name);  // while the Router knows it
      result = backends_.Remove(name);
      if (result.ok()) spdlog::info("admin: removed backend {}", name);
    } else if ((action == "drain" || action == "undrain") && method == "POST") {
      result = backends_.SetDraining(name, action == "drain");
      if (result.ok() && action == "drain" && prewarmer_ != nullptr) prewarmer_->OnLeaving(name);
      if (result.ok()) spdlog::info("admin: {} backend {}", action, name);
    } else if (action.empty() || action == "drain" || action == "undrain") {
      co_await net::ReplyMethodNotAllowed(writer, request, action.empty() ? "DELETE" : "POST");
      co_return;
    } else {
      result = absl::NotFoundError(absl::StrCat(
          "no admin route ", method, " ", path,
          ": use DELETE /admin/backends/{name} or POST /admin/backends/{name}/drain|undrain"));
    }
    if (result.ok()) {
      std::string body =
          absl::StrCat("{\"backend\":", JsonString(name),
                       ",\"done\":", JsonString(action.empty() ? "removed" : action), "}");
      co_await ReplyJson(writer, 200, std::move(body));
      co_return;
    }
  } else if (path == "/admin/config") {
    if (!get) {
      co_await net::ReplyMethodNotAllowed(writer, request, "GET, HEAD");
      co_return;
    }
    std::string body = effective_config_();
    co_await ReplyJson(writer, 200, std::move(body));
    co_return;
  } else {
    result = absl::NotFoundError(absl::StrCat("no admin route ", method, " ", path));
  }
  (void)co_await writer.ReplyError(result);
}

}  // namespace warmroute::gateway
