#include "gateway/proxy/upstream_pools.h"

#include <algorithm>
#include <vector>

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
  std::vector<std::string> present;
  for (const auto& t : backends_.Targets()) present.push_back(t->address);
  absl::erase_if(pools_, [&](const auto& entry) {
    return std::find(present.begin(), present.end(), entry.first) == present.end();
  });
}

}  // namespace warmroute::gateway
