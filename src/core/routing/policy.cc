#include "core/routing/policy.h"

#include <algorithm>
#include <cmath>

namespace warmroute::routing {

std::string_view ReasonName(Reason reason) {
  switch (reason) {
    case Reason::kCacheHit:
      return "cache_hit";
    case Reason::kColdHome:
      return "cold_home";
    case Reason::kSpillHot:
      return "spill_hot";
    case Reason::kLeastLoad:
      return "least_load";
    case Reason::kHash:
      return "hash";
    case Reason::kRoundRobin:
      return "round_robin";
    case Reason::kRandom:
      return "random";
    case Reason::kPinned:
      return "pinned";
  }
  return "unknown";
}

int64_t PromptTokens(const RoutingRequest& request) {
  return request.prompt_tokens > 0 ? request.prompt_tokens : request.key.prompt_tokens;
}

int64_t PredictedCachedTokens(const RoutingRequest& request, int32_t matched_blocks) {
  const int64_t prompt = PromptTokens(request);
  if (matched_blocks <= 0 || prompt <= 1) return 0;
  const double tokens = std::floor(matched_blocks * request.key.tokens_per_block);
  return std::clamp<int64_t>(static_cast<int64_t>(tokens), 0, prompt - 1);
}

}  // namespace warmroute::routing
