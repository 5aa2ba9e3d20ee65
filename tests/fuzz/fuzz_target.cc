#include "fuzz_target.h"

#include <vector>

namespace warmroute::fuzz {
namespace {

std::vector<Target>& Registry() {
  static std::vector<Target> targets;
  return targets;
}

}  // namespace

int RegisterTarget(const char* name, TargetFunction run) {
  Registry().push_back({name, run});
  return static_cast<int>(Registry().size()) - 1;
}

const Target* Targets(size_t& count) {
  count = Registry().size();
  return Registry().data();
}

const Target* FindTarget(std::string_view name) {
  for (const Target& target : Registry()) {
    if (name == target.name) return &target;
  }
  return nullptr;
}

}  // namespace warmroute::fuzz
