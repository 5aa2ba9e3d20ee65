#include "common/status.h"

#include "absl/strings/cord.h"

namespace warmroute {
namespace {
// Debian's Abseil is built without std::string_view aliasing (absl::string_view is its own
// type), so std::string_view values cross into Abseil as std::string.
constexpr char kParamPayload[] = "warmroute/param";
}  // namespace

absl::Status InvalidParam(std::string_view param, std::string_view message) {
  return WithParam(absl::InvalidArgumentError(std::string(message)), param);
}

absl::Status WithParam(absl::Status status, std::string_view param) {
  if (!status.ok()) status.SetPayload(kParamPayload, absl::Cord(std::string(param)));
  return status;
}

std::optional<std::string> ParamOf(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kParamPayload);  // not std::optional here
  if (!payload) return std::nullopt;
  return std::string(*payload);
}

}  // namespace warmroute
