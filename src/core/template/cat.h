// Cat(...): absl::StrCat that also takes std::string_view (Debian's Abseil has its own
// string_view type, which std::string_view does not convert to; see common/absl_view.h).
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"

namespace warmroute::jinja {
namespace cat_internal {

template <typename T>
const T& Arg(const T& v) {
  return v;
}
inline absl::string_view Arg(std::string_view v) { return AbslView(v); }

}  // namespace cat_internal

template <typename... Args>
std::string Cat(const Args&... args) {
  return absl::StrCat(cat_internal::Arg(args)...);
}

}  // namespace warmroute::jinja
