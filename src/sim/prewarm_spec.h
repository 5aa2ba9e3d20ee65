// `warmroute sim --prewarm KEY=VALUE,...`: the prewarm planner's options (routing/
// prewarm_planner.h) from the command line. Keys: max_prefixes, max_tokens_per_s, max_in_flight,
// max_target_queue_tokens, id_blocks, half_life_s, max_wait_s, max_fill_fraction, join_homes;
// the ones not given keep their defaults. An empty spec is the defaults.
//
// Usage:
//   absl::StatusOr<routing::PrewarmOptions> o = ParsePrewarmSpec("max_prefixes=1024");
//
// Thread-safety: a pure function.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "core/routing/prewarm_planner.h"

namespace warmroute::sim {

// InvalidArgument naming --prewarm for an unknown key, a value that is not a number, a value
// out of range (routing::ValidatePrewarmOptions) or an item without '='.
absl::StatusOr<routing::PrewarmOptions> ParsePrewarmSpec(std::string_view spec);

}  // namespace warmroute::sim
