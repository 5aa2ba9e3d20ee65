#include "gateway/fleet/poll_schedule.h"

#include <cassert>
#include <string>

#include "common/absl_view.h"

namespace warmroute::gateway {
namespace {

PollChange ChangeTo(bool ok) { return ok ? PollChange::kNowOk : PollChange::kNowFailed; }

}  // namespace

PollPlan PollSchedule::Tick(TimePoint now, std::span<const PolledBackend> backends,
                            const PollerOptions& options) {
  ++ticks_;
  PollPlan plan;
  for (size_t i = 0; i < backends.size(); ++i) {
    const PolledBackend& backend = backends[i];
    auto it = states_.find(AbslView(backend.address));
    if (it == states_.end()) {
      it = states_.emplace(std::string(backend.address), State(backend.tls_identity)).first;
      plan.fresh.push_back(i);
    } else if (it->second.tls_identity != backend.tls_identity && !it->second.busy()) {
      // Replaced at the same address with other TLS settings, and idle: start afresh.
      it->second = State(backend.tls_identity);
      plan.fresh.push_back(i);
    }
    State& state = it->second;
    state.seen_in_tick = ticks_;
    // The old state, of other TLS settings, is still busy: nothing starts until it is idle.
    if (state.tls_identity != backend.tls_identity) continue;
    if (!state.probing && now >= state.next_probe) {
      state.probing = true;
      state.next_probe = now + options.probe_interval;
      plan.start.push_back({.kind = PollKind::kProbe, .backend = i});
    }
    if (options.scrape_interval.count() > 0 && backend.exposes_load_metrics && !state.scraping &&
        now >= state.next_scrape) {
      state.scraping = true;
      state.next_scrape = now + options.scrape_interval;
      plan.start.push_back({.kind = PollKind::kScrape, .backend = i});
    }
    if (!backend.models_configured && state.models_known_for != backend.id && !state.discovering &&
        state.last_probe_ok.value_or(false) && now >= state.next_discovery) {
      state.discovering = true;
      state.discovering_for = backend.id;
      state.next_discovery = now + options.probe_interval;
      plan.start.push_back({.kind = PollKind::kDiscovery, .backend = i});
    }
  }
  // Forget removed backends once nothing of theirs is running.
  for (auto it = states_.begin(); it != states_.end();) {
    if (it->second.seen_in_tick != ticks_ && !it->second.busy()) {
      plan.forget.push_back(it->first);
      states_.erase(it++);
    } else {
      ++it;
    }
  }
  return plan;
}

PollSchedule::State& PollSchedule::StateOf(std::string_view address) {
  auto it = states_.find(AbslView(address));
  assert(it != states_.end());
  return it->second;
}

PollChange PollSchedule::OnProbeDone(std::string_view address, bool ok) {
  State& state = StateOf(address);
  assert(state.probing);
  const PollChange change = state.last_probe_ok == ok ? PollChange::kNone : ChangeTo(ok);
  // Back after a failure: it may have restarted serving other models.
  if (ok && state.last_probe_ok == false) state.models_known_for.reset();
  state.last_probe_ok = ok;
  state.probing = false;
  return change;
}

PollChange PollSchedule::OnScrapeDone(std::string_view address, bool ok) {
  State& state = StateOf(address);
  assert(state.scraping);
  const PollChange change = state.last_scrape_ok == ok ? PollChange::kNone : ChangeTo(ok);
  state.last_scrape_ok = ok;
  state.scraping = false;
  return change;
}

PollChange PollSchedule::OnDiscoveryDone(std::string_view address, DiscoveryResult result) {
  State& state = StateOf(address);
  assert(state.discovering);
  state.discovering = false;
  switch (result) {
    case DiscoveryResult::kNoAnswer:
      return PollChange::kNone;
    case DiscoveryResult::kNoModelList: {
      const bool was_unusable = state.models_unusable;
      state.models_unusable = true;
      return was_unusable ? PollChange::kNone : PollChange::kNowFailed;
    }
    case DiscoveryResult::kModelList: {
      const bool was_unusable = state.models_unusable;
      state.models_unusable = false;
      state.models_known_for = state.discovering_for;
      return was_unusable ? PollChange::kNowOk : PollChange::kNone;
    }
  }
  return PollChange::kNone;
}

}  // namespace warmroute::gateway
