// The admin API's body (POST /admin/backends: gateway/config/config.h ParseBackendJson): a bad
// body is refused with a message, never a crash.
#include "fuzz_target.h"
#include "gateway/config/config.h"

WARMROUTE_FUZZ_TARGET(admin_backend) {
  absl::StatusOr<warmroute::gateway::BackendConfig> backend =
      warmroute::gateway::ParseBackendJson(warmroute::fuzz::AsText(data, size));
  if (!backend.ok()) FUZZ_CHECK(!backend.status().message().empty());
  return 0;
}
