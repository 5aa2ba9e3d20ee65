// The Router's bookkeeping rules, beyond what router.h states:
//
// Index slices. A backend's slice of the prefix index starts at its KV capacity in blocks
// (kv_capacity_tokens / RouterOptions::tokens_per_block, or default_kv_capacity_tokens when
// unknown). The engine's cache is smaller than its KV capacity, though: running requests hold
// blocks too, and the engine evicts its least recently used cached blocks under that pressure.
//
// Closed loop. When a finished request reports cached_tokens C below the prediction P by more
// than max(2 blocks, closed_loop_tolerance x P), the engine had evicted blocks the index still
// believed held: evidence that the index's slice for that backend is larger than the engine's
// effective cache. The correction drops the backend's (P - C) / tokens_per_block least recently
// used entries — entries(b) - stale becomes its slice, never below min_slice_fraction of its
// capacity — rather than the request's own chain: the engine has just recomputed that chain and
// holds it now, so forgetting it would send the next request of that prefix away from the one
// backend that has it (closed_loop_truncate_chain restores the literal rule, for comparison).
// A report above the prediction by more than the tolerance means the index forgot something the
// engine still had: the slice grows back by the difference, up to the capacity. Predicted and
// reported cached tokens are counted for every finished request that reported a value.
//
// Prefill rate. A request's TTFT (dispatch to first token, as the router sees it: network and
// queueing included) becomes a sample of its backend's prefill rate only when its own prefill
// dominates it: its uncached tokens (reported when known, else predicted) are at least
// min_rate_sample_tokens and at least the prefill tokens queued ahead of it at dispatch. The
// sample is (queued ahead + own uncached) / TTFT — FCFS engines prefill what was queued ahead
// first — clamped to [1/8, 8] x the current estimate against outliers, then averaged into the
// estimate with weight max(prefill_rate_alpha, 1/n) for the backend's n-th sample: the mean of
// its first samples, then an EWMA. With the EWMA alone from the prior, the backends that learned
// first crept toward a fleet faster than the prior (10% of the way per sample) while the others,
// following the learned median, already looked faster: at light load the first ones then got
// nothing more and stayed slow in the router's eyes.

#include "core/routing/router.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/routing/policies/policy_util.h"

namespace warmroute::routing {

namespace {

Duration PrefillTime(const BackendState& state, int64_t tokens) {
  return FromSeconds(static_cast<double>(std::max<int64_t>(0, tokens)) /
                     std::max(1.0, state.prefill_tokens_per_s));
}

// After outstanding prefill shrank: the rest cannot take longer than all of it from now.
void PullBackPrefillDone(BackendState& state, TimePoint now) {
  if (state.outstanding_prefill_tokens <= 0) {
    state.prefill_done_at = now;
  } else {
    state.prefill_done_at =
        std::min(state.prefill_done_at, now + PrefillTime(state, state.outstanding_prefill_tokens));
  }
}

}  // namespace

struct Router::InFlight {
  RoutingRequest request;
  Decision decision;
  size_t next_alternate = 0;   // decision.alternates[next_alternate] is the next retry
  Alternates failed;           // the backends it was dispatched to and failed on
  bool passed_over = false;    // an alternate was passed over as failing with one of those
  BackendId backend = 0;       // where it is now
  int64_t uncached = 0;        // predicted uncached prompt tokens counted as outstanding
  int32_t matched_before = 0;  // blocks `backend` held before the speculative insert
  int64_t prefill_ahead = 0;   // backend's outstanding prefill tokens at dispatch, peers' too
  int64_t decode_tokens = 0;   // prompt + max_tokens, counted while decoding
  TimePoint dispatched_at{};
  std::optional<Duration> ttft;
  bool inserted = false;  // the chain is in the index for `backend` (CommitInsert)
  DispatchDomain domain;  // precise mode: recorded at each insert (SetDispatchDomain)
};

Router::Router(std::unique_ptr<Policy> policy, RouterOptions options, const Clock& clock,
               uint64_t seed)
    : policy_(std::move(policy)),
      options_(std::move(options)),
      clock_(clock),
      rng_(seed),
      index_(std::make_unique<PrefixIndex>(options_.index)),
      attribution_(options_.attribution) {
  if (!(options_.tokens_per_block > 0)) options_.tokens_per_block = 16;
  if (!(options_.initial_prefill_tokens_per_s > 0)) options_.initial_prefill_tokens_per_s = 10000;
}

Router::~Router() = default;

void Router::ApplySlice(BackendId backend) {
  if (!fleet_.backend(backend).present) return;
  index_->SetCapacity(backend, slice_blocks_[backend]);
}

double Router::PriorPrefillRate(bool learned_only) const {
  std::vector<double> rates;
  for (BackendId b = 0; b < fleet_.size(); ++b) {
    const BackendState& state = fleet_.backend(b);
    if (state.present && (!learned_only || state.prefill_rate_samples > 0)) {
      rates.push_back(state.prefill_tokens_per_s);
    }
  }
  if (rates.empty()) return options_.initial_prefill_tokens_per_s;
  const size_t mid = rates.size() / 2;
  std::nth_element(rates.begin(), rates.begin() + static_cast<std::ptrdiff_t>(mid), rates.end());
  if (rates.size() % 2 == 1) return rates[mid];
  const double upper = rates[mid];
  return (*std::max_element(rates.begin(), rates.begin() + static_cast<std::ptrdiff_t>(mid)) +
          upper) /
         2;
}

BackendId Router::AddBackend(const BackendSpec& spec) {
  BackendState state;
  state.name = spec.name;
  state.models = spec.models;
  state.pool = spec.pool;
  state.kv_capacity_tokens = spec.kv_capacity_tokens;
  state.prefill_tokens_per_s = PriorPrefillRate(/*learned_only=*/false);
  const BackendId id = fleet_.Add(std::move(state));
  ++unlearned_backends_;
  capacity_blocks_.push_back(0);
  slice_blocks_.push_back(0);
  SetKvCapacity(id, spec.kv_capacity_tokens);
  return id;
}

void Router::RemoveBackend(BackendId backend) {
  if (backend >= fleet_.size() || !fleet_.backend(backend).present) return;
  fleet_.mutable_backend(backend).present = false;
  if (fleet_.backend(backend).prefill_rate_samples == 0) --unlearned_backends_;
  index_->SetCapacity(backend, 0);
  attribution_.Forget(backend);
  fleet_.mutable_backend(backend).kv_events = KvEventState::kNone;
  policy_->OnBackendRemoved(backend);
}

void Router::SetDispatchDomain(uint64_t request_id, const DispatchDomain& domain) {
  auto it = in_flight_.find(request_id);
  if (it == in_flight_.end()) return;
  InFlight& flight = *it->second;
  flight.domain = domain;
  // Already inserted (the caller committed first): record now.
  if (flight.inserted && domain.first_block != 0) {
    attribution_.Record(flight.backend, domain.first_block, domain.record);
  }
}

void Router::ApplyIndexUpdates(BackendId backend, const IndexUpdates& updates) {
  if (backend >= fleet_.size() || !fleet_.backend(backend).present) return;
  updates.ApplyTo(*index_, backend);
}

void Router::ApplyPeerPlacement(BackendId backend, std::span<const uint64_t> chain,
                                const DispatchDomain& domain) {
  if (backend >= fleet_.size() || !fleet_.backend(backend).present) return;
  index_->Insert(backend, chain, 0);
  if (domain.first_block != 0) attribution_.Record(backend, domain.first_block, domain.record);
}

void Router::SetPeerLoad(BackendId backend, const BackendLoad& load) {
  if (backend >= fleet_.size() || !fleet_.backend(backend).present) return;
  fleet_.mutable_backend(backend).peers = load;
}

void Router::ClearIndex(BackendId backend) {
  if (backend >= fleet_.size() || !fleet_.backend(backend).present) return;
  index_->Clear(backend);
}

void Router::SetKvEventState(BackendId backend, KvEventState state) {
  if (backend >= fleet_.size() || !fleet_.backend(backend).present) return;
  fleet_.mutable_backend(backend).kv_events = state;
}

void Router::SetHealthy(BackendId backend, bool healthy) {
  if (backend < fleet_.size()) fleet_.mutable_backend(backend).healthy = healthy;
}

void Router::SetDraining(BackendId backend, bool draining) {
  if (backend < fleet_.size()) fleet_.mutable_backend(backend).draining = draining;
}

void Router::SetModels(BackendId backend, std::vector<std::string> models) {
  if (backend < fleet_.size()) fleet_.mutable_backend(backend).models = std::move(models);
}

void Router::SetKvCapacity(BackendId backend, int64_t tokens) {
  if (backend >= fleet_.size()) return;
  fleet_.mutable_backend(backend).kv_capacity_tokens = std::max<int64_t>(0, tokens);
  const int64_t known = tokens > 0 ? tokens : options_.default_kv_capacity_tokens;
  const int64_t blocks = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(known) / options_.tokens_per_block));
  capacity_blocks_[backend] = blocks;
  slice_blocks_[backend] = blocks;
  ApplySlice(backend);
}

void Router::OnMetrics(BackendId backend, const EngineMetricsSample& sample) {
  if (backend < fleet_.size()) fleet_.mutable_backend(backend).metrics = sample;
}

namespace {

// Completes `decision.alternates`: the policy's valid, distinct choices first, then the other
// candidates with the fewest requests in flight (lowest id on ties), at most kMaxAlternates.
void CompleteAlternates(const FleetView& fleet, std::span<const BackendId> candidates,
                        Decision& decision) {
  auto is_candidate = [&](BackendId b) {
    return std::find(candidates.begin(), candidates.end(), b) != candidates.end();
  };
  Alternates alternates;
  for (BackendId b : decision.alternates) {
    if (alternates.size() == kMaxAlternates) break;
    if (b == decision.backend || !is_candidate(b) ||
        std::find(alternates.begin(), alternates.end(), b) != alternates.end()) {
      continue;
    }
    alternates.push_back(b);
  }
  if (alternates.size() < kMaxAlternates && alternates.size() + 1 < candidates.size()) {
    std::vector<BackendId> rest;
    for (BackendId b : candidates) {
      if (b != decision.backend &&
          std::find(alternates.begin(), alternates.end(), b) == alternates.end()) {
        rest.push_back(b);
      }
    }
    const size_t take = std::min(rest.size(), kMaxAlternates - alternates.size());
    std::partial_sort(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(take), rest.end(),
                      [&](BackendId a, BackendId b) {
                        const int64_t la = fleet.backend(a).in_flight;
                        const int64_t lb = fleet.backend(b).in_flight;
                        return la != lb ? la < lb : a < b;
                      });
    alternates.insert(alternates.end(), rest.begin(),
                      rest.begin() + static_cast<std::ptrdiff_t>(take));
  }
  decision.alternates = std::move(alternates);
}

}  // namespace

std::vector<BackendId> Router::Homes(const RoutingRequest& request) {
  std::vector<BackendId> candidates;
  for (BackendId b = 0; b < fleet_.size(); ++b) {
    const BackendState& state = fleet_.backend(b);
    if (state.present && state.Serves(request.model) && state.InPools(request.pools) &&
        state.Eligible()) {
      candidates.push_back(b);
    }
  }
  std::vector<BackendId> homes;
  if (!candidates.empty()) policy_->Homes(request, fleet_, candidates, homes);
  return homes;
}

absl::StatusOr<Decision> Router::Route(RoutingRequest request) {
  if (in_flight_.contains(request.id)) {
    return absl::AlreadyExistsError(absl::StrCat("request ", request.id, " is already in flight"));
  }
  std::vector<BackendId>& candidates = candidates_;
  candidates.clear();
  if (request.placement == Placement::kPinned) {
    if (absl::Status pinned = CheckPinned(request); !pinned.ok()) return pinned;
    candidates.push_back(request.pinned);
  }
  bool served = request.placement == Placement::kPinned;
  for (BackendId b = 0; b < fleet_.size() && request.placement != Placement::kPinned; ++b) {
    const BackendState& state = fleet_.backend(b);
    if (!state.present || !state.Serves(request.model) || !state.InPools(request.pools)) continue;
    served = true;
    if (state.Eligible()) candidates.push_back(b);
  }
  if (!served) {
    return absl::NotFoundError(request.model.empty()
                                   ? std::string("no backend is configured")
                                   : absl::StrCat("no backend serves model '", request.model, "'"));
  }
  if (candidates.empty()) {
    // With pools (a tenant's), say which: healthy backends elsewhere do not serve this request.
    const std::string where = request.pools.empty()
                                  ? std::string()
                                  : absl::StrCat(" in pool", request.pools.size() > 1 ? "s " : " ",
                                                 absl::StrJoin(request.pools, ", "));
    return absl::UnavailableError(absl::StrCat("no healthy backend for model '", request.model, "'",
                                               where, " (all unhealthy or draining)"));
  }

  std::vector<int32_t>& matched = matched_;
  index_->Match(request.key.block_hashes, matched);
  matched.resize(fleet_.size(), 0);
  RoutingContext ctx{.fleet = fleet_,
                     .candidates = candidates,
                     .matched_blocks = matched,
                     .index = *index_,
                     .now = clock_.Now(),
                     .rng = rng_,
                     .gateway = gateway_place_};
  Decision decision;
  switch (request.placement) {
    case Placement::kPolicy:
      decision = policy_->Route(request, ctx);
      break;
    case Placement::kLeastLoad: {
      const auto work = [this](BackendId b) {
        const BackendState& s = fleet_.backend(b);
        return static_cast<double>(s.in_flight) +
               static_cast<double>(s.outstanding_prefill_tokens) * 1e-12;
      };
      const BackendId chosen = ArgMin(std::span<const BackendId>(candidates), work, &rng_);
      decision = DecideFor(request, ctx, chosen, Reason::kLeastLoad);
      decision.alternates = RankedAlternates(candidates, chosen, work);
      break;
    }
    case Placement::kPinned:
      decision = DecideFor(request, ctx, request.pinned, Reason::kPinned);
      break;
  }
  if (std::find(candidates.begin(), candidates.end(), decision.backend) == candidates.end()) {
    return absl::InternalError(absl::StrCat("policy ", std::string(policy_->name()),
                                            " chose backend ", decision.backend,
                                            ", not a candidate"));
  }
  decision.predicted_cached_tokens = std::clamp<int64_t>(
      decision.predicted_cached_tokens, 0, std::max<int64_t>(0, PromptTokens(request) - 1));
  CompleteAlternates(fleet_, candidates, decision);

  // The caller gets the decision without its scores (a vector as long as the candidates, kept
  // for the policy's OnDispatched on a reroute): no copy of them is made.
  Decision result{.backend = decision.backend,
                  .alternates = decision.alternates,
                  .reason = decision.reason,
                  .predicted_cached_tokens = decision.predicted_cached_tokens,
                  .scores = {}};
  auto flight = std::make_unique<InFlight>();
  const uint64_t id = request.id;
  flight->request = std::move(request);
  flight->decision = std::move(decision);
  flight->matched_before = matched[result.backend];
  Account(*flight, result.backend);
  policy_->OnDispatched(flight->request, flight->decision);
  ++stats_.routed;
  in_flight_.emplace(id, std::move(flight));
  return result;
}

absl::Status Router::CheckPinned(const RoutingRequest& request) const {
  if (request.pinned >= fleet_.size() || !fleet_.backend(request.pinned).present) {
    return absl::NotFoundError(absl::StrCat("backend ", request.pinned, " is not in the fleet"));
  }
  const BackendState& state = fleet_.backend(request.pinned);
  if (!state.Serves(request.model) || !state.InPools(request.pools)) {
    return absl::NotFoundError(absl::StrCat("backend ", state.name, " does not serve model '",
                                            request.model, "' in the request's pools"));
  }
  if (!state.healthy) {
    return absl::UnavailableError(absl::StrCat("backend ", state.name, " is unavailable"));
  }
  return absl::OkStatus();
}

void Router::Account(InFlight& flight, BackendId backend) {
  BackendState& state = fleet_.mutable_backend(backend);
  const int64_t prompt = PromptTokens(flight.request);
  flight.backend = backend;
  flight.uncached = std::max<int64_t>(0, prompt - flight.decision.predicted_cached_tokens);
  flight.prefill_ahead = state.outstanding_prefill_tokens + state.peers.outstanding_prefill_tokens;
  flight.decode_tokens = prompt + std::max<int64_t>(0, flight.request.max_tokens);
  flight.dispatched_at = clock_.Now();
  flight.ttft.reset();
  ++state.in_flight;
  const TimePoint now = clock_.Now();
  state.prefill_done_at =
      std::max(state.prefill_done_at, now) + PrefillTime(state, flight.uncached);
  state.outstanding_prefill_tokens += flight.uncached;
  ++state.dispatched_total;
  state.prefill_tokens_total += flight.uncached;
  flight.inserted = false;  // CommitInsert (or the first token) inserts the chain
}

void Router::CommitInsert(uint64_t request_id) {
  auto it = in_flight_.find(request_id);
  if (it == in_flight_.end()) return;
  InsertChain(*it->second);
}

void Router::InsertChain(InFlight& flight) {
  if (flight.inserted || !fleet_.backend(flight.backend).present) return;
  index_->Insert(flight.backend, flight.request.key.block_hashes,
                 static_cast<size_t>(std::max(0, flight.matched_before)));
  flight.inserted = true;
  if (observer_) observer_(flight.backend, flight.request.key.block_hashes, flight.domain);
  if (flight.domain.first_block != 0) {
    attribution_.Record(flight.backend, flight.domain.first_block, flight.domain.record);
  }
}

void Router::Unaccount(InFlight& flight, bool completed) {
  BackendState& state = fleet_.mutable_backend(flight.backend);
  --state.in_flight;
  if (flight.ttft.has_value()) {
    --state.running_decodes;
    state.decode_context_tokens -= flight.decode_tokens;
  } else {
    state.outstanding_prefill_tokens -= flight.uncached;
    PullBackPrefillDone(state, clock_.Now());
    // Failed before its first token: the engine may never have stored the chain.
    if (!completed && state.present && flight.inserted) {
      index_->Truncate(flight.backend, flight.request.key.block_hashes,
                       static_cast<size_t>(std::max(0, flight.matched_before)));
    }
  }
}

std::optional<BackendId> Router::Reroute(uint64_t request_id) {
  return Reroute(request_id, [](BackendId, BackendId) { return false; });
}

std::optional<BackendId> Router::Reroute(
    uint64_t request_id, absl::FunctionRef<bool(BackendId, BackendId)> shares_failure) {
  auto it = in_flight_.find(request_id);
  if (it == in_flight_.end()) return std::nullopt;
  InFlight& flight = *it->second;
  if (flight.ttft.has_value()) {  // bytes already reached the client: no retry
    OnFailed(request_id);
    return std::nullopt;
  }
  flight.failed.push_back(flight.backend);
  Unaccount(flight, /*completed=*/false);
  policy_->OnFailed(flight.request, flight.decision);
  ++stats_.rerouted;

  // Whether `b` is one of the backends the request failed on, or fails with one of them.
  const auto failed_with = [&](BackendId b) {
    for (BackendId f : flight.failed) {
      if (b == f) return true;
      if (shares_failure(f, b)) {
        flight.passed_over = true;
        return true;
      }
    }
    return false;
  };
  const auto usable = [&](BackendId b) {
    const BackendState& state = fleet_.backend(b);
    return state.Eligible() && state.Serves(flight.request.model) &&
           state.InPools(flight.request.pools);
  };
  const Alternates& alternates = flight.decision.alternates;
  std::optional<BackendId> next;
  while (!next && flight.next_alternate < alternates.size()) {
    const BackendId b = alternates[flight.next_alternate++];
    if (!failed_with(b) && usable(b)) next = b;
  }
  // Alternates passed over as failing with a failed backend leave the retry to the others: the
  // usable backend with the fewest requests in flight (lowest id on ties) that fails with none
  // of those the request failed on.
  if (!next && flight.passed_over) {
    for (BackendId b = 0; b < fleet_.size(); ++b) {
      if (failed_with(b) || !usable(b)) continue;
      if (!next || fleet_.backend(b).in_flight < fleet_.backend(*next).in_flight) next = b;
    }
  }
  if (!next) {
    ++stats_.failed;
    in_flight_.erase(it);
    return std::nullopt;
  }
  const BackendId b = *next;
  std::vector<int32_t> matched = index_->Match(flight.request.key.block_hashes);
  const int32_t held = b < matched.size() ? matched[b] : 0;
  flight.decision.backend = b;
  flight.decision.predicted_cached_tokens = PredictedCachedTokens(flight.request, held);
  flight.matched_before = held;
  Account(flight, b);
  policy_->OnDispatched(flight.request, flight.decision);
  return b;
}

void Router::OnFirstToken(uint64_t request_id) {
  auto it = in_flight_.find(request_id);
  if (it == in_flight_.end() || it->second->ttft.has_value()) return;
  InFlight& flight = *it->second;
  InsertChain(flight);  // the engine holds the chain now, whether or not it was committed
  BackendState& state = fleet_.mutable_backend(flight.backend);
  flight.ttft = clock_.Now() - flight.dispatched_at;
  state.outstanding_prefill_tokens -= flight.uncached;
  PullBackPrefillDone(state, clock_.Now());
  ++state.running_decodes;
  state.decode_context_tokens += flight.decode_tokens;
}

void Router::OnFinished(uint64_t request_id, std::optional<int64_t> cached_tokens) {
  auto it = in_flight_.find(request_id);
  if (it == in_flight_.end()) return;
  InFlight& flight = *it->second;
  InsertChain(flight);  // the engine holds the chain now, whether or not it was committed
  Unaccount(flight, /*completed=*/true);
  if (flight.ttft.has_value()) LearnPrefillRate(flight, cached_tokens);
  if (cached_tokens.has_value()) {
    stats_.predicted_cached_tokens += flight.decision.predicted_cached_tokens;
    stats_.reported_cached_tokens += *cached_tokens;
    if (options_.closed_loop) CloseLoop(flight, *cached_tokens);
  }
  policy_->OnFinished(flight.request, flight.decision);
  in_flight_.erase(it);
}

void Router::OnFailed(uint64_t request_id) {
  auto it = in_flight_.find(request_id);
  if (it == in_flight_.end()) return;
  InFlight& flight = *it->second;
  Unaccount(flight, /*completed=*/false);
  policy_->OnFailed(flight.request, flight.decision);
  ++stats_.failed;
  in_flight_.erase(it);
}

void Router::LearnPrefillRate(const InFlight& flight, std::optional<int64_t> cached_tokens) {
  const int64_t prompt = PromptTokens(flight.request);
  const int64_t own =
      cached_tokens.has_value() ? std::max<int64_t>(0, prompt - *cached_tokens) : flight.uncached;
  if (own < options_.min_rate_sample_tokens || flight.prefill_ahead > own) return;
  const double seconds = ToSeconds(*flight.ttft);
  if (!(seconds > 0)) return;
  BackendState& state = fleet_.mutable_backend(flight.backend);
  const double current = state.prefill_tokens_per_s;
  const double sample = std::clamp(static_cast<double>(flight.prefill_ahead + own) / seconds,
                                   current / 8, current * 8);
  const double weight = std::max(options_.prefill_rate_alpha,
                                 1.0 / static_cast<double>(state.prefill_rate_samples + 1));
  state.prefill_tokens_per_s = current + weight * (sample - current);
  // A backend removed before its first sample was already taken off the count (RemoveBackend).
  if (state.prefill_rate_samples++ == 0 && state.present) --unlearned_backends_;
  // The backends with no sample yet follow the learned ones' median (fleet_view.h).
  if (unlearned_backends_ == 0) return;
  const double median = PriorPrefillRate(/*learned_only=*/true);
  for (BackendId b = 0; b < fleet_.size(); ++b) {
    BackendState& other = fleet_.mutable_backend(b);
    if (other.present && other.prefill_rate_samples == 0) other.prefill_tokens_per_s = median;
  }
}

void Router::CloseLoop(const InFlight& flight, int64_t cached_tokens) {
  const BackendId b = flight.backend;
  if (!fleet_.backend(b).present) return;
  const double tokens_per_block =
      flight.request.key.tokens_per_block > 0 ? flight.request.key.tokens_per_block : 16;
  const double predicted = static_cast<double>(flight.decision.predicted_cached_tokens);
  const double reported = static_cast<double>(cached_tokens);
  const double tolerance =
      std::max(2 * tokens_per_block, options_.closed_loop_tolerance * predicted);
  if (reported + tolerance < predicted) {
    ++stats_.corrections;
    if (options_.closed_loop_truncate_chain) {
      index_->Truncate(b, flight.request.key.block_hashes,
                       static_cast<size_t>(std::floor(reported / tokens_per_block)));
      return;
    }
    const auto stale = static_cast<int64_t>(std::ceil((predicted - reported) / tokens_per_block));
    const int64_t floor_blocks =
        std::max<int64_t>(1, static_cast<int64_t>(options_.min_slice_fraction *
                                                  static_cast<double>(capacity_blocks_[b])));
    const int64_t held = static_cast<int64_t>(index_->entries(b));
    const int64_t slice = std::max(floor_blocks, std::min(slice_blocks_[b], held - stale));
    if (slice != slice_blocks_[b]) {
      slice_blocks_[b] = slice;
      ApplySlice(b);
    }
  } else if (reported > predicted + tolerance) {
    ++stats_.underpredictions;
    const auto missing = static_cast<int64_t>(std::ceil((reported - predicted) / tokens_per_block));
    const int64_t slice = std::min(capacity_blocks_[b], slice_blocks_[b] + missing);
    if (slice != slice_blocks_[b]) {
      slice_blocks_[b] = slice;
      ApplySlice(b);
    }
  }
}

}  // namespace warmroute::routing
