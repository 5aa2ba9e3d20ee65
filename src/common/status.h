// Status helpers shared by every component: early-return macros (Abseil 20220623 has no
// status_macros.h) and an "offending parameter" payload so that one function at the HTTP edge
// can build OpenAI-style error bodies ({"error": {"message", "type", "param", "code"}}).
//
// Usage:
//   absl::Status Parse(...) {
//     if (bad) return InvalidParam("max_tokens", "max_tokens must be at least 1");
//     WR_RETURN_IF_ERROR(Other());
//     WR_ASSIGN_OR_RETURN(auto v, MakeValue());
//   }
// Thread-safe: stateless.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace warmroute {

// An InvalidArgument status that names the request parameter at fault (OpenAI's "param").
absl::Status InvalidParam(std::string_view param, std::string_view message);

// The parameter attached by InvalidParam (or WithParam), if any.
std::optional<std::string> ParamOf(const absl::Status& status);

// Returns `status` with `param` attached as the offending parameter.
absl::Status WithParam(absl::Status status, std::string_view param);

}  // namespace warmroute

#define WR_STATUS_CONCAT_INNER_(a, b) a##b
#define WR_STATUS_CONCAT_(a, b) WR_STATUS_CONCAT_INNER_(a, b)

#define WR_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::absl::Status wr_status_ = (expr);          \
    if (!wr_status_.ok()) return wr_status_;     \
  } while (0)

#define WR_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return std::move(tmp).status();  \
  lhs = std::move(tmp).value()

#define WR_ASSIGN_OR_RETURN(lhs, expr) \
  WR_ASSIGN_OR_RETURN_IMPL_(WR_STATUS_CONCAT_(wr_statusor_, __LINE__), lhs, expr)
