#include "gateway/observability/hot_prefixes.h"

#include <algorithm>

namespace warmroute::gateway {

HotPrefixes::HotPrefixes(const Clock& clock, Options options)
    : clock_(clock), options_(options), start_(clock.Now()) {}

uint64_t HotPrefixes::IdOf(const routing::PrefixKey& key) {
  if (key.block_hashes.empty()) return 0;
  return key.block_hashes[std::min(key.block_hashes.size(), kIdBlocks) - 1];
}

int64_t HotPrefixes::WindowOf(TimePoint t) const {
  if (t <= start_) return 0;
  return static_cast<int64_t>((t - start_) / options_.window);
}

void HotPrefixes::Advance(Shard& shard, int64_t window) {
  if (window <= shard.window) return;
  if (window == shard.window + 1) {
    shard.last.swap(shard.current);
  } else {
    shard.last.clear();  // nothing counted in the window before `window`
  }
  shard.current.clear();
  shard.last_window = window - 1;
  shard.window = window;
}

void HotPrefixes::AddHome(std::array<Home, kHomes>& homes, routing::BackendId backend,
                          double requests) {
  Home* slot = nullptr;
  for (Home& h : homes) {
    if (h.requests > 0 && h.backend == backend) {
      h.requests += requests;
      return;
    }
    if (slot == nullptr || h.requests < slot->requests) slot = &h;
  }
  *slot = {.backend = backend, .requests = slot->requests + requests};
}

void HotPrefixes::Count(Counters& counters, uint64_t id, int64_t prompt_tokens,
                        std::optional<routing::BackendId> home) const {
  auto it = counters.find(id);
  if (it == counters.end()) {
    if (counters.size() >= options_.capacity) {
      // Space-Saving: the newcomer takes over the smallest counter.
      auto smallest = std::min_element(
          counters.begin(), counters.end(),
          [](const auto& a, const auto& b) { return a.second.requests < b.second.requests; });
      const Counter inherited{.requests = smallest->second.requests,
                              .tokens = 0,
                              .error = smallest->second.requests};
      counters.erase(smallest);
      it = counters.emplace(id, inherited).first;
    } else {
      it = counters.emplace(id, Counter{}).first;
    }
  }
  it->second.requests += 1;
  it->second.tokens += static_cast<double>(prompt_tokens);
  if (home.has_value()) AddHome(it->second.homes, *home, 1);
}

void HotPrefixes::Record(const routing::PrefixKey& key, int64_t prompt_tokens) {
  Record(IdOf(key), prompt_tokens);
}

void HotPrefixes::Record(uint64_t id, int64_t prompt_tokens,
                         std::optional<routing::BackendId> home) {
  if (id == 0) return;
  const int64_t window = WindowOf(clock_.Now());
  shards_.WithLocal([&](Shard& shard) {
    Advance(shard, window);
    Count(shard.current, id, prompt_tokens, home);
  });
}

std::vector<HotPrefix> HotPrefixes::Top(size_t n) {
  const int64_t window = WindowOf(clock_.Now());
  std::lock_guard lock(mu_);
  if (merged_window_ != window) {
    // Every thread's summary of the window before, with its bound for the ids it lacks.
    std::vector<std::pair<Counters, double>> summaries;
    shards_.ForEach([&](Shard& shard) {
      Advance(shard, window);
      if (shard.last_window != window - 1 || shard.last.empty()) return;
      double missing = 0;  // a summary that never filled up counted every id it saw
      if (shard.last.size() >= options_.capacity) {
        missing = std::min_element(shard.last.begin(), shard.last.end(),
                                   [](const auto& a, const auto& b) {
                                     return a.second.requests < b.second.requests;
                                   })
                      ->second.requests;
      }
      summaries.emplace_back(shard.last, missing);
    });
    Counters merged;
    for (const auto& [counters, missing] : summaries) {
      for (const auto& [id, c] : counters) {
        Counter& m = merged[id];
        m.requests += c.requests;
        m.tokens += c.tokens;
        m.error += c.error;
        for (const Home& h : c.homes) {
          if (h.requests > 0) AddHome(m.homes, h.backend, h.requests);
        }
      }
    }
    for (const auto& [counters, missing] : summaries) {
      if (missing == 0) continue;
      for (auto& [id, m] : merged) {
        if (!counters.contains(id)) {
          m.requests += missing;
          m.error += missing;
        }
      }
    }
    const double seconds = ToSeconds(options_.window);
    merged_.clear();
    for (const auto& [id, c] : merged) {
      std::array<Home, kHomes> homes = c.homes;
      std::sort(homes.begin(), homes.end(), [](const Home& a, const Home& b) {
        return a.requests != b.requests ? a.requests > b.requests : a.backend < b.backend;
      });
      std::vector<routing::BackendId> busiest;
      for (const Home& h : homes) {
        if (h.requests > 0) busiest.push_back(h.backend);
      }
      merged_.push_back({.id = id,
                         .requests_per_s = c.requests / seconds,
                         .prompt_tokens_per_s = c.tokens / seconds,
                         .error_requests_per_s = c.error / seconds,
                         .homes = std::move(busiest)});
    }
    std::sort(merged_.begin(), merged_.end(), [](const HotPrefix& a, const HotPrefix& b) {
      return a.requests_per_s != b.requests_per_s ? a.requests_per_s > b.requests_per_s
                                                  : a.id < b.id;
    });
    merged_window_ = window;
  }
  return std::vector<HotPrefix>(
      merged_.begin(), merged_.begin() + static_cast<std::ptrdiff_t>(std::min(n, merged_.size())));
}

}  // namespace warmroute::gateway
