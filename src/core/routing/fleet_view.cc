#include "core/routing/fleet_view.h"

#include <algorithm>

namespace warmroute::routing {

bool BackendState::Serves(std::string_view model) const {
  return model.empty() || models.empty() ||
         std::find(models.begin(), models.end(), model) != models.end();
}

BackendId FleetView::Add(BackendState state) {
  backends_.push_back(std::move(state));
  return static_cast<BackendId>(backends_.size() - 1);
}

}  // namespace warmroute::routing
