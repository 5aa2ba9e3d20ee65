#include "cli/build_info.h"

#include "absl/strings/str_cat.h"

namespace warmroute::cli {

std::string VersionLine() {
  return absl::StrCat("warmroute ", WARMROUTE_VERSION, " (commit ", kBuildCommit, ")");
}

}  // namespace warmroute::cli
