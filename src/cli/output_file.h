// Writing a command's output files (--json, --markdown): the whole text, or an error naming the
// path and the system's reason.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace warmroute::cli {

// Writes `text` to `path` (created or truncated). Internal "cannot write PATH: reason" on failure.
absl::Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace warmroute::cli
