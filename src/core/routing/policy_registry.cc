#include "core/routing/policy_registry.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/routing/policies/consistent_hash.h"
#include "core/routing/policies/dynamo_kv.h"
#include "core/routing/policies/least_request.h"
#include "core/routing/policies/llmd_weighted.h"
#include "core/routing/policies/power_of_two.h"
#include "core/routing/policies/preble.h"
#include "core/routing/policies/random.h"
#include "core/routing/policies/round_robin.h"
#include "core/routing/policies/sglang_cache_aware.h"
#include "core/routing/policies/warmroute.h"

namespace warmroute::routing {
namespace {

struct Entry {
  std::string_view name;
  absl::StatusOr<std::unique_ptr<Policy>> (*make)(ParamReader& params);
};

constexpr std::array<Entry, 11> kPolicies = {{
    {"warmroute", &MakeWarmroutePolicy},
    {"round_robin", &MakeRoundRobinPolicy},
    {"random", &MakeRandomPolicy},
    {"least_request", &MakeLeastRequestPolicy},
    {"power_of_two", &MakePowerOfTwoPolicy},
    {"consistent_hash", &MakeConsistentHashPolicy},
    {"sglang_cache_aware", &MakeSglangCacheAwarePolicy},
    {"dynamo_kv", &MakeDynamoKvPolicy},
    {"llmd_weighted", &MakeLlmdWeightedPolicy},
    {"llmd_precise", &MakeLlmdPrecisePolicy},
    {"preble", &MakePreblePolicy},
}};

}  // namespace

absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name,
                                                   const PolicyParams& params) {
  for (const Entry& entry : kPolicies) {
    if (entry.name == name) {
      ParamReader reader(entry.name, params);
      return entry.make(reader);
    }
  }
  return absl::NotFoundError(absl::StrCat("unknown routing policy '", std::string(name),
                                          "' (known: ", absl::StrJoin(PolicyNames(), ", "), ")"));
}

std::vector<std::string> PolicyNames() {
  std::vector<std::string> names;
  names.reserve(kPolicies.size());
  for (const Entry& entry : kPolicies) names.emplace_back(entry.name);
  return names;
}

}  // namespace warmroute::routing
