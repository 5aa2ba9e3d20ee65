#include "gateway/tenancy/fair_queue.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "common/absl_view.h"

namespace warmroute::gateway {
namespace {

// The smallest weight a tenant counts with: 1/weight, its virtual time's step, must stay finite
// (an infinite virtual time becomes the virtual clock, and every later tie then falls to arrival
// order for all tenants).
constexpr double kMinWeight = 1e-6;

}  // namespace

FairQueue::FairQueue(int64_t max_in_flight, int64_t max_queue)
    : max_in_flight_(max_in_flight), max_queue_(max_queue) {
  assert(max_in_flight > 0);
  assert(max_queue >= 0);
}

FairQueue::Arrival FairQueue::Arrive(std::string_view tenant, double weight) {
  assert(weight > 0);
  Arrival arrival;
  if (in_flight_ < max_in_flight_ && waiting_.empty()) {
    ++in_flight_;
    arrival.outcome = Arrival::Outcome::kAdmitted;
    return arrival;
  }
  auto it = flows_.find(AbslView(tenant));
  if (it == flows_.end()) it = flows_.emplace(std::string(tenant), Flow{}).first;
  Flow& flow = it->second;
  flow.weight = std::max(weight, kMinWeight);
  if (queued() >= max_queue_) {
    arrival.pushed_out = PushOut(flow);
    if (!arrival.pushed_out) {
      arrival.outcome = Arrival::Outcome::kRefused;
      return arrival;
    }
  }
  arrival.outcome = Arrival::Outcome::kQueued;
  arrival.waiter = next_waiter_++;
  if (flow.waiters.empty()) flow.virtual_time = std::max(flow.virtual_time, virtual_clock_);
  flow.waiters.push_back(arrival.waiter);
  waiting_.emplace(arrival.waiter, &flow);
  return arrival;
}

std::optional<FairQueue::WaiterId> FairQueue::PushOut(const Flow& arriving) {
  Flow* longest = nullptr;
  double longest_share = 0;
  for (auto& [name, flow] : flows_) {
    if (flow.waiters.empty()) continue;
    const double share = static_cast<double>(flow.waiters.size()) / flow.weight;
    if (longest == nullptr || share > longest_share ||
        (share == longest_share && flow.waiters.back() > longest->waiters.back())) {
      longest = &flow;
      longest_share = share;
    }
  }
  const double arriving_share = static_cast<double>(arriving.waiters.size() + 1) / arriving.weight;
  if (longest == nullptr || longest == &arriving || longest_share <= arriving_share) {
    return std::nullopt;
  }
  const WaiterId victim = longest->waiters.back();
  longest->waiters.pop_back();
  waiting_.erase(victim);
  return victim;
}

std::optional<FairQueue::WaiterId> FairQueue::Release() {
  assert(in_flight_ > 0);
  Flow* chosen = nullptr;
  for (auto& [name, flow] : flows_) {
    if (flow.waiters.empty()) continue;
    if (chosen == nullptr || flow.virtual_time < chosen->virtual_time ||
        (flow.virtual_time == chosen->virtual_time &&
         flow.waiters.front() < chosen->waiters.front())) {
      chosen = &flow;
    }
  }
  if (chosen == nullptr) {
    --in_flight_;
    return std::nullopt;
  }
  // The slot moves to the chosen waiter: in_flight_ is unchanged.
  const WaiterId next = chosen->waiters.front();
  chosen->waiters.pop_front();
  waiting_.erase(next);
  virtual_clock_ = chosen->virtual_time;
  chosen->virtual_time += 1.0 / chosen->weight;
  return next;
}

bool FairQueue::Withdraw(WaiterId waiter) {
  auto it = waiting_.find(waiter);
  if (it == waiting_.end()) return false;
  std::deque<WaiterId>& waiters = it->second->waiters;
  waiters.erase(std::lower_bound(waiters.begin(), waiters.end(), waiter));
  waiting_.erase(it);
  return true;
}

}  // namespace warmroute::gateway
