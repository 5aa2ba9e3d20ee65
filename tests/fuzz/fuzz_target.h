// Fuzz targets: functions of arbitrary bytes from outside the gateway (clients, engines, Redis,
// DNS servers, operators' files) that must not crash, hang, leak or break a property. Each file
// in tests/fuzz/targets/ registers one:
//
//   WARMROUTE_FUZZ_TARGET(resp) {            // (const uint8_t* data, size_t size)
//     net::RespValue value;
//     (void)net::ParseResp(AsText(data, size), value);
//     return 0;
//   }
//
// A property a target checks fails through FUZZ_CHECK, which prints what broke and aborts (a
// crash to both drivers). Two drivers run the targets (docs/fuzzing.md):
//   - libFuzzer (`make fuzz`: the `fuzz` preset, clang with ASan and UBSan): one executable per
//     target, fuzz_<name>, built from the target's file and libfuzzer_main.cc;
//   - fuzz_replay (every build, so `make test`): all targets in one executable, which replays a
//     corpus and then mutates it for a few seconds (replay_main.cc).
//
// Thread-safety: targets run on one thread; a target's static state is its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace warmroute::fuzz {

using TargetFunction = int (*)(const uint8_t* data, size_t size);

struct Target {
  const char* name;
  TargetFunction run;
};

// Adds a target to the registry (at static initialisation). Returns its index.
int RegisterTarget(const char* name, TargetFunction run);

// The registered targets, in registration order; `count` is set to their number.
const Target* Targets(size_t& count);

// The target called `name`, or null.
const Target* FindTarget(std::string_view name);

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// Splits the input into a leading byte (a choice: an endpoint, a split point, a seed) and the
// rest; an empty input gives 0 and nothing.
inline uint8_t TakeByte(const uint8_t*& data, size_t& size) {
  if (size == 0) return 0;
  --size;
  return *data++;
}

[[noreturn]] inline void CheckFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "FUZZ_CHECK failed: %s at %s:%d\n", condition, file, line);
  std::abort();
}

}  // namespace warmroute::fuzz

#define FUZZ_CHECK(condition) \
  ((condition) ? (void)0 : ::warmroute::fuzz::CheckFailed(#condition, __FILE__, __LINE__))

#define WARMROUTE_FUZZ_TARGET(name)                                                        \
  static int FuzzTarget_##name(const uint8_t* data, size_t size);                          \
  [[maybe_unused]] static const int kFuzzTargetIndex_##name =                              \
      ::warmroute::fuzz::RegisterTarget(#name, &FuzzTarget_##name);                        \
  static int FuzzTarget_##name([[maybe_unused]] const uint8_t* data, [[maybe_unused]] size_t size)
