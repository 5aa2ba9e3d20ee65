// Helpers for drawing PNG plots with gnuplot (gnuplot-nox, pngcairo terminal), shared by the
// simulator's and the load generator's reports. A plot is a .dat data file and a .gp script
// written side by side in one directory, then `gnuplot FILE.gp` run from that directory, so a
// plot can be restyled and redrawn by hand.
//
// Usage:
//   if (absl::Status s = gnuplot::MakeDir(dir); !s.ok()) return s;
//   std::string plot = gnuplot::Terminal("ttft_cdf.png") + "plot 'ttft_cdf.dat' using 1:2\n";
//   gnuplot::WriteFile(root / "ttft_cdf.dat", gnuplot::CdfData("run", sorted, 1000));
//   gnuplot::WriteFile(root / "ttft_cdf.gp", plot);
//   absl::Status drawn = gnuplot::Run(root, {"ttft_cdf.gp"});
//
// Thread-safety: the string helpers are pure; WriteFile, MakeDir and Run touch the file system
// or start a child process: call them from one thread.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace warmroute::gnuplot {

// A file name made of `name`'s alphanumeric characters, others replaced by '_'.
std::string Slug(const std::string& name);

// A gnuplot string literal (single quotes; a quote is doubled).
std::string Quote(const std::string& s);

// The preamble of every script: pngcairo 1100x650 into `png`, grid, key outside on the right,
// 12 distinct line colours.
std::string Terminal(const std::string& png);

// The CDF of `sorted` (nondecreasing) as "value*scale fraction" lines, at most ~2000 points,
// headed by a comment naming `title`. Empty data for no samples.
std::string CdfData(const std::string& title, std::span<const double> sorted, double scale);

// Writes `text` to `path`, replacing it. Internal error when the file cannot be written.
absl::Status WriteFile(const std::filesystem::path& path, const std::string& text);

// Creates `dir` and its parents if missing. Internal error when it cannot.
absl::Status MakeDir(const std::string& dir);

// True when a `gnuplot` executable is on the PATH.
bool Available();

// Runs gnuplot on each script in `root`. FailedPrecondition naming the script when gnuplot is
// missing or fails (the data and scripts are left in place).
absl::Status Run(const std::filesystem::path& root, const std::vector<std::string>& scripts);

}  // namespace warmroute::gnuplot
