#include "gateway/keys/parity_schedule.h"

#include <cassert>

namespace warmroute::gateway {

std::vector<size_t> ParitySchedule::Tick(TimePoint now, std::span<const ParityPair> pairs) {
  ++ticks_;
  std::vector<size_t> start;
  for (size_t i = 0; i < pairs.size(); ++i) {
    Key key(pairs[i].backend, pairs[i].model);
    State& state = states_[key];  // new: due at once (next is the epoch)
    if (state.identity != pairs[i].identity && !state.checking) {
      state = State();
      state.identity = pairs[i].identity;
    }
    state.seen_in_tick = ticks_;
    if (state.checking || now < state.next || state.identity != pairs[i].identity) continue;
    state.checking = true;
    start.push_back(i);
  }
  for (auto it = states_.begin(); it != states_.end();) {
    if (it->second.seen_in_tick != ticks_ && !it->second.checking) {
      states_.erase(it++);
    } else {
      ++it;
    }
  }
  return start;
}

ParityChange ParitySchedule::OnDone(std::string_view backend, std::string_view model,
                                    ParityVerdict verdict, TimePoint now,
                                    std::chrono::milliseconds interval) {
  auto it = states_.find(Key(backend, model));
  assert(it != states_.end() && it->second.checking);
  State& state = it->second;
  state.checking = false;
  if (verdict == ParityVerdict::kFailed) {
    // The last verdict that judged the ids stays (a mismatched pair stays mismatched); only the
    // first failure in a row is logged.
    state.next = now + kParityRetry;
    const bool logged = state.failing;
    state.failing = true;
    return logged ? ParityChange::kNone : ParityChange::kFailed;
  }
  state.failing = false;
  const std::optional<ParityVerdict> before = state.last;
  state.next = interval.count() > 0 ? now + interval : TimePoint::max();
  state.last = verdict;
  if (before == verdict) return ParityChange::kNone;
  switch (verdict) {
    case ParityVerdict::kMismatch:
      return ParityChange::kMismatch;
    case ParityVerdict::kMatch:
      return before == ParityVerdict::kMismatch ? ParityChange::kMatchAgain : ParityChange::kNone;
    case ParityVerdict::kNoEndpoint:
      return ParityChange::kNoEndpoint;
    case ParityVerdict::kFailed:
      break;
  }
  return ParityChange::kNone;
}

bool ParitySchedule::ModelOk(std::string_view model) const {
  for (const auto& [key, state] : states_) {
    if (key.second == model && state.last == ParityVerdict::kMismatch) return false;
  }
  return true;
}

}  // namespace warmroute::gateway
