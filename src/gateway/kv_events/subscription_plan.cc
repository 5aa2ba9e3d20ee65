#include "gateway/kv_events/subscription_plan.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"

namespace warmroute::gateway {

SubscriptionChanges SubscriptionPlan::Update(const std::vector<FeedSpec>& wanted) {
  SubscriptionChanges out;
  absl::flat_hash_set<routing::BackendId> keep;
  for (const FeedSpec& spec : wanted) {
    if (!spec.kv_events.enabled()) continue;
    auto it = open_.find(spec.backend);
    if (it != open_.end() && it->second == spec) {
      keep.insert(spec.backend);
      continue;
    }
    if (it != open_.end()) out.close.push_back(spec.backend);
    out.open.push_back(spec);
    keep.insert(spec.backend);
  }
  for (const auto& [backend, spec] : open_) {
    if (!keep.contains(backend)) out.close.push_back(backend);
  }
  std::sort(out.close.begin(), out.close.end());
  for (routing::BackendId b : out.close) open_.erase(b);
  for (const FeedSpec& spec : out.open) open_[spec.backend] = spec;
  return out;
}

}  // namespace warmroute::gateway
