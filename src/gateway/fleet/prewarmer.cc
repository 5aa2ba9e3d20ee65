#include "gateway/fleet/prewarmer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <optional>
#include <utility>

#include "gateway/fleet/rank_targets.h"
#include "net/detached.h"
#include "net/json_object_edit.h"

namespace warmroute::gateway {
namespace {

namespace asio = boost::asio;
using Timer =
    asio::basic_waitable_timer<std::chrono::steady_clock,
                               asio::wait_traits<std::chrono::steady_clock>, net::Executor>;
// A prewarm answer is one token: more than this is not read.
constexpr size_t kAnswerLimit = size_t{1} << 20;

// The present backend named `name`, or null.
std::shared_ptr<const BackendTarget> FindTarget(const Backends& backends, std::string_view name) {
  for (auto& target : backends.Targets()) {
    if (target->name == name) return target;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::string> PrewarmBody(std::string_view body) {
  absl::StatusOr<std::string> out = net::SetTopLevelMember(body, "max_tokens", "1");
  if (!out.ok()) return out.status();
  out = net::SetTopLevelMember(*out, "stream", "false");
  if (out.ok() && out->find("\"max_completion_tokens\"") != std::string::npos) {
    out = net::SetTopLevelMember(*out, "max_completion_tokens", "1");
  }
  if (out.ok() && out->find("\"stream_options\"") != std::string::npos) {
    out = net::SetTopLevelMember(*out, "stream_options", "null");
  }
  return out;
}

std::string_view PrewarmPath(request::Endpoint endpoint) {
  switch (endpoint) {
    case request::Endpoint::kChatCompletions:
      return "/v1/chat/completions";
    case request::Endpoint::kCompletions:
      return "/v1/completions";
    case request::Endpoint::kResponses:
    case request::Endpoint::kMessages:
      break;
  }
  return "";
}

Prewarmer::Prewarmer(net::Executor executor, Backends& backends, GatewayMetrics& metrics,
                     const Clock& clock, std::atomic<uint64_t>& next_request_id,
                     routing::PrewarmOptions options, net::UpstreamTimeouts timeouts)
    : executor_(executor),
      backends_(backends),
      metrics_(metrics),
      clock_(clock),
      next_request_id_(next_request_id),
      timeouts_(timeouts),
      pools_(executor, backends),
      planner_([&] {
        options.sample_refresh = kSampleRefresh;
        options.min_sample_requests = kMinSampleRequests;
        return options;
      }()) {}

Prewarmer::~Prewarmer() = default;

void Prewarmer::Start() {
  asio::co_spawn(executor_, Loop(),
                 [](std::exception_ptr e) { net::LogIfDetachedFailed("prewarm loop", e); });
}

void Prewarmer::Stop() { stopped_ = true; }

bool Prewarmer::Count(const routing::RoutingRequest& request) {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  return planner_.Count(request, clock_.Now());
}

void Prewarmer::Keep(const routing::RoutingRequest& request, request::Endpoint endpoint,
                     std::string_view upstream_body) {
  const std::string_view path = PrewarmPath(endpoint);
  if (path.empty()) return;
  absl::StatusOr<std::string> body = PrewarmBody(upstream_body);
  if (!body.ok()) return;  // not an object: the request's parse refused it already
  auto sample = std::make_shared<const PrewarmSample>(
      PrewarmSample{.path = std::string(path), .body = std::move(*body)});
  std::lock_guard lock(mu_);
  planner_.Keep(request, sample, clock_.Now());
}

void Prewarmer::OnJoined(const std::string& name) {
  std::lock_guard lock(mu_);
  joins_.push_back({.name = name, .deadline = clock_.Now() + planner_.options().max_wait});
}

void Prewarmer::OnLeaving(const std::string& name) {
  const std::shared_ptr<const BackendTarget> target = FindTarget(backends_, name);
  if (target == nullptr) return;
  std::lock_guard lock(mu_);
  const size_t before = planner_.pending();
  // A backend's ranks leave together: none is where another's prefixes go.
  backends_.WithRouter([&](routing::Router& router) {
    planner_.PlanHandoff(router, target->routing_ids(), clock_.Now());
  });
  spdlog::info("prewarm: {} leaving: {} handoff requests planned", name,
               planner_.pending() - before);
}

routing::PrewarmCounters Prewarmer::counters() const {
  std::lock_guard lock(mu_);
  return planner_.counters();
}

std::vector<Prewarmer::Planner::Job> Prewarmer::TickLocked(TimePoint now) {
  std::vector<Planner::Job> jobs;
  // Each pending join's backend, looked up before WithRouter takes the lock Targets() takes.
  std::vector<std::shared_ptr<const BackendTarget>> joining;
  joining.reserve(joins_.size());
  for (const PendingJoin& join : joins_) joining.push_back(FindTarget(backends_, join.name));
  backends_.WithRouter([&](routing::Router& router) {
    // Plans the join once its backend is eligible; true while it waits for that.
    const auto waits = [&](const PendingJoin& join, const BackendTarget* target) {
      if (now > join.deadline || target == nullptr) return false;  // expired, or gone
      // The backend's routing targets: itself, or each of its ranks'.
      const routing::FleetView& fleet = router.fleet();
      for (routing::BackendId b : target->routing_ids()) {
        if (!fleet.backend(b).present) return false;    // gone meanwhile
        if (!fleet.backend(b).Eligible()) return true;  // waits for its first probe
      }
      const size_t before = planner_.pending();
      for (routing::BackendId b : target->routing_ids()) planner_.PlanJoin(router, b, now);
      spdlog::info("prewarm: {} joined: {} prewarm requests planned", join.name,
                   planner_.pending() - before);
      return false;
    };
    std::vector<PendingJoin> waiting;
    for (size_t i = 0; i < joins_.size(); ++i) {
      if (waits(joins_[i], joining[i].get())) waiting.push_back(std::move(joins_[i]));
    }
    joins_ = std::move(waiting);
    while (std::optional<Planner::Job> job = planner_.Next(router, now)) {
      jobs.push_back(std::move(*job));
    }
  });
  return jobs;
}

net::Task<void> Prewarmer::Loop() {
  Timer timer(executor_);
  for (int64_t tick = 1; !stopped_; ++tick) {
    // The control thread's pools are swept as the workers' are (upstream_pools.h), once a second.
    if (tick % (std::chrono::seconds(1) / kTick) == 0) pools_.Sweep();
    std::vector<Planner::Job> jobs;
    {
      std::lock_guard lock(mu_);
      jobs = TickLocked(clock_.Now());
    }
    for (Planner::Job& job : jobs) {
      asio::co_spawn(executor_, Send(std::move(job)),
                     [](std::exception_ptr e) { net::LogIfDetachedFailed("prewarm request", e); });
    }
    timer.expires_after(kTick);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
  }
}

net::Task<void> Prewarmer::Send(Planner::Job job) {
  const std::shared_ptr<const BackendTarget> target = backends_.RoutingTarget(job.target);
  const std::string_view reason = routing::PrewarmReasonName(job.reason);
  bool ok = false;
  if (target != nullptr && job.payload != nullptr) {
    routing::RoutingRequest request = job.request;
    request.id = next_request_id_.fetch_add(1, std::memory_order_relaxed);
    const uint64_t id = request.id;
    absl::StatusOr<Dispatch> dispatch = backends_.Route(std::move(request));
    if (dispatch.ok()) {
      backends_.CommitInsert(id);
      net::HttpHeaders headers = {{"content-type", "application/json"}};
      SetDataParallelRank(headers, dispatch->target->dp_rank, std::nullopt);
      const net::UpstreamRequest upstream{.method = "POST",
                                          .target = job.payload->path,
                                          .headers = &headers,
                                          .body = job.payload->body};
      auto exchange =
          co_await net::UpstreamExchange::Start(pools_.For(*dispatch->target), upstream, timeouts_);
      if (exchange.ok()) {
        auto answer = co_await (*exchange)->ReadAll(kAnswerLimit);
        ok = answer.ok() && (*exchange)->head().status == 200;
      }
      if (ok) {
        backends_.OnFirstToken(id);
        backends_.OnFinished(id, std::nullopt);
      } else {
        backends_.OnFailed(id);
      }
    }
    metrics_.OnPrewarm(target->name, reason, ok, job.request.prompt_tokens);
  }
  std::lock_guard lock(mu_);
  planner_.OnDone(job);
}

}  // namespace warmroute::gateway
