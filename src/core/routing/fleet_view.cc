#include "core/routing/fleet_view.h"

#include <algorithm>

namespace warmroute::routing {

bool BackendState::Serves(std::string_view model) const {
  // An empty model asks for the server's default model, which every backend has.
  return model.empty() || models.empty() ||
         std::find(models.begin(), models.end(), model) != models.end();
}

bool BackendState::InPools(std::span<const std::string> pools) const {
  return pools.empty() || std::find(pools.begin(), pools.end(), pool) != pools.end();
}

BackendId FleetView::Add(BackendState state) {
  backends_.push_back(std::move(state));
  return static_cast<BackendId>(backends_.size() - 1);
}

}  // namespace warmroute::routing
