#include "core/workload/workload_params.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace warmroute::workload {

ParamReader::ParamReader(std::string_view workload, const WorkloadParams& params)
    : workload_(workload), params_(params) {}

const double* ParamReader::Find(std::string_view key) {
  declared_.emplace_back(key);
  const auto it = params_.find(std::string(key));
  return it == params_.end() ? nullptr : &it->second;
}

void ParamReader::Fail(std::string_view key, std::string message) {
  if (first_error_.ok()) first_error_ = InvalidParam(key, message);
}

void ParamReader::Int(std::string_view key, int64_t min, int64_t max, int64_t* value) {
  const double* given = Find(key);
  if (given == nullptr) return;
  if (!(std::isfinite(*given) && *given == std::floor(*given) &&
        *given >= static_cast<double>(min) && *given <= static_cast<double>(max))) {
    Fail(key, absl::StrCat("workload ", workload_, " parameter ", std::string(key),
                           " must be a whole number in [", min, ", ", max, "], got ", *given));
    return;
  }
  *value = static_cast<int64_t>(*given);
}

void ParamReader::Int(std::string_view key, int64_t min, int64_t max, int* value) {
  int64_t wide = *value;
  Int(key, min, max, &wide);
  *value = static_cast<int>(wide);
}

void ParamReader::Double(std::string_view key, double min, double max, double* value) {
  const double* given = Find(key);
  if (given == nullptr) return;
  if (!(std::isfinite(*given) && *given >= min && *given <= max)) {
    Fail(key, absl::StrCat("workload ", workload_, " parameter ", std::string(key), " must be in [",
                           min, ", ", max, "], got ", *given));
    return;
  }
  *value = *given;
}

void ParamReader::Require(bool ok, std::string_view key, std::string_view message) {
  if (!ok) Fail(key, absl::StrCat("workload ", workload_, ": ", std::string(message)));
}

absl::Status ParamReader::Finish() const {
  if (!first_error_.ok()) return first_error_;
  for (const auto& [key, value] : params_) {
    if (std::find(declared_.begin(), declared_.end(), key) != declared_.end()) continue;
    if (declared_.empty()) {
      return InvalidParam(key, absl::StrCat("unknown parameter \"", key, "\" for workload ",
                                            workload_, ", which takes no parameters"));
    }
    return InvalidParam(key,
                        absl::StrCat("unknown parameter \"", key, "\" for workload ", workload_,
                                     "; valid parameters: ", absl::StrJoin(declared_, ", ")));
  }
  return absl::OkStatus();
}

}  // namespace warmroute::workload
