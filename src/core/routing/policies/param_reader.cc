#include "core/routing/policies/param_reader.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace warmroute::routing {

ParamReader::ParamReader(std::string_view policy, const PolicyParams& params)
    : policy_(policy), params_(params) {}

double ParamReader::Get(std::string_view key, double default_value) {
  known_.emplace(key);
  auto it = params_.find(key);
  return it == params_.end() ? default_value : it->second;
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
