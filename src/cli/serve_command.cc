// `warmroute serve --config router.yaml`: the gateway (src/gateway/gateway.h).
//
// On start it prints one machine-readable line to stdout, then serves until SIGINT or SIGTERM
// (exit 0); SIGHUP reloads the config file:
//   warmroute serve listening on 127.0.0.1:8080 (policy warmroute, 4 backends, 2 threads)
// An invalid config or flag exits 2 with a message naming the key; a port that cannot be bound
// exits 1. Flags override the file: --port, --host, --threads, --policy, --backend URL (repeatable,
// replaces the file's backends), --access-log, --log-level. --check-config validates the config
// (with the flags applied) and exits: 0 with "warmroute serve: config OK (...)" on stdout, or 2
// with the error (e.g. prefix_key.mode precise naming the backends without kv_events).
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "common/json_writer.h"
#include "core/routing/policy_registry.h"
#include "gateway/config/config.h"
#include "gateway/config/tenancy_config.h"
#include "gateway/gateway.h"

namespace warmroute::cli {
namespace {

struct ServeFlags {
  std::string config_path;
  std::optional<int> port;
  std::optional<std::string> host;
  std::optional<int> threads;
  std::optional<std::string> policy;
  std::vector<std::string> backends;
  std::optional<std::string> access_log;
  std::string log_level = "info";
  bool check_config = false;
};

// A flag's usage error, exit code 2.
int FlagError(std::string_view message) {
  std::cerr << "warmroute serve: " << message << "\n";
  return 2;
}

int RunServe(const ServeFlags& flags) {
  spdlog::set_level(spdlog::level::from_str(flags.log_level));  // checked by CLI11
  gateway::GatewayConfig config;
  if (!flags.config_path.empty()) {
    absl::StatusOr<gateway::GatewayConfig> loaded = gateway::LoadGatewayConfig(flags.config_path);
    if (!loaded.ok()) {
      std::cerr << "warmroute serve: " << loaded.status().message() << "\n";
      return 2;
    }
    config = std::move(*loaded);
  }
  if (flags.port) {
    if (*flags.port < 0 || *flags.port > 65535) {
      return FlagError(absl::StrCat("--port must be in [0, 65535], got ", *flags.port));
    }
    config.listen.port = static_cast<uint16_t>(*flags.port);
  }
  if (flags.host) {
    if (flags.host->empty()) return FlagError("--host must not be empty");
    config.listen.host = *flags.host;
  }
  if (flags.threads) {
    if (*flags.threads < 0 || *flags.threads > gateway::kMaxListenThreads) {
      return FlagError(absl::StrCat("--threads must be in [0, ", gateway::kMaxListenThreads,
                                    "] (0: one per core), got ", *flags.threads));
    }
    config.listen.threads = *flags.threads;
  }
  if (flags.access_log) {
    if (flags.access_log->empty()) {
      return FlagError("--access-log must be stderr, off or a file path, not empty");
    }
    config.observability.access_log = *flags.access_log;
  }
  if (flags.policy) config.policy = gateway::PolicyConfig{.name = *flags.policy, .params = {}};
  if (!flags.backends.empty()) {
    config.backends.clear();
    for (const std::string& url : flags.backends) {
      absl::StatusOr<gateway::BackendConfig> backend =
          gateway::ParseBackendJson("{\"url\":" + JsonString(url) + "}");
      if (!backend.ok()) {
        std::cerr << "warmroute serve: --backend " << url << ": " << backend.status().message()
                  << "\n";
        return 2;
      }
      config.backends.push_back(std::move(*backend));
    }
    // The config's tenants may name pools that only its own backends were in.
    const absl::Status pools =
        gateway::ValidateTenancy(config.tenancy, gateway::PoolMembers(config.backends));
    if (!pools.ok()) {
      return FlagError(
          absl::StrCat("--backend replaces the config's backends, and then ", pools.message()));
    }
  }
  // --backend may have replaced the backends the file gave kv_events.
  if (const absl::Status precise = gateway::ValidatePreciseMode(config); !precise.ok()) {
    std::cerr << "warmroute serve: " << precise.message() << "\n";
    return 2;
  }
  if (flags.check_config) {
    const std::string discovery =
        config.discovery.enabled() ? absl::StrCat(", backends from DNS ", config.discovery.dns) : "";
    std::printf("warmroute serve: config OK (%zu backends%s, %zu models, prefix_key.mode %s)\n",
                config.backends.size(), discovery.c_str(), config.models.size(),
                std::string(gateway::PrefixKeyModeName(config.prefix_key_mode)).c_str());
    return 0;
  }
  absl::StatusOr<std::unique_ptr<gateway::Gateway>> gateway =
      gateway::Gateway::Create(config, flags.config_path);
  if (!gateway.ok()) {
    std::cerr << "warmroute serve: " << gateway.status().message() << "\n";
    const absl::StatusCode code = gateway.status().code();
    return code == absl::StatusCode::kUnavailable ? 1 : 2;
  }
  const int threads = config.listen.threads > 0
                          ? config.listen.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Printed once the signal handlers are installed: a SIGHUP sent on seeing this line reloads
  // (printed before Run, a SIGHUP in that window ended the process).
  (*gateway)->Run(/*handle_signals=*/true, [&] {
    std::printf("warmroute serve listening on %s:%u (policy %s, %zu backends, %d threads)\n",
                config.listen.host.c_str(), (*gateway)->port(), config.policy.name.c_str(),
                config.backends.size(), threads);
    std::fflush(stdout);
  });
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "the gateway: OpenAI-compatible, streaming, prefix-aware reverse proxy");
  cmd->add_option("--config", flags->config_path, "YAML config file (see deploy/*.yaml)");
  cmd->add_option("--port", flags->port, "listen port (overrides listen.port; 0: ephemeral)");
  cmd->add_option("--host", flags->host, "listen address (overrides listen.host)");
  cmd->add_option("--threads", flags->threads, "worker threads (overrides listen.threads)");
  cmd->add_option("--policy", flags->policy, "routing policy (overrides policy.name)");
  cmd->add_option("--backend", flags->backends,
                  "backend URL http://host:port, repeatable (replaces the config's backends)");
  cmd->add_option("--access-log", flags->access_log,
                  "stderr, off or a file (overrides observability.access_log)");
  cmd->add_flag("--check-config", flags->check_config,
                "validate the config (and flags) and exit: 0 when it is valid, 2 with the error");
  AddLogLevelOption(*cmd, flags->log_level);
  cmd->callback([flags, exit_code] { *exit_code = RunServe(*flags); });
}

}  // namespace warmroute::cli
