#include "gateway/gateway.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/json_writer.h"
#include "common/status.h"
#include "core/routing/policy_registry.h"
#include "gateway/admin_api.h"
#include "gateway/fleet/backends.h"
#include "gateway/fleet/dns_discovery.h"
#include "gateway/fleet/poller.h"
#include "gateway/fleet/prewarmer.h"
#include "gateway/keys/model_tokenizers.h"
#include "gateway/keys/parity_prober.h"
#include "gateway/fleet/gossip.h"
#include "gateway/kv_events/kv_event_subscriber.h"
#include "gateway/observability/access_log.h"
#include "gateway/observability/dashboard_history.h"
#include "gateway/observability/dashboard_page.h"
#include "gateway/observability/gateway_metrics.h"
#include "gateway/proxy/proxy.h"
#include "gateway/proxy/routes.h"
#include "gateway/tenancy/admission.h"
#include "net/http1/http_server.h"
#include "net/openai_error.h"

namespace warmroute::gateway {
namespace {

namespace asio = boost::asio;

constexpr std::string_view kModelsPrefix = "/v1/models/";

// A seed from the operating system (the response ids a worker issues: response_ids.h).
uint64_t OsSeed() {
  std::random_device device;
  return uint64_t{device()} << 32 ^ device();
}

// `text` with its %XX escapes decoded (an invalid escape is kept as it is).
std::string PercentDecoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 &&
        hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::shared_ptr<const ProxySettings> SettingsOf(const GatewayConfig& c,
                                                std::shared_ptr<const ModelTokenizers> models) {
  auto s = std::make_shared<ProxySettings>();
  s->key_mode = c.prefix_key_mode;
  s->models = std::move(models);
  s->timeouts = net::UpstreamTimeouts{
      .connect = c.timeouts.connect, .first_byte = c.timeouts.first_byte,
      .idle_stream = c.timeouts.idle_stream};
  s->retries = c.retries;
  s->key = c.prefix_key;
  s->response_headers = c.observability.response_headers;
  s->log_prompts = c.observability.log_prompts;
  if (c.tenancy.enabled()) s->tenants = std::make_shared<const Tenants>(c.tenancy);
  if (c.normalize.enabled()) s->normalize = std::make_shared<const NormalizeConfig>(c.normalize);
  s->redis_url = c.tenancy.redis_url;
  s->redis_timeout = c.tenancy.redis_timeout;
  return s;
}

PollerOptions PollerOptionsOf(const GatewayConfig& c) {
  return PollerOptions{.probe_interval = c.health.probe_interval,
                       .probe_timeout = c.health.probe_timeout,
                       .scrape_interval = c.scrape.interval,
                       .scrape_timeout = c.scrape.timeout};
}

// The tokenizers of `c`'s models (none in approximate mode), reusing what `previous` loaded.
absl::StatusOr<std::shared_ptr<const ModelTokenizers>> LoadModels(
    const GatewayConfig& c, const ModelTokenizers* previous, const WallClock& clock) {
  if (c.prefix_key_mode == PrefixKeyMode::kApproximate || c.models.empty()) {
    return std::shared_ptr<const ModelTokenizers>();
  }
  return ModelTokenizers::Load(c.models, previous, clock);
}

routing::PrewarmOptions PrewarmOptionsOf(const PrewarmConfig& c) {
  routing::PrewarmOptions options;
  options.max_prefixes = static_cast<size_t>(c.max_prefixes);
  options.max_tokens_per_s = c.max_tokens_per_s;
  options.max_in_flight = static_cast<int>(c.max_in_flight);
  options.max_target_queue_tokens = c.max_target_queue_tokens;
  options.max_wait = c.max_wait;
  options.join_homes = static_cast<int>(c.join_homes);
  return options;
}

bool SameBackend(const BackendConfig& a, const BackendTarget& b) {
  return a.url == b.url && a.kind == b.kind && a.models == b.models &&
         a.kv_capacity_tokens == b.kv_capacity_tokens && a.pool == b.pool && a.tls == b.tls &&
         a.kv_events == b.kv_events;
}

}  // namespace

class Gateway::Impl {
 public:
  Impl(GatewayConfig config, std::string path) : path_(std::move(path)), config_(std::move(config)) {}

  absl::Status Init() {
    absl::StatusOr<std::unique_ptr<routing::Policy>> policy =
        routing::MakePolicy(config_.policy.name, config_.policy.params);
    if (!policy.ok()) return policy.status();
    backends_ = std::make_unique<Backends>(
        std::move(*policy), routing::RouterOptions{}, clock_, /*seed=*/1,
        EjectionOptions{.eject_after_failures = config_.health.eject_after_failures,
                        .backoff_initial = config_.health.backoff_initial,
                        .backoff_max = config_.health.backoff_max});
    for (const BackendConfig& b : config_.backends) {
      auto added = backends_->Add(b);
      if (!added.ok()) return added.status();
    }
    absl::StatusOr<std::shared_ptr<const ModelTokenizers>> models =
        LoadModels(config_, nullptr, wall_clock_);
    if (!models.ok()) return models.status();
    models_ = std::move(*models);
    LogModels(models_.get());
    dashboard_enabled_.store(config_.observability.dashboard, std::memory_order_relaxed);
    absl::StatusOr<std::unique_ptr<AccessLog>> log = AccessLog::Open(config_.observability.access_log);
    if (!log.ok()) return log.status();
    if (!config_.observability.sample_file.empty()) {
      absl::StatusOr<std::unique_ptr<AccessLog>> sample =
          AccessLog::Open(config_.observability.sample_file);
      if (!sample.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("observability.sample_requests.file: ",
                                                       sample.status().message()));
      }
      request_sample_ = *std::move(sample);
      spdlog::warn("sampling {:.4g} of prompt requests, prompts included, to {}",
                   config_.observability.sample_rate, config_.observability.sample_file);
    }
    access_log_ = std::move(*log);
    admission_ = std::make_unique<AdmissionGate>(
        AdmissionOptions{.max_in_flight = config_.admission.max_in_flight,
                         .max_queue = config_.admission.max_queue,
                         .queue_timeout = config_.admission.queue_timeout});
    if (PrewarmOn(config_)) {
      prewarmer_ = std::make_unique<Prewarmer>(
          control_io_.get_executor(), *backends_, metrics_, clock_, next_request_id_,
          PrewarmOptionsOf(config_.prewarm),
          net::UpstreamTimeouts{.connect = config_.timeouts.connect,
                                .first_byte = config_.timeouts.first_byte,
                                .idle_stream = config_.timeouts.idle_stream});
    }
    admin_ = std::make_unique<AdminApi>(
        *backends_, [this] { return EffectiveConfigJson(RunningConfig()); },
        [this] { return Config().admin.token; },
        [this](const BackendConfig& added) {
          const GatewayConfig config = Config();
          if (config.prefix_key_mode == PrefixKeyMode::kPrecise && !added.kv_events.enabled()) {
            return WithParam(
                absl::InvalidArgumentError("kv_events: required in prefix_key.mode precise"),
                "kv_events");
          }
          if (added.kv_events.enabled()) {
            absl::StatusOr<int> block_size = KvEventsBlockSize(config, added);
            if (!block_size.ok()) {
              return WithParam(absl::InvalidArgumentError(
                                   absl::StrCat("kv_events: ", block_size.status().message())),
                               "kv_events");
            }
          }
          std::vector<PoolMember> members;
          for (const auto& t : backends_->Targets()) members.push_back({t->name, t->pool, t->kind});
          members.push_back({added.name, added.pool, added.kind});
          return ValidateTenancy(Config().tenancy, members);
        },
        prewarmer_.get());
    poller_ = std::make_unique<Poller>(control_io_.get_executor(), *backends_, clock_,
                                       PollerOptionsOf(config_));
    discovery_ = std::make_unique<DnsDiscovery>(control_io_.get_executor(), *backends_, metrics_,
                                                clock_, wall_clock_, config_.discovery, OsSeed(),
                                                prewarmer_.get());
    kv_events_ = std::make_unique<KvEventSubscriber>(*backends_, metrics_, clock_,
                                                     [this] { return WantedFeeds(); });
    if (config_.gossip.enabled()) {
      absl::StatusOr<std::unique_ptr<Gossip>> gossip = Gossip::Create(
          control_io_.get_executor(), *backends_, metrics_, clock_, config_.gossip, OsSeed());
      if (!gossip.ok()) return gossip.status();
      gossip_ = *std::move(gossip);
    }
    parity_ = std::make_unique<ParityProber>(
        control_io_.get_executor(), *backends_, clock_, metrics_, [this] { return Models(); },
        config_.parity_check_interval, config_.health.probe_timeout);

    int threads = config_.listen.threads;
    if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
    const std::shared_ptr<const ProxySettings> settings = SettingsOf(config_, models_);
    proxy_context_ = std::make_unique<const ProxyContext>(
        ProxyContext{.backends = *backends_,
                     .admission = *admission_,
                     .limiter = limiter_,
                     .metrics = metrics_,
                     .access_log = *access_log_,
                     .request_sample = request_sample_.get(),
                     .sample_rate = config_.observability.sample_rate,
                     .hot_prefixes = hot_prefixes_,
                     .clock = clock_,
                     .next_request_id = next_request_id_,
                     .prewarmer = prewarmer_.get()});
    net::HttpServerOptions options;
    options.host = config_.listen.host;
    options.port = config_.listen.port;
    options.reuse_port = true;
    options.body_limit_bytes = static_cast<size_t>(config_.listen.body_limit_mb) << 20;
    options.header_limit_bytes = static_cast<size_t>(config_.listen.header_limit_kb) << 10;
    options.header_timeout = config_.listen.header_timeout;
    options.body_timeout = config_.listen.body_timeout;
    options.idle_timeout = config_.listen.idle_timeout;
    options.stream_body = [](const net::HttpRequest& head) {  // uploads: routes.h's "stream"
      const RouteMatch route = MatchRoute(head.method, head.path);
      return route.route != nullptr && route.route->body == RouteBody::kStream;
    };
    if (config_.listen.tls.enabled()) {
      const ListenTlsConfig& tls = config_.listen.tls;
      absl::StatusOr<std::shared_ptr<net::TlsContext>> context = net::MakeTlsServerContext(
          {.cert_file = tls.cert_file, .key_file = tls.key_file,
           .client_ca_file = tls.client_ca_file});
      if (!context.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("listen.tls.",
                                                       ParamOf(context.status()).value_or(""),
                                                       ": ", context.status().message()));
      }
      options.tls = std::move(*context);
      spdlog::info("TLS on the listener ({}){}", tls.cert_file,
                   tls.client_ca_file.empty() ? "" : ", client certificates required");
    }
    for (int i = 0; i < threads; ++i) {
      auto worker = std::make_unique<Worker>();
      worker->proxy =
          std::make_unique<Proxy>(*proxy_context_, settings, worker->io.get_executor(),
                                  OsSeed());
      Worker* w = worker.get();
      auto server = net::HttpServer::Create(
          worker->io, options, [this, w](net::HttpRequest& request, net::ResponseWriter& writer) {
            return Serve(*w, request, writer);
          });
      if (!server.ok()) return server.status();
      worker->server = std::move(*server);
      options.port = worker->server->port();  // the others share the (maybe ephemeral) port
      workers_.push_back(std::move(worker));
    }
    return absl::OkStatus();
  }

  uint16_t port() const { return workers_.front()->server->port(); }

  void Run(bool handle_signals, const std::function<void()>& on_started) {
    auto work = asio::make_work_guard(control_io_);
    asio::signal_set signals(control_io_);
    if (handle_signals) {
      signals.add(SIGINT);
      signals.add(SIGTERM);
      signals.add(SIGHUP);
      WaitForSignal(signals);
    }
    {
      std::lock_guard lock(run_mu_);
      stop_control_ = [this, &work, &signals] {
        poller_->Stop();
        if (prewarmer_ != nullptr) prewarmer_->Stop();
        discovery_->Stop();
        parity_->Stop();
        kv_events_->Stop();
        if (gossip_ != nullptr) gossip_->Stop();
        boost::system::error_code ec;
        signals.cancel(ec);
        drain_timer_.cancel();
        flush_timer_.cancel();
        dashboard_timer_.cancel();
        work.reset();
      };
    }
    poller_->Start();
    if (prewarmer_ != nullptr) prewarmer_->Start();
    discovery_->Start();
    parity_->Start();
    kv_events_->Start();
    if (gossip_ != nullptr) gossip_->Start();
    std::vector<std::thread> threads;
    for (auto& w : workers_) {
      w->server->Start();
      threads.emplace_back([w = w.get()] { w->io.run(); });
    }
    if ((access_log_ != nullptr && access_log_->enabled()) || request_sample_ != nullptr) {
      FlushAccessLogEverySecond();
    }
    SampleDashboardEverySecond();
    if (on_started) on_started();
    if (stop_requested_) Stop();
    control_io_.run();
    for (std::thread& t : threads) t.join();
    {
      std::lock_guard lock(run_mu_);
      stop_control_ = nullptr;
    }
    spdlog::info("gateway stopped");
  }

  void Stop() {
    stop_requested_ = true;
    for (auto& w : workers_) {
      asio::post(w->io, [w = w.get()] {
        w->server->Stop();
        w->proxy->Stop();  // its Redis connection would keep w->io running
      });
    }
    asio::post(control_io_, [this] {
      std::lock_guard lock(run_mu_);
      if (stop_control_) stop_control_();
    });
  }

  absl::Status Reload() {
    if (path_.empty()) return absl::FailedPreconditionError("no config file to reload");
    absl::StatusOr<GatewayConfig> loaded = LoadGatewayConfig(path_);
    if (!loaded.ok()) {
      spdlog::error("reload: {}; the running config stays", std::string(loaded.status().message()));
      return loaded.status();
    }
    GatewayConfig next = std::move(*loaded);
    std::lock_guard reload_lock(reload_mu_);
    // The models' tokenizers, loaded before anything changes: a file that cannot be loaded is a
    // config error like any other.
    absl::StatusOr<std::shared_ptr<const ModelTokenizers>> models =
        LoadModels(next, Models().get(), wall_clock_);
    if (!models.ok()) {
      spdlog::error("reload: {}: {}; the running config stays", path_,
                    std::string(models.status().message()));
      return models.status();
    }
    // An empty file is a valid config (every default, no backends), and also what a reload
    // finds while an editor or a tool is rewriting the file: one that would remove every
    // running backend is refused, not applied.
    // (Discovered backends are discovery's: a reload changes them through its config only.)
    std::vector<std::shared_ptr<const BackendTarget>> running = ConfiguredTargets();
    if (next.backends.empty() && !next.discovery.enabled() && !running.empty()) {
      const absl::Status refused = absl::FailedPreconditionError(absl::StrCat(
          path_,
          " lists no backends, and a reload does not remove every backend (was the file "
          "being written?)"));
      spdlog::error("reload: {}; the running config stays", std::string(refused.message()));
      return refused;
    }
    const GatewayConfig previous = Config();
    // Discovery first: the backends it gives up (discovery turned off) free their addresses for
    // configured backends below, which take over a discovered backend's address in any case.
    discovery_->SetConfig(next.discovery);
    // Backends: reconcile by name. A changed backend is replaced in one step, so no request
    // sees the fleet without it.
    for (const auto& target : running) {
      auto wanted = std::find_if(next.backends.begin(), next.backends.end(),
                                 [&](const BackendConfig& b) { return b.name == target->name; });
      if (wanted == next.backends.end()) {
        if (prewarmer_ != nullptr) prewarmer_->OnLeaving(target->name);
        (void)backends_->Remove(target->name);
        spdlog::info("reload: removed backend {} ({})", target->name, target->url);
      } else if (!SameBackend(*wanted, *target)) {
        auto replaced = backends_->Replace(*wanted);
        if (replaced.ok()) {
          spdlog::info("reload: replaced backend {} ({})", target->name, wanted->url);
        } else {
          // Its new address is another's that is about to change (two backends swapped
          // addresses): remove it now, it is added back below once the address is free.
          (void)backends_->Remove(target->name);
          spdlog::info("reload: removed backend {} ({}) to re-add it: {}", target->name,
                       target->url, std::string(replaced.status().message()));
        }
      }
    }
    running = backends_->Targets();  // discovered ones too: their names and addresses are taken
    for (const BackendConfig& b : next.backends) {
      const bool present = std::any_of(running.begin(), running.end(),
                                       [&](const auto& t) { return t->name == b.name; });
      if (present) continue;
      // In the place of a discovered backend with its address, if one has it.
      auto added = discovery_->AddConfigured(b);
      if (added.ok()) {
        spdlog::info("reload: added backend {} ({})", b.name, b.url);
        if (prewarmer_ != nullptr) prewarmer_->OnJoined(b.name);
      } else {
        spdlog::error("reload: backend {}: {}", b.name, std::string(added.status().message()));
      }
    }
    const auto needs_restart = [&](bool changed, std::string_view what) {
      if (changed) spdlog::warn("reload: {} changed; it takes effect after a restart", what);
    };
    const ListenConfig& a = previous.listen;
    const ListenConfig& b = next.listen;
    needs_restart(a.host != b.host || a.port != b.port || a.threads != b.threads ||
                      a.body_limit_mb != b.body_limit_mb ||
                      a.header_limit_kb != b.header_limit_kb ||
                      a.header_timeout != b.header_timeout || a.body_timeout != b.body_timeout ||
                      a.idle_timeout != b.idle_timeout || a.tls != b.tls,
                  "listen");
    needs_restart(previous.policy.name != next.policy.name ||
                      previous.policy.params != next.policy.params,
                  "policy");
    needs_restart(previous.admission.max_in_flight != next.admission.max_in_flight ||
                      previous.admission.max_queue != next.admission.max_queue ||
                      previous.admission.queue_timeout != next.admission.queue_timeout,
                  "admission");
    needs_restart(previous.observability.access_log != next.observability.access_log,
                  "observability.access_log");
    needs_restart(previous.observability.sample_file != next.observability.sample_file ||
                      previous.observability.sample_rate != next.observability.sample_rate,
                  "observability.sample_requests");
    needs_restart(previous.prewarm != next.prewarm, "prewarm");
    needs_restart(previous.gossip != next.gossip, "gossip");
    // What needs a restart runs on as it was, and the stored config (GET /admin/config) says so.
    // The shutdown grace is read when a signal arrives: a reload changes it.
    const Millis grace = next.listen.shutdown_grace;
    next.listen = previous.listen;
    next.listen.shutdown_grace = grace;
    next.policy = previous.policy;
    next.admission = previous.admission;
    next.prewarm = previous.prewarm;
    next.gossip = previous.gossip;
    next.observability.access_log = previous.observability.access_log;
    next.observability.sample_file = previous.observability.sample_file;
    next.observability.sample_rate = previous.observability.sample_rate;
    // Per-request settings and the control loop's options.
    {
      std::lock_guard lock(models_mu_);
      models_ = *models;
    }
    LogModels(models->get());
    const std::shared_ptr<const ProxySettings> settings = SettingsOf(next, *models);
    for (auto& w : workers_) {
      asio::post(w->io, [w = w.get(), settings] { w->proxy->SetSettings(settings); });
    }
    const PollerOptions poller_options = PollerOptionsOf(next);
    asio::post(control_io_, [this, poller_options, interval = next.parity_check_interval,
                             timeout = next.health.probe_timeout] {
      poller_->SetOptions(poller_options);
      parity_->SetInterval(interval, timeout);
    });
    dashboard_enabled_.store(next.observability.dashboard, std::memory_order_relaxed);
    {
      std::lock_guard lock(config_mu_);
      config_ = std::move(next);
    }
    spdlog::info("reload: config {} applied", path_);
    return absl::OkStatus();
  }

 private:
  struct Worker {
    // One thread runs it, and only that thread touches its sockets and timers (its server's, its
    // proxy's pools'; other threads only post to it): the reactor needs no lock per descriptor
    // operation (about four lock/unlock pairs fewer per proxied request). The scheduler keeps
    // its lock for those posts.
    asio::io_context io{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
    std::unique_ptr<net::HttpServer> server;
    std::unique_ptr<Proxy> proxy;
  };

  GatewayConfig Config() const {
    std::lock_guard lock(config_mu_);
    return config_;
  }

  std::shared_ptr<const ModelTokenizers> Models() const {
    std::lock_guard lock(models_mu_);
    return models_;
  }

  static void LogModels(const ModelTokenizers* models) {
    if (models == nullptr) return;
    for (const auto& m : models->models()) {
      if (m->files() == nullptr) continue;
      spdlog::info("model {}: precise prefix keys with {} (blocks of {} tokens)", m->name(),
                   m->files()->dir, m->block_size());
    }
  }

  // What runs, for GET /admin/config: the config with the backends that serve now (those added
  // through the admin API too, in the order they were added).
  // Discovered backends are left out: the discovery section stands for them.
  GatewayConfig RunningConfig() const {
    GatewayConfig running = Config();
    running.backends.clear();
    for (const std::shared_ptr<const BackendTarget>& t : ConfiguredTargets()) {
      running.backends.push_back({.name = t->name,
                                  .url = t->url,
                                  .host = t->host,
                                  .port = t->port,
                                  .tls = t->tls,
                                  .kind = t->kind,
                                  .models = t->models,
                                  .kv_capacity_tokens = t->kv_capacity_tokens,
                                  .pool = t->pool,
                                  .kv_events = t->kv_events});
    }
    return running;
  }

  // The backends from the config and the admin API: all but the discovered ones.
  std::vector<std::shared_ptr<const BackendTarget>> ConfiguredTargets() const {
    std::vector<std::shared_ptr<const BackendTarget>> out = backends_->Targets();
    std::erase_if(out, [this](const auto& t) { return discovery_->Owns(t->name); });
    return out;
  }

  // The KV-event feeds the fleet wants now: every present backend with kv_events, unless the
  // mode is approximate (gateway/kv_events/subscription_plan.h). Called on the subscriber's
  // thread.
  std::vector<FeedSpec> WantedFeeds() const {
    const GatewayConfig config = Config();
    std::vector<FeedSpec> out;
    if (config.prefix_key_mode == PrefixKeyMode::kApproximate) return out;
    for (const std::shared_ptr<const BackendTarget>& t : backends_->Targets()) {
      if (!t->kv_events.enabled()) continue;
      BackendConfig backend;
      backend.name = t->name;
      backend.models = t->models;
      absl::StatusOr<int> block_size = KvEventsBlockSize(config, backend);
      if (!block_size.ok()) continue;  // refused when it was configured or added
      out.push_back({.backend = t->id,
                     .name = t->name,
                     .kv_events = t->kv_events,
                     .block_size = *block_size,
                     .rank_slices = t->rank_targets});
    }
    return out;
  }

  void WaitForSignal(asio::signal_set& signals) {
    signals.async_wait([this, &signals](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      if (signal == SIGHUP) {
        spdlog::info("SIGHUP: reloading {}", path_);
        (void)Reload();
        WaitForSignal(signals);
        return;
      }
      const std::chrono::milliseconds grace = Config().listen.shutdown_grace;
      if (draining_ || grace.count() == 0) {
        spdlog::info("signal {}: stopping", signal);
        Stop();
        return;
      }
      spdlog::info(
          "signal {}: draining: no new connections; the {} open ones finish their "
          "requests, for at most {} ms (a second signal stops at once)",
          signal, OpenConnections(), grace.count());
      Drain(grace);
      WaitForSignal(signals);
    });
  }

  size_t OpenConnections() const {
    size_t open = 0;
    for (const auto& w : workers_) open += w->server->open_connections();
    return open;
  }

  // A graceful stop (on the control thread): every worker's server drains; the gateway stops
  // once no connection is open, or when `grace` has passed (cutting what remains).
  void Drain(std::chrono::milliseconds grace) {
    draining_ = true;
    for (auto& w : workers_) {
      asio::post(w->io, [w = w.get()] { w->server->Drain(); });
    }
    drain_deadline_ = std::chrono::steady_clock::now() + grace;
    WatchDrain();
  }

  // Flushes the access log and the request sample every second (AccessLog: a busy gateway's
  // writes flush it too).
  void FlushAccessLogEverySecond() {
    flush_timer_.expires_after(std::chrono::seconds(1));
    flush_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stop_requested_) return;
      access_log_->Flush();
      if (request_sample_ != nullptr) request_sample_->Flush();
      FlushAccessLogEverySecond();
    });
  }

  // The dashboard's history (dashboard_history.h): one sample of the gateway's own metrics per
  // second while the dashboard is on (observability.dashboard, reloadable).
  void SampleDashboardEverySecond() {
    if (dashboard_enabled_.load(std::memory_order_relaxed)) SampleDashboard();
    dashboard_timer_.expires_after(std::chrono::seconds(1));
    dashboard_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stop_requested_) return;
      SampleDashboardEverySecond();
    });
  }

  void SampleDashboard() {
    const std::vector<HotPrefix> hot = hot_prefixes_.Top(10);
    absl::StatusOr<std::vector<net::MetricSample>> metrics =
        net::ParsePrometheusText(metrics_.Serialize(*backends_, admission_->queued(), hot));
    if (!metrics.ok()) {  // our own exposition: a bug, not an input error
      spdlog::error("dashboard: cannot read the gateway's own metrics: {}",
                    metrics.status().ToString());
      return;
    }
    DashboardInput input{
        .wall_s = std::chrono::duration<double>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count(),
        .metrics = std::move(*metrics),
        .backends = {},
        .hot_prefixes = {}};
    absl::flat_hash_map<routing::BackendId, std::string> names;
    for (const BackendSnapshot& b : backends_->Snapshot()) {
      input.backends.push_back({.name = b.target->name, .state = b.state});
      names[b.target->id] = b.target->name;
      for (const RankSnapshot& r : b.ranks) names[r.target->id] = r.target->name;
    }
    for (const HotPrefix& p : hot) {
      DashboardHotPrefix out{.id = p.id, .requests_per_s = p.requests_per_s, .homes = {}};
      for (routing::BackendId id : p.homes) {
        const auto it = names.find(id);
        if (it != names.end()) out.homes.push_back(it->second);
      }
      input.hot_prefixes.push_back(std::move(out));
    }
    std::lock_guard lock(dashboard_mu_);
    dashboard_.Record(input);
  }

  // GET /dashboard and its assets (dashboard_page.h), and GET /dashboard/data: the history as
  // JSON, behind the admin token when one is set (the page asks for it).
  net::Task<void> Dashboard(const net::HttpRequest& request, net::ResponseWriter& writer) {
    net::ResponseHead head;
    head.headers.emplace_back("Cache-Control", "no-store");
    if (request.path == "/dashboard/data") {
      const std::string token = Config().admin.token;
      if (!token.empty()) {
        if (absl::Status authorized = CheckBearerToken(request, token); !authorized.ok()) {
          (void)co_await writer.ReplyError(authorized);
          co_return;
        }
      }
      std::string body;
      {
        std::lock_guard lock(dashboard_mu_);
        body = dashboard_.Json();
      }
      (void)co_await writer.Reply(std::move(head), std::move(body));
      co_return;
    }
    const DashboardAsset* asset = FindDashboardAsset(request.path);
    head.content_type = std::string(asset->content_type);
    (void)co_await writer.Reply(std::move(head), std::string(asset->body));
  }

  void WatchDrain() {
    drain_timer_.expires_after(std::chrono::milliseconds(20));
    drain_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stop_requested_) return;
      const size_t open = OpenConnections();
      if (open == 0) {
        spdlog::info("drained: stopping");
        Stop();
      } else if (std::chrono::steady_clock::now() >= drain_deadline_) {
        spdlog::warn("shutdown grace period over; cutting open connections: {}", open);
        Stop();
      } else {
        WatchDrain();
      }
    });
  }

  // Not a coroutine: on the proxied path it returns the proxy's own coroutine, so a request
  // costs no frame here (this one's, over Asio's 1,020-byte recycling limit, was a malloc and a
  // free per request).
  net::Task<void> Serve(Worker& worker, net::HttpRequest& request, net::ResponseWriter& writer) {
    const RouteMatch route = MatchRoute(request.method, request.path);
    if (route.route != nullptr) return worker.proxy->Handle(route, request, writer);
    if (!route.allow.empty()) {
      return net::ReplyMethodNotAllowed(writer, request, std::string(route.allow));
    }
    return ServeOther(worker, request, writer);
  }

  // Every route but the proxied ones.
  net::Task<void> ServeOther(Worker& worker, net::HttpRequest& request,
                             net::ResponseWriter& writer) {
    const std::string& path = request.path;
    const bool get = request.method == "GET" || request.method == "HEAD";
    if (path == "/v1/models" && get) {
      co_await Models(worker, request, writer);
    } else if (path == "/health" && get) {
      co_await Health(writer);
    } else if (path == "/metrics" && get) {
      net::ResponseHead head;
      head.content_type = "text/plain; version=0.0.4; charset=utf-8";
      std::string body = metrics_.Serialize(*backends_, admission_->queued(), hot_prefixes_.Top(10));
      (void)co_await writer.Reply(std::move(head), std::move(body));
    } else if (path == "/admin" || path.rfind("/admin/", 0) == 0) {
      co_await admin_->Handle(request, writer);
    } else if (get && dashboard_enabled_.load(std::memory_order_relaxed) &&
               (path == "/dashboard/data" || FindDashboardAsset(path) != nullptr)) {
      co_await Dashboard(request, writer);
    } else if (path.starts_with(kModelsPrefix) && get) {
      co_await Model(worker, request, writer, std::string_view(path).substr(kModelsPrefix.size()));
    } else if (path == "/v1/models" || path == "/health" || path == "/metrics" ||
               path.starts_with(kModelsPrefix)) {
      co_await net::ReplyMethodNotAllowed(writer, request, "GET, HEAD");
    } else {
      const absl::Status status = absl::NotFoundError(absl::StrCat("no route ", path));
      (void)co_await writer.ReplyError(status);
    }
  }

  net::Task<void> Health(net::ResponseWriter& writer) {
    int eligible = 0;
    int total = 0;
    for (const BackendSnapshot& b : backends_->Snapshot()) {
      ++total;
      eligible += b.eligible ? 1 : 0;
    }
    net::ResponseHead head;
    head.status = eligible > 0 ? 200 : 503;
    std::string body = absl::StrCat("{\"status\":\"", eligible > 0 ? "ok" : "no healthy backend",
                                    "\",\"backends\":", total, ",\"eligible\":", eligible, "}");
    (void)co_await writer.Reply(std::move(head), std::move(body));
  }

  // GET /v1/models: with tenants, the caller's key decides (401 without a valid one) and the
  // list holds only the models its tenant may use on its pools.
  // The models the request's client may use: the union of the backends' (with tenancy, those of
  // its tenant's pools that it may use). Unauthenticated (401) for a client tenancy refuses.
  absl::StatusOr<std::vector<std::string>> VisibleModels(Worker& worker,
                                                         const net::HttpRequest& request) {
    const std::shared_ptr<const ProxySettings> settings = worker.proxy->settings();
    if (const Tenants* tenants = settings->active_tenants()) {
      absl::StatusOr<std::string_view> credentials = request.SingleHeader("Authorization");
      absl::StatusOr<const Tenant*> tenant =
          credentials.ok() ? tenants->Authenticate(*credentials) : credentials.status();
      if (!tenant.ok()) return tenant.status();
      std::vector<std::string> models;
      for (std::string& model : backends_->Models((*tenant)->config.pools)) {
        if ((*tenant)->AllowsModel(model)) models.push_back(std::move(model));
      }
      return models;
    }
    return backends_->Models();
  }

  net::Task<void> Models(Worker& worker, const net::HttpRequest& request,
                         net::ResponseWriter& writer) {
    absl::StatusOr<std::vector<std::string>> models = VisibleModels(worker, request);
    if (!models.ok()) {
      (void)co_await writer.ReplyError(models.status());
      co_return;
    }
    std::string out;
    JsonWriter w(&out);
    w.BeginObject().Key("object").String("list").Key("data").BeginArray();
    for (const std::string& model : *models) WriteModel(w, model);
    w.EndArray().EndObject();
    (void)co_await writer.Reply(net::ResponseHead(), std::move(out));
  }

  // GET /v1/models/{id} (the id percent-decoded: model names hold '/'): the model, when the
  // client may use it, else 404 as OpenAI answers.
  net::Task<void> Model(Worker& worker, const net::HttpRequest& request,
                        net::ResponseWriter& writer, std::string_view encoded_id) {
    absl::StatusOr<std::vector<std::string>> models = VisibleModels(worker, request);
    if (!models.ok()) {
      (void)co_await writer.ReplyError(models.status());
      co_return;
    }
    const std::string id = PercentDecoded(encoded_id);
    if (std::find(models->begin(), models->end(), id) == models->end()) {
      (void)co_await writer.ReplyError(WithParam(
          absl::NotFoundError(absl::StrCat("The model `", id, "` does not exist.")), "model"));
      co_return;
    }
    std::string out;
    JsonWriter w(&out);
    WriteModel(w, id);
    (void)co_await writer.Reply(net::ResponseHead(), std::move(out));
  }

  static void WriteModel(JsonWriter& w, std::string_view model) {
    w.BeginObject();
    w.Key("id").String(model);
    w.Key("object").String("model");
    w.Key("created").Int(0);
    w.Key("owned_by").String("warmroute");
    w.EndObject();
  }

  const std::string path_;
  mutable std::mutex config_mu_;
  GatewayConfig config_;
  std::mutex reload_mu_;
  SystemClock clock_;
  SystemWallClock wall_clock_;  // the chat templates' strftime_now
  mutable std::mutex models_mu_;
  std::shared_ptr<const ModelTokenizers> models_;  // null: none (or approximate mode)
  LocalRateLimiter limiter_{clock_};
  HotPrefixes hot_prefixes_{clock_, HotPrefixes::Options{}};
  std::unique_ptr<Backends> backends_;
  GatewayMetrics metrics_;
  std::unique_ptr<AccessLog> access_log_;
  std::unique_ptr<AccessLog> request_sample_;  // observability.sample_requests; null when off
  std::unique_ptr<AdmissionGate> admission_;
  std::atomic<uint64_t> next_request_id_{1};
  // What the workers' Proxies share; declared after what it refers to and before the workers,
  // so that it outlives every request (proxy_context.h).
  std::unique_ptr<const ProxyContext> proxy_context_;
  std::unique_ptr<AdminApi> admin_;
  asio::io_context control_io_{1};
  // The graceful stop (control thread only).
  bool draining_ = false;
  asio::steady_timer drain_timer_{control_io_};
  asio::steady_timer flush_timer_{control_io_};
  asio::steady_timer dashboard_timer_{control_io_};
  std::atomic<bool> dashboard_enabled_{false};
  std::mutex dashboard_mu_;
  DashboardHistory dashboard_{DashboardHistory::Options{}};
  std::chrono::steady_clock::time_point drain_deadline_;
  std::unique_ptr<Poller> poller_;
  std::unique_ptr<Prewarmer> prewarmer_;  // null: prewarm off (config prewarm, read at start)
  std::unique_ptr<DnsDiscovery> discovery_;
  std::unique_ptr<ParityProber> parity_;
  std::unique_ptr<KvEventSubscriber> kv_events_;
  std::unique_ptr<Gossip> gossip_;  // null: gossip off (config gossip, read at start)
  std::vector<std::unique_ptr<Worker>> workers_;
  std::mutex run_mu_;
  std::function<void()> stop_control_;
  std::atomic<bool> stop_requested_{false};
};

absl::StatusOr<std::unique_ptr<Gateway>> Gateway::Create(const GatewayConfig& config,
                                                         std::string config_path) {
  auto impl = std::make_unique<Impl>(config, std::move(config_path));
  absl::Status status = impl->Init();
  if (!status.ok()) return status;
  return std::unique_ptr<Gateway>(new Gateway(std::move(impl)));
}

Gateway::Gateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gateway::~Gateway() = default;
uint16_t Gateway::port() const { return impl_->port(); }
void Gateway::Run(bool handle_signals, std::function<void()> on_started) {
  impl_->Run(handle_signals, on_started);
}
void Gateway::Stop() { impl_->Stop(); }
absl::Status Gateway::Reload() { return impl_->Reload(); }

}  // namespace warmroute::gateway
