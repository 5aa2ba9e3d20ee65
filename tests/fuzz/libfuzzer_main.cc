// libFuzzer's entry point for one target: the executable fuzz_<name> is this file, the registry
// and tests/fuzz/targets/<name>.cc, so exactly one target is registered.
#include <cstdio>
#include <cstdlib>

#include "fuzz_target.h"

namespace {

const warmroute::fuzz::Target* TheTarget() {
  static const warmroute::fuzz::Target* target = [] {
    size_t count = 0;
    const warmroute::fuzz::Target* targets = warmroute::fuzz::Targets(count);
    if (count != 1) {
      std::fprintf(stderr, "a libFuzzer executable must hold exactly one target, not %zu\n", count);
      std::abort();
    }
    return targets;
  }();
  return target;
}

}  // namespace

// Runs the target once on an empty input before fuzzing starts, so that its one-time set-up
// (loading a tokenizer: seconds under ASan) does not count against -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  TheTarget()->run(nullptr, 0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return TheTarget()->run(data, size);
}
