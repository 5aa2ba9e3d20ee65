#include "core/routing/prewarm_planner.h"

namespace warmroute::routing {

std::string_view PrewarmReasonName(PrewarmReason reason) {
  return reason == PrewarmReason::kHandoff ? "handoff" : "join";
}

uint64_t PrewarmPrefixId(const PrefixKey& key, int id_blocks) {
  if (key.block_hashes.empty()) return 0;
  const size_t depth = std::min(key.block_hashes.size(), static_cast<size_t>(std::max(1, id_blocks)));
  return key.block_hashes[depth - 1];
}

}  // namespace warmroute::routing
