#include "core/routing/fleet_view.h"

#include <algorithm>

namespace warmroute::routing {

bool BackendState::Serves(std::string_view model) const {
  // An empty model asks for the server's default model, which every backend has.
  return model.empty() || models.empty() ||
         std::find(models.begin(), models.end(), model) != models.end();
}

BackendLoad BackendState::own_load(TimePoint now) const {
  int64_t remaining = 0;
  if (outstanding_prefill_tokens > 0) {
    const double by_time = ToSeconds(prefill_done_at - now) * std::max(1.0, prefill_tokens_per_s);
    remaining = static_cast<int64_t>(
        std::clamp(by_time, 1.0, static_cast<double>(outstanding_prefill_tokens)));
  }
  return {.in_flight = in_flight,
          .outstanding_prefill_tokens = remaining,
          .running_decodes = running_decodes,
          .decode_context_tokens = decode_context_tokens};
}

bool BackendState::InPools(std::span<const std::string> pools) const {
  return pools.empty() || std::find(pools.begin(), pools.end(), pool) != pools.end();
}

BackendId FleetView::Add(BackendState state) {
  backends_.push_back(std::move(state));
  return static_cast<BackendId>(backends_.size() - 1);
}

}  // namespace warmroute::routing
