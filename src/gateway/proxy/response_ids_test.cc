#include "gateway/proxy/response_ids.h"

#include <gtest/gtest.h>

#include <set>

#include "core/routing/policies/policy_util.h"

namespace warmroute::gateway {
namespace {

TEST(ResponseIdsTest, AnIssuedIdNamesItsBackendForAnyGatewayReplica) {
  Rng one(1);
  Rng another(2);  // another gateway replica, another worker
  const std::string a = NewResponseId("gpu-3", one);
  const std::string b = NewResponseId("gpu-3", another);
  EXPECT_NE(a, b);
  EXPECT_TRUE(a.starts_with("resp_wr1"));
  EXPECT_EQ(a.size(), 8u + 16 + 24);
  EXPECT_EQ(BackendHashOfResponseId(a), routing::NameHash("gpu-3"));
  EXPECT_EQ(BackendHashOfResponseId(b), routing::NameHash("gpu-3"));
  EXPECT_NE(BackendHashOfResponseId(NewResponseId("gpu-4", one)), routing::NameHash("gpu-3"));
}

TEST(ResponseIdsTest, IdsDoNotRepeat) {
  Rng rng(7);
  std::set<std::string> ids;
  for (int i = 0; i < 10000; ++i) ids.insert(NewResponseId("r0", rng));
  EXPECT_EQ(ids.size(), 10000u);
}

TEST(ResponseIdsTest, OtherIdsNameNoBackend) {
  Rng rng(1);
  const std::string ours = NewResponseId("r0", rng);
  for (const std::string& id : {std::string("resp_0123456789abcdef0123456789abcdef"),  // vLLM's own
                                std::string("resp_wr1"), ours.substr(0, ours.size() - 1),
                                ours + "0", std::string(ours).replace(10, 1, "G"),
                                std::string(ours).replace(10, 1, "A"), std::string("")}) {
    EXPECT_EQ(BackendHashOfResponseId(id), std::nullopt) << id;
  }
}

}  // namespace
}  // namespace warmroute::gateway
