#include "gateway/fleet/discovery_reconciler.h"

#include <arpa/inet.h>

#include "absl/strings/str_cat.h"

namespace warmroute::gateway {

std::string EndpointAddress(const DiscoveredEndpoint& endpoint) {
  if (endpoint.host.find(':') != std::string::npos) {
    // An IPv6 address in inet_ntop's form, as DNS answers are decoded ("FD00:0::5" in a
    // configured url is the same address as "fd00::5").
    unsigned char bytes[16];
    char text[INET6_ADDRSTRLEN] = {};
    if (inet_pton(AF_INET6, endpoint.host.c_str(), bytes) == 1 &&
        inet_ntop(AF_INET6, bytes, text, sizeof(text)) != nullptr) {
      return absl::StrCat("[", text, "]:", endpoint.port);
    }
    return absl::StrCat("[", endpoint.host, "]:", endpoint.port);
  }
  return absl::StrCat(endpoint.host, ":", endpoint.port);
}

std::string DiscoveredBackendName(const DiscoveredEndpoint& endpoint) {
  return absl::StrCat("dns:", EndpointAddress(endpoint));
}

ResolveTransition DiscoveryReconciler::SetHealthy(bool healthy) {
  const bool changed = healthy_ != healthy;
  healthy_ = healthy;
  if (!changed) return ResolveTransition::kNone;
  return healthy ? ResolveTransition::kNowOk : ResolveTransition::kNowFailing;
}

DiscoveryChanges DiscoveryReconciler::OnResolved(
    TimePoint now, const absl::StatusOr<std::vector<DiscoveredEndpoint>>& outcome,
    const std::set<std::string>& taken) {
  ++resolutions_;
  DiscoveryChanges changes;
  if (!outcome.ok() || outcome->empty()) {
    ++failures_;
    last_error_ = outcome.ok() ? absl::NotFoundError("the answer holds no address")
                               : outcome.status();
    changes.transition = SetHealthy(false);
    return changes;
  }
  last_error_ = absl::OkStatus();
  last_success_ = now;
  changes.transition = SetHealthy(true);

  std::set<std::string> listed;
  for (const DiscoveredEndpoint& endpoint : std::set<DiscoveredEndpoint>(outcome->begin(),
                                                                         outcome->end())) {
    if (taken.contains(EndpointAddress(endpoint))) continue;
    const std::string name = DiscoveredBackendName(endpoint);
    listed.insert(name);
    auto it = members_.find(name);
    if (it == members_.end()) {
      members_.emplace(name, Member{.endpoint = endpoint});
      changes.add.push_back(endpoint);
    } else if (it->second.draining) {
      it->second.draining = false;
      changes.undrain.push_back(name);
    }
  }
  for (auto it = members_.begin(); it != members_.end();) {
    if (listed.contains(it->first)) {
      ++it;
    } else if (!it->second.draining) {
      it->second.draining = true;
      changes.drain.push_back(it->first);
      ++it;
    } else {
      changes.remove.push_back(it->first);
      it = members_.erase(it);
    }
  }
  return changes;
}

std::map<std::string, DiscoveredEndpoint> DiscoveryReconciler::members() const {
  std::map<std::string, DiscoveredEndpoint> out;
  for (const auto& [name, member] : members_) out.emplace(name, member.endpoint);
  return out;
}

void DiscoveryReconciler::Forget(const std::string& name) { members_.erase(name); }

DiscoveryChanges DiscoveryReconciler::Stop() {
  DiscoveryChanges changes;
  for (const auto& [name, member] : members_) changes.remove.push_back(name);
  members_.clear();
  healthy_.reset();
  last_error_ = absl::OkStatus();
  return changes;
}

void DiscoveryReconciler::Rename() {
  healthy_.reset();
  last_success_.reset();
  last_error_ = absl::OkStatus();
}

}  // namespace warmroute::gateway
