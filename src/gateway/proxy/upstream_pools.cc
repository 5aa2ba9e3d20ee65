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
    // A new address: first forget the pools of backends that are gone.
    std::vector<std::string> present;
    for (const auto& t : backends_.Targets()) present.push_back(t->address);
    for (auto p = pools_.begin(); p != pools_.end();) {
      if (std::find(present.begin(), present.end(), p->first) == present.end()) {
        pools_.erase(p++);
      } else {
        ++p;
      }
    }
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

}  // namespace warmroute::gateway
