#include "gateway/fleet/poller.h"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>
#include <set>
#include <utility>

#include "gateway/fleet/engine_metrics.h"
#include "gateway/fleet/model_list.h"

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

struct Poller::BackendPoll {
  BackendPoll(net::Executor executor, const BackendTarget& target)
      : pool(executor, target.host, target.port, PoolOptionsOf(target, 2)),
        probe_pool(executor, target.host, target.port, PoolOptionsOf(target, 0)) {}
  net::UpstreamPool pool;  // scrapes and model discovery: keep-alive
  // Probes open a new connection each time: a backend that stopped accepting connections must
  // fail its probe even while old keep-alive connections to it still work.
  net::UpstreamPool probe_pool;
  TimePoint next_probe{};
  TimePoint next_scrape{};
  TimePoint next_discovery{};
  bool probing = false;
  bool scraping = false;
  bool discovering = false;
  // The backend whose models were discovered: one that replaced it at the same address (a
  // reload that changed it, an admin remove + add) is asked again, and so is a backend whose
  // probe succeeds after failing (it may have restarted serving other models).
  std::optional<routing::BackendId> models_known_for;
  // Its last GET /v1/models answered 200 with no model list: asked again every probe interval,
  // warned about once.
  bool models_unusable = false;
  std::optional<bool> last_probe_ok;
  bool last_scrape_ok = true;
};

Poller::Poller(net::Executor executor, Backends& backends, const Clock& clock,
               PollerOptions options)
    : executor_(executor), backends_(backends), clock_(clock), options_(options) {}

Poller::~Poller() = default;

void Poller::Start() {
  asio::co_spawn(executor_, Loop(), asio::detached);
}

void Poller::Stop() { stopped_ = true; }

net::Task<void> Poller::Loop() {
  Timer timer(executor_);
  while (!stopped_) {
    const TimePoint now = clock_.Now();
    std::set<std::string> present;
    for (const std::shared_ptr<const BackendTarget>& target : backends_.Targets()) {
      present.insert(target->address);
      auto it = polls_.find(target->address);
      if (it != polls_.end() && it->second->pool.tls_context() != target->tls_context.get()) {
        // Replaced at the same address with other TLS settings: start afresh once idle.
        const BackendPoll& old = *it->second;
        if (old.probing || old.scraping || old.discovering) continue;
        polls_.erase(it);
        it = polls_.end();
      }
      if (it == polls_.end()) {
        it = polls_.emplace(target->address, std::make_unique<BackendPoll>(executor_, *target))
                 .first;
      }
      BackendPoll* poll = it->second.get();
      if (!poll->probing && now >= poll->next_probe) {
        poll->probing = true;
        poll->next_probe = now + options_.probe_interval;
        asio::co_spawn(executor_, Probe(target, poll), asio::detached);
      }
      if (options_.scrape_interval.count() > 0 && ExposesLoadMetrics(target->kind) &&
          !poll->scraping && now >= poll->next_scrape) {
        poll->scraping = true;
        poll->next_scrape = now + options_.scrape_interval;
        asio::co_spawn(executor_, Scrape(target, poll), asio::detached);
      }
      if (target->models.empty() && poll->models_known_for != target->id && !poll->discovering &&
          poll->last_probe_ok.value_or(false) && now >= poll->next_discovery) {
        poll->discovering = true;
        poll->next_discovery = now + options_.probe_interval;
        asio::co_spawn(executor_, DiscoverModels(target, poll), asio::detached);
      }
    }
    // Forget removed backends once nothing of theirs is running.
    for (auto it = polls_.begin(); it != polls_.end();) {
      const BackendPoll& p = *it->second;
      if (!present.count(it->first) && !p.probing && !p.scraping && !p.discovering) {
        polls_.erase(it++);
      } else {
        ++it;
      }
    }
    timer.expires_after(kTick);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
  }
}

net::Task<void> Poller::Probe(std::shared_ptr<const BackendTarget> target, BackendPoll* poll) {
  const net::UpstreamTimeouts timeouts = TimeoutsOf(options_.probe_timeout);
  net::UpstreamRequest request{
      .method = "GET", .target = "/health", .headers = nullptr, .body = {}};
  auto exchange = co_await net::UpstreamExchange::Start(poll->probe_pool, request, timeouts);
  bool ok = false;
  std::string why;
  if (exchange.ok()) {
    auto body = co_await (*exchange)->ReadAll(1 << 16);
    ok = (*exchange)->head().status == 200 && body.ok();
    why = "status " + std::to_string((*exchange)->head().status);
  } else {
    why = std::string(exchange.status().message());
  }
  if (poll->last_probe_ok != ok) {
    if (ok) {
      spdlog::info("backend {} ({}): health probe ok", target->name, target->url);
    } else {
      spdlog::warn("backend {} ({}): health probe failed: {}", target->name, target->url, why);
    }
  }
  if (ok && poll->last_probe_ok == false) poll->models_known_for.reset();
  poll->last_probe_ok = ok;
  backends_.OnProbe(target->id, ok);
  poll->probing = false;
}

net::Task<void> Poller::Scrape(std::shared_ptr<const BackendTarget> target, BackendPoll* poll) {
  const net::UpstreamTimeouts timeouts = TimeoutsOf(options_.scrape_timeout);
  net::UpstreamRequest request{
      .method = "GET", .target = "/metrics", .headers = nullptr, .body = {}};
  auto exchange = co_await net::UpstreamExchange::Start(poll->pool, request, timeouts);
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
  if (status.ok() != poll->last_scrape_ok) {
    if (status.ok()) {
      spdlog::info("backend {}: metrics scrape ok", target->name);
    } else {
      spdlog::warn("backend {}: metrics scrape failed: {}", target->name,
                   std::string(status.message()));
    }
  }
  poll->last_scrape_ok = status.ok();
  poll->scraping = false;
}

net::Task<void> Poller::DiscoverModels(std::shared_ptr<const BackendTarget> target,
                                       BackendPoll* poll) {
  const net::UpstreamTimeouts timeouts = TimeoutsOf(options_.probe_timeout);
  net::UpstreamRequest request{
      .method = "GET", .target = "/v1/models", .headers = nullptr, .body = {}};
  auto exchange = co_await net::UpstreamExchange::Start(poll->pool, request, timeouts);
  if (exchange.ok() && (*exchange)->head().status == 200) {
    auto body = co_await (*exchange)->ReadAll(1 << 20);
    if (body.ok()) {
      absl::StatusOr<ModelList> models = ParseModelList(*body);
      if (!models.ok()) {
        if (!poll->models_unusable) {
          spdlog::warn(
              "backend {}: GET /v1/models: {}; it is sent requests for any model, and asked "
              "again every probe interval",
              target->name, std::string(models.status().message()));
        }
        poll->models_unusable = true;
        backends_.OnModelsDiscovered(target->id, {});
      } else {
        if (models->ignored > 0) {
          spdlog::warn(
              "backend {}: GET /v1/models: ignored {} entr{} without a non-empty string id",
              target->name, models->ignored, models->ignored == 1 ? "y" : "ies");
        }
        if (poll->models_unusable) {
          spdlog::info("backend {}: GET /v1/models: a model list again", target->name);
        }
        poll->models_unusable = false;
        backends_.OnModelsDiscovered(target->id, std::move(models->ids));
        poll->models_known_for = target->id;
      }
    }
  }
  poll->discovering = false;
}

}  // namespace warmroute::gateway
