#include "sim/prewarm_spec.h"

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/absl_view.h"
#include "common/status.h"

namespace warmroute::sim {

absl::StatusOr<routing::PrewarmOptions> ParsePrewarmSpec(std::string_view spec) {
  routing::PrewarmOptions o;
  for (absl::string_view item : absl::StrSplit(AbslView(spec), ',', absl::SkipEmpty())) {
    const std::vector<absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2) {
      return InvalidParam("prewarm", absl::StrCat("--prewarm: \"", std::string(item),
                                                  "\" is not KEY=VALUE, e.g. max_prefixes=256"));
    }
    double value = 0;
    if (!absl::SimpleAtod(kv[1], &value) || !std::isfinite(value) || value < 0 || value > 1e12) {
      return InvalidParam("prewarm",
                          absl::StrCat("--prewarm: ", std::string(kv[0]), "=", std::string(kv[1]),
                                       " is not a non-negative number"));
    }
    const auto seconds = [](double s) {
      return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
    };
    const absl::string_view key = kv[0];
    if (key == "max_prefixes") {
      o.max_prefixes = static_cast<size_t>(value);
    } else if (key == "max_tokens_per_s") {
      o.max_tokens_per_s = value;
    } else if (key == "max_in_flight") {
      o.max_in_flight = static_cast<int>(std::min(value, 1e6));
    } else if (key == "max_target_queue_tokens") {
      o.max_target_queue_tokens = static_cast<int64_t>(value);
    } else if (key == "id_blocks") {
      o.id_blocks = static_cast<int>(std::min(value, 1e6));
    } else if (key == "half_life_s") {
      o.half_life = seconds(value);
    } else if (key == "max_wait_s") {
      o.max_wait = seconds(value);
    } else if (key == "join_homes") {
      o.join_homes = static_cast<int>(std::min(value, 1e6));
    } else if (key == "max_fill_fraction") {
      o.max_fill_fraction = value;
    } else {
      return InvalidParam(
          "prewarm",
          absl::StrCat(
              "--prewarm: unknown key \"", std::string(key),
              "\"; expected max_prefixes, max_tokens_per_s, max_in_flight, "
              "max_target_queue_tokens, id_blocks, half_life_s, max_wait_s, max_fill_fraction or "
              "join_homes"));
    }
  }
  if (absl::Status s = routing::ValidatePrewarmOptions(o); !s.ok()) {
    return InvalidParam("prewarm", absl::StrCat("--", std::string(s.message())));
  }
  return o;
}

}  // namespace warmroute::sim
