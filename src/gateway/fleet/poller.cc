#include "gateway/fleet/poller.h"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <utility>
#include <vector>

#include "gateway/fleet/engine_metrics.h"
#include "gateway/fleet/model_list.h"
#include "net/detached.h"

namespace warmroute::gateway {
namespace {

namespace asio = boost::asio;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>,
                                         net::Executor>;
constexpr auto kTick = std::chrono::milliseconds(20);
constexpr size_t kMetricsLimit = size_t{16} << 20;

net::UpstreamTimeouts TimeoutsOf(std::chrono::milliseconds t) {
  return net::UpstreamTimeouts{.connect = t, .first_byte = t, .idle_stream = t};
}

// Pool options for `target` (its TLS settings: probes and scrapes go the way requests go).
net::PoolOptions PoolOptionsOf(const BackendTarget& target, size_t max_idle) {
  return net::PoolOptions{.max_idle = max_idle,
                          .tls = target.tls_context,
                          .tls_server_name = target.tls.server_name};
}

}  // namespace

// A backend's connections, made and dropped when the schedule says: they live while a poll of the
// backend runs.
struct Poller::Connections {
  Connections(net::Executor executor, const BackendTarget& target)
      : pool(executor, target.host, target.port, PoolOptionsOf(target, 2)),
        probe_pool(executor, target.host, target.port, PoolOptionsOf(target, 0)) {}
  net::UpstreamPool pool;  // scrapes and model discovery: keep-alive
  // Probes open a new connection each time: a backend that stopped accepting connections must
  // fail its probe even while old keep-alive connections to it still work.
  net::UpstreamPool probe_pool;
};

Poller::Poller(net::Executor executor, Backends& backends, const Clock& clock,
               PollerOptions options)
    : executor_(executor), backends_(backends), clock_(clock), options_(options) {}

Poller::~Poller() = default;

void Poller::Start() {
  asio::co_spawn(executor_, Loop(),
                 [](std::exception_ptr e) { net::LogIfDetachedFailed("poller loop", e); });
}

void Poller::Stop() { stopped_ = true; }

net::Task<void> Poller::Loop() {
  Timer timer(executor_);
  std::vector<PolledBackend> polled;
  for (int64_t tick = 1; !stopped_; ++tick) {
    // Once a second, the keep-alive connections the engines closed while idle are closed here too
    // (net/http1/http_client.h CloseStale): with scrapes off or far apart they would otherwise
    // wait in CLOSE-WAIT until the next scrape.
    if (tick % (std::chrono::seconds(1) / kTick) == 0) {
      for (auto& [address, connections] : connections_) connections->pool.CloseStale();
    }
    const TimePoint now = clock_.Now();
    const std::vector<std::shared_ptr<const BackendTarget>> targets = backends_.Targets();
    polled.clear();
    for (const std::shared_ptr<const BackendTarget>& target : targets) {
      polled.push_back({.address = target->address,
                        .id = target->id,
                        .models_configured = !target->models.empty(),
                        .exposes_load_metrics = ExposesLoadMetrics(target->kind),
                        .tls_identity = target->tls_context.get()});
    }
    const PollPlan plan = schedule_.Tick(now, polled, options_);
    for (const std::string& address : plan.forget) connections_.erase(address);
    for (size_t i : plan.fresh) {
      connections_[targets[i]->address] = std::make_unique<Connections>(executor_, *targets[i]);
    }
    for (const PollStart& start : plan.start) Spawn(start.kind, targets[start.backend]);
    timer.expires_after(kTick);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
  }
}

void Poller::Spawn(PollKind kind, std::shared_ptr<const BackendTarget> target) {
  Connections* connections = connections_.at(target->address).get();
  switch (kind) {
    case PollKind::kProbe:
      asio::co_spawn(executor_, Probe(std::move(target), connections),
                     [](std::exception_ptr e) { net::LogIfDetachedFailed("health probe", e); });
      break;
    case PollKind::kScrape:
      asio::co_spawn(executor_, Scrape(std::move(target), connections),
                     [](std::exception_ptr e) { net::LogIfDetachedFailed("metrics scrape", e); });
      break;
    case PollKind::kDiscovery:
      asio::co_spawn(executor_, DiscoverModels(std::move(target), connections),
                     [](std::exception_ptr e) { net::LogIfDetachedFailed("model discovery", e); });
      break;
  }
}

net::Task<void> Poller::Probe(std::shared_ptr<const BackendTarget> target,
                              Connections* connections) {
  const net::UpstreamTimeouts timeouts = TimeoutsOf(options_.probe_timeout);
  net::UpstreamRequest request{
      .method = "GET", .target = "/health", .headers = nullptr, .body = {}};
  auto exchange = co_await net::UpstreamExchange::Start(connections->probe_pool, request, timeouts);
  bool ok = false;
  std::string why;
  if (exchange.ok()) {
    auto body = co_await (*exchange)->ReadAll(1 << 16);
    ok = (*exchange)->head().status == 200 && body.ok();
    why = "status " + std::to_string((*exchange)->head().status);
  } else {
    why = std::string(exchange.status().message());
  }
  switch (schedule_.OnProbeDone(target->address, ok)) {
    case PollChange::kNone:
      break;
    case PollChange::kNowOk:
      spdlog::info("backend {} ({}): health probe ok", target->name, target->url);
      break;
    case PollChange::kNowFailed:
      spdlog::warn("backend {} ({}): health probe failed: {}", target->name, target->url, why);
      break;
  }
  backends_.OnProbe(target->id, ok);
}

net::Task<void> Poller::Scrape(std::shared_ptr<const BackendTarget> target,
                               Connections* connections) {
  const net::UpstreamTimeouts timeouts = TimeoutsOf(options_.scrape_timeout);
  net::UpstreamRequest request{
      .method = "GET", .target = "/metrics", .headers = nullptr, .body = {}};
  auto exchange = co_await net::UpstreamExchange::Start(connections->pool, request, timeouts);
  absl::Status status = absl::OkStatus();
  if (!exchange.ok()) {
    status = exchange.status();
  } else {
    auto text = co_await (*exchange)->ReadAll(kMetricsLimit);
    if (!text.ok()) {
      status = text.status();
    } else if ((*exchange)->head().status != 200) {
      status = absl::UnavailableError("GET /metrics answered " +
                                      std::to_string((*exchange)->head().status));
    } else {
      absl::StatusOr<ScrapedEngineMetrics> metrics =
          ReadEngineMetrics(target->kind, *text, clock_.Now());
      if (metrics.ok()) {
        backends_.OnMetrics(target->id, *metrics);
      } else {
        status = metrics.status();
      }
    }
  }
  switch (schedule_.OnScrapeDone(target->address, status.ok())) {
    case PollChange::kNone:
      break;
    case PollChange::kNowOk:
      spdlog::info("backend {}: metrics scrape ok", target->name);
      break;
    case PollChange::kNowFailed:
      spdlog::warn("backend {}: metrics scrape failed: {}", target->name,
                   std::string(status.message()));
      break;
  }
}

net::Task<void> Poller::DiscoverModels(std::shared_ptr<const BackendTarget> target,
                                       Connections* connections) {
  const net::UpstreamTimeouts timeouts = TimeoutsOf(options_.probe_timeout);
  net::UpstreamRequest request{
      .method = "GET", .target = "/v1/models", .headers = nullptr, .body = {}};
  auto exchange = co_await net::UpstreamExchange::Start(connections->pool, request, timeouts);
  DiscoveryResult result = DiscoveryResult::kNoAnswer;
  absl::StatusOr<ModelList> models = absl::UnavailableError("no answer");
  if (exchange.ok() && (*exchange)->head().status == 200) {
    auto body = co_await (*exchange)->ReadAll(1 << 20);
    if (body.ok()) {
      models = ParseModelList(*body);
      result = models.ok() ? DiscoveryResult::kModelList : DiscoveryResult::kNoModelList;
    }
  }
  const PollChange change = schedule_.OnDiscoveryDone(target->address, result);
  if (result == DiscoveryResult::kNoModelList) {
    if (change == PollChange::kNowFailed) {
      spdlog::warn(
          "backend {}: GET /v1/models: {}; it is sent requests for any model, and asked again "
          "every probe interval",
          target->name, std::string(models.status().message()));
    }
    backends_.OnModelsDiscovered(target->id, {});
  } else if (result == DiscoveryResult::kModelList) {
    if (models->ignored > 0) {
      spdlog::warn("backend {}: GET /v1/models: ignored {} entr{} without a non-empty string id",
                   target->name, models->ignored, models->ignored == 1 ? "y" : "ies");
    }
    if (change == PollChange::kNowOk) {
      spdlog::info("backend {}: GET /v1/models: a model list again", target->name);
    }
    backends_.OnModelsDiscovered(target->id, std::move(models->ids));
  }
}

}  // namespace warmroute::gateway
