#include "core/routing/policies/param_reader.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace warmroute::routing {

ParamReader::ParamReader(std::string_view policy, const PolicyParams& params)
    : policy_(policy), params_(params) {}

double ParamReader::Get(std::string_view key, double default_value) {
  known_.emplace(key);
  auto it = params_.find(key);
  if (it == params_.end()) return default_value;
  Require(std::isfinite(it->second), key, "must be a finite number");
  return it->second;
}

int ParamReader::GetInt(std::string_view key, int default_value, int min, int max) {
  const double value = Get(key, default_value);
  if (!(value == std::floor(value) && value >= min && value <= max)) {
    Require(false, key, absl::StrCat("must be a whole number in [", min, ", ", max, "]"));
    return default_value;
  }
  return static_cast<int>(value);
}

void ParamReader::Require(bool ok, std::string_view key, std::string_view what) {
  if (ok || !error_.ok()) return;
  auto it = params_.find(key);
  const std::string value = it == params_.end() ? "its default" : absl::StrCat(it->second);
  error_ =
      absl::InvalidArgumentError(absl::StrCat("policy ", policy_, ": parameter ", std::string(key),
                                              " ", std::string(what), ", got ", value));
}

absl::Status ParamReader::status() const {
  if (!error_.ok()) return error_;
  for (const auto& [key, value] : params_) {
    if (!known_.contains(key)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy ", policy_, " has no parameter '", key, "'",
          known_.empty() ? std::string(" (it takes none)")
                         : absl::StrCat(" (known: ", absl::StrJoin(known_, ", "), ")")));
    }
  }
  return absl::OkStatus();
}

}  // namespace warmroute::routing
