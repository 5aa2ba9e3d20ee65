#include "emulator/dp_rank_picker.h"

#include <charconv>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace warmroute::emulator {
namespace {

// `text` without leading and trailing ASCII whitespace.
std::string_view Strip(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\n\v\f\r");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\n\v\f\r") - first + 1);
}

// The header as Python's int() reads it (surrounding whitespace, an optional sign), or nullopt
// when it is not an integer.
std::optional<int64_t> ParseRank(std::string_view text) {
  text = Strip(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ptr != end) return std::nullopt;
  // Too large for int64: out of range whichever the sign.
  if (ec == std::errc::result_out_of_range) return std::numeric_limits<int64_t>::max();
  if (ec != std::errc()) return std::nullopt;
  return value;
}

}  // namespace

absl::StatusOr<int> PickDataParallelRank(std::span<const RankLoad> loads,
                                         std::string_view rank_header) {
  const int size = static_cast<int>(loads.size());
  if (const std::optional<int64_t> pinned = ParseRank(rank_header)) {
    if (*pinned < 0 || *pinned >= size) {
      return InvalidParam("data_parallel_rank",
                          absl::StrCat("data_parallel_rank ", std::string(Strip(rank_header)),
                                       " is out of range [0, ", size, ")."));
    }
    return static_cast<int>(*pinned);
  }
  int best = 0;
  int64_t best_score = std::numeric_limits<int64_t>::max();
  for (int rank = 0; rank < size; ++rank) {
    const RankLoad& load = loads[static_cast<size_t>(rank)];
    const int64_t score = load.waiting * 4 + load.running;
    if (score < best_score) {
      best_score = score;
      best = rank;
    }
  }
  return best;
}

}  // namespace warmroute::emulator
