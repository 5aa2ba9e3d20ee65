// What `warmroute --version` prints: the release version and the git commit the binary was built
// from (bug reports need both).
//
//   warmroute 0.1.0 (commit 87b402c0a1b2)
//
// The commit is found at build time (cmake/build_info.cmake): 12 hex digits, with "-dirty" when
// tracked files differed from it, or "unknown" outside a git checkout.
#pragma once

#include <string>

namespace warmroute::cli {

extern const char kBuildCommit[];  // defined in the build's generated build_commit.cc

// "warmroute <version> (commit <commit>)".
std::string VersionLine();

}  // namespace warmroute::cli
