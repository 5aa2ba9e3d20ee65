#include "common/gnuplot.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace warmroute::gnuplot {
namespace {

constexpr size_t kMaxCdfPoints = 2000;

// POSIX shell single-quoted word.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

std::string Slug(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string Terminal(const std::string& png) {
  // gnuplot cycles through 8 line colours: with the simulator's 10 policies two pairs would share
  // one. Line types 9-12 get colours of their own, and the cycle is 12.
  return absl::StrCat("set terminal pngcairo size 1100,650 noenhanced\nset output ", Quote(png),
                      "\nset grid\nset key outside right top\n",
                      "set linetype 9 lc rgb '#8c564b'\nset linetype 10 lc rgb '#ff69b4'\n"
                      "set linetype 11 lc rgb '#7f7f7f'\nset linetype 12 lc rgb '#bcbd22'\n"
                      "set linetype cycle 12\n");
}

std::string CdfData(const std::string& title, std::span<const double> sorted, double scale) {
  std::string out = absl::StrCat("# ", title, ": value cdf\n");
  const size_t n = sorted.size();
  const size_t step = std::max<size_t>(1, n / kMaxCdfPoints);
  for (size_t i = 0; i < n; i += step) {
    absl::StrAppendFormat(&out, "%.6g %.6g\n", scale * sorted[i],
                          static_cast<double>(i + 1) / static_cast<double>(n));
  }
  if (n > 0) absl::StrAppendFormat(&out, "%.6g 1\n", scale * sorted.back());
  return out;
}

absl::Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  // The stream failed in open(2), write(2) or close(2): errno says why (ENOENT, EACCES, ENOSPC).
  if (!file) {
    return absl::InternalError(absl::StrCat("cannot write ", path.string(), ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status MakeDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

bool Available() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

absl::Status Run(const std::filesystem::path& root, const std::vector<std::string>& scripts) {
  for (const std::string& script : scripts) {
    const std::string command =
        absl::StrCat("cd ", ShellQuote(root.string()), " && gnuplot ", ShellQuote(script));
    if (std::system(command.c_str()) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("gnuplot failed on ", (root / script).string(),
                       " (is gnuplot-nox installed?); the data and script are left there"));
    }
  }
  return absl::OkStatus();
}

}  // namespace warmroute::gnuplot
