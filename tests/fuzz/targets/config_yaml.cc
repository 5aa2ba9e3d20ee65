// The gateway's YAML config loader (gateway/config/config.h) on an operator's file: a bad file
// must be refused with a message naming the problem, never crash or hang (yaml-cpp recursion on
// deep nesting, numbers out of range, wrong types). An accepted config also renders as
// /admin/config's JSON.
#include <string>

#include "fuzz_target.h"
#include "gateway/config/config.h"

WARMROUTE_FUZZ_TARGET(config_yaml) {
  absl::StatusOr<warmroute::gateway::GatewayConfig> config =
      warmroute::gateway::ParseGatewayConfig(warmroute::fuzz::AsText(data, size));
  if (!config.ok()) {
    FUZZ_CHECK(!config.status().message().empty());
    return 0;
  }
  (void)warmroute::gateway::EffectiveConfigJson(*config);
  return 0;
}
