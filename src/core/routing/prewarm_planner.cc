#include "core/routing/prewarm_planner.h"

#include "absl/strings/str_cat.h"

namespace warmroute::routing {

std::string_view PrewarmReasonName(PrewarmReason reason) {
  return reason == PrewarmReason::kHandoff ? "handoff" : "join";
}

absl::Status ValidatePrewarmOptions(const PrewarmOptions& o) {
  const auto bad = [](std::string_view field, std::string_view rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("prewarm: ", std::string(field), " ", std::string(rule)));
  };
  if (o.max_prefixes > 1'000'000) return bad("max_prefixes", "must be at most 1000000");
  if (!(o.max_tokens_per_s > 0)) return bad("max_tokens_per_s", "must be positive");
  if (o.max_in_flight < 1) return bad("max_in_flight", "must be at least 1");
  if (o.max_target_queue_tokens < 0) return bad("max_target_queue_tokens", "must be non-negative");
  if (o.id_blocks < 1) return bad("id_blocks", "must be at least 1");
  if (o.half_life <= Duration(0)) return bad("half_life_s", "must be positive");
  if (o.max_wait <= Duration(0)) return bad("max_wait_s", "must be positive");
  if (o.join_homes < 0) return bad("join_homes", "must be non-negative");
  if (!(o.max_fill_fraction > 0 && o.max_fill_fraction <= 1)) {
    return bad("max_fill_fraction", "must be in (0, 1]");
  }
  return absl::OkStatus();
}

uint64_t PrewarmPrefixId(const PrefixKey& key, int id_blocks) {
  if (key.block_hashes.empty()) return 0;
  const size_t depth =
      std::min(key.block_hashes.size(), static_cast<size_t>(std::max(1, id_blocks)));
  return key.block_hashes[depth - 1];
}

}  // namespace warmroute::routing
