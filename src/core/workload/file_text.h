// Reading a whole input file (a trace, a results file) with an error that says why it could not
// be read: "cannot read trace file t.jsonl: No such file or directory".
//
// Usage:
//   absl::StatusOr<std::string> text = ReadFileText("trace.jsonl", "trace file");
//
// Thread-safety: thread-safe (reads the file system only).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace warmroute::workload {

// The bytes of the file at `path`, read to its end (so files whose size the OS does not report,
// such as /proc files and pipes, are read whole). Errors name `what` and `path` and give the OS's
// reason: NotFound when there is no such file, InvalidArgument for a directory, a file without
// read permission or any other failure.
absl::StatusOr<std::string> ReadFileText(const std::string& path, std::string_view what);

}  // namespace warmroute::workload
