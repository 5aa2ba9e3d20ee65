#include "gateway/proxy/upstream_pools.h"

#include <memory>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace warmroute::gateway {

net::UpstreamPool& UpstreamPools::For(const BackendTarget& target) {
  auto it = pools_.find(target.address);
  if (it != pools_.end() && it->second->tls_context() != target.tls_context.get()) {
    pools_.erase(it);  // replaced at the same address with other TLS settings
    it = pools_.end();
  }
  if (it == pools_.end()) {
    DropGone();  // a new address: first forget the pools of backends that are gone
    net::PoolOptions options;
    options.tls = target.tls_context;
    options.tls_server_name = target.tls.server_name;
    it = pools_
             .emplace(target.address, std::make_unique<net::UpstreamPool>(executor_, target.host,
                                                                          target.port, options))
             .first;
  }
  return *it->second;
}

void UpstreamPools::Sweep() {
  DropGone();
  for (auto& [address, pool] : pools_) pool->CloseStale();
}

void UpstreamPools::DropGone() {
  const std::vector<std::shared_ptr<const BackendTarget>> targets = backends_.Targets();
  absl::flat_hash_set<std::string_view> present;  // views into `targets`
  for (const auto& t : targets) present.insert(t->address);
  absl::erase_if(pools_, [&](const auto& entry) { return !present.contains(entry.first); });
}

}  // namespace warmroute::gateway
