// Debian's Abseil has its own string_view type (ABSL_USES_STD_STRING_VIEW is off), which
// std::string_view does not convert to: the view Abseil's string functions (StrCat, StartsWith,
// AsciiStrToLower, ...) and heterogeneous lookups in its hash maps take.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace warmroute {

inline absl::string_view AbslView(std::string_view v) {
  return absl::string_view(v.data(), v.size());
}

}  // namespace warmroute
