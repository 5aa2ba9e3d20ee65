#include "router/hot_prefixes.h"

#include <algorithm>

namespace warmroute::router {

HotPrefixes::HotPrefixes(const Clock& clock, Options options)
    : clock_(clock), options_(options) {}

uint64_t HotPrefixes::IdOf(const routing::PrefixKey& key) {
  if (key.block_hashes.empty()) return 0;
  return key.block_hashes[std::min(key.block_hashes.size(), kIdBlocks) - 1];
}

void HotPrefixes::AdvanceLocked(TimePoint now) {
  if (!started_) {
    window_start_ = now;
    started_ = true;
    return;
  }
  if (now - window_start_ < options_.window) return;
  const double seconds = ToSeconds(options_.window);
  last_.clear();
  // A window with nothing after the complete one (a gap of two windows or more) reports empty.
  if (now - window_start_ < 2 * options_.window) {
    for (const auto& [id, c] : current_) {
      last_.push_back({.id = id,
                       .requests_per_s = c.requests / seconds,
                       .prompt_tokens_per_s = c.tokens / seconds,
                       .error_requests_per_s = c.error / seconds});
    }
    std::sort(last_.begin(), last_.end(), [](const HotPrefix& a, const HotPrefix& b) {
      return a.requests_per_s != b.requests_per_s ? a.requests_per_s > b.requests_per_s
                                                  : a.id < b.id;
    });
  }
  current_.clear();
  const auto windows = (now - window_start_) / options_.window;
  window_start_ += windows * options_.window;
}

void HotPrefixes::Record(const routing::PrefixKey& key, int64_t prompt_tokens) {
  Record(IdOf(key), prompt_tokens);
}

void HotPrefixes::Record(uint64_t id, int64_t prompt_tokens) {
  if (id == 0) return;
  std::lock_guard lock(mu_);
  AdvanceLocked(clock_.Now());
  auto it = current_.find(id);
  if (it == current_.end()) {
    if (current_.size() >= options_.capacity) {
      // Space-Saving: the newcomer takes over the smallest counter.
      auto smallest = std::min_element(
          current_.begin(), current_.end(),
          [](const auto& a, const auto& b) { return a.second.requests < b.second.requests; });
      const Counter inherited{.requests = smallest->second.requests,
                              .tokens = 0,
                              .error = smallest->second.requests};
      current_.erase(smallest);
      it = current_.emplace(id, inherited).first;
    } else {
      it = current_.emplace(id, Counter{}).first;
    }
  }
  it->second.requests += 1;
  it->second.tokens += static_cast<double>(prompt_tokens);
}

std::vector<HotPrefix> HotPrefixes::Top(size_t n) {
  std::lock_guard lock(mu_);
  AdvanceLocked(clock_.Now());
  std::vector<HotPrefix> out(last_.begin(), last_.begin() + std::min(n, last_.size()));
  return out;
}

}  // namespace warmroute::router
