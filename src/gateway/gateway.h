// `warmroute serve` as a library: the whole gateway built from a GatewayConfig.
//
// Precise prefix keys: the configured models' tokenizers (gateway/keys/request_key.h), checked
// against the backends' /tokenize by the parity prober (gateway/keys/parity_prober.h) on the
// control thread.
//
// Threads: `listen.threads` workers (0: one per core), each with its own io_context, its own
// listener on the same port (SO_REUSEPORT: the kernel spreads connections) and its own upstream
// connection pools, so a request never changes thread; plus one control thread for health
// probes, metrics scraping and signals, and one thread for the engines' KV events (modes auto
// and precise: gateway/kv_events/kv_event_subscriber.h). Routing state (Backends) is shared
// under one mutex.
//
// Endpoints: every path the engines serve, proxied (proxy/routes.h has the table); GET /v1/models
// and /v1/models/{id} (the union of the backends' models, OpenAI's shape); GET /health (200 while
// some backend is eligible, else 503); GET /metrics (gateway_metrics.h); /admin/... (admin_api.h).
//
// Reload (SIGHUP or Reload()): the config file is read again and validated; if it is invalid the
// running config stays and the error is logged. The discovery section applies first
// (gateway/fleet/dns_discovery.h); then the configured backends are reconciled by name (added,
// removed, or replaced in one step when their url/kind/models/capacity changed, so requests
// never see the fleet without them), discovered backends left alone; timeouts, retries, prefix-key options, models (their tokenizers loaded
// before anything is applied: gateway/keys/model_tokenizers.h), probes, scraping, response headers
// and the admin token take effect for new requests. The listener, threads, policy, admission
// limits and access log need a restart (logged when they changed). Open connections are never
// dropped by a reload.
//
// Usage:
//   auto gateway = Gateway::Create(config, "router.yaml");
//   (*gateway)->Run(/*handle_signals=*/true, [&] {   // until SIGINT/SIGTERM or Stop()
//     printf("listening on %s:%d\n", host, (*gateway)->port());
//   });
//
// Thread-safety: Create and Run from one thread; Stop and Reload from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gateway/config/config.h"

namespace warmroute::gateway {

class Gateway {
 public:
  // Builds the policy, binds the listeners (Unavailable when the port is taken), opens the
  // access log. `config_path` is what Reload() reads (empty: no reload).
  static absl::StatusOr<std::unique_ptr<Gateway>> Create(const GatewayConfig& config,
                                                         std::string config_path);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  uint16_t port() const;

  // Serves until Stop() (or SIGINT/SIGTERM when handle_signals; SIGHUP then reloads), then
  // returns once every connection has ended. `on_started` (optional) runs on the calling thread
  // once the listeners accept and the signal handlers are installed: announce readiness there,
  // so that a SIGHUP sent right after the announcement reloads instead of killing the process.
  void Run(bool handle_signals, std::function<void()> on_started = nullptr);
  void Stop();
  // Re-reads the config file and applies it (see above). Any thread.
  absl::Status Reload();

 private:
  class Impl;
  explicit Gateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace warmroute::gateway
