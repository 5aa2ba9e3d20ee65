#include "core/workload/file_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace warmroute::workload {
namespace {

absl::Status ReadError(std::string_view what, const std::string& path, int error) {
  const std::string message =
      absl::StrCat("cannot read ", std::string(what), " ", path, ": ", std::strerror(error));
  return error == ENOENT ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
}

}  // namespace

absl::StatusOr<std::string> ReadFileText(const std::string& path, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ReadError(what, path, errno);
  std::string text;
  struct stat info {};
  if (::fstat(fd, &info) == 0) {
    if (S_ISDIR(info.st_mode)) {
      ::close(fd);
      return ReadError(what, path, EISDIR);
    }
    if (info.st_size > 0) text.reserve(static_cast<size_t>(info.st_size));
  }
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      return ReadError(what, path, error);
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

}  // namespace warmroute::workload
