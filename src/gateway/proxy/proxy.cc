#include "gateway/proxy/proxy.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <utility>
#include <variant>

#include "gateway/proxy/admit.h"
#include "gateway/proxy/call_record.h"
#include "gateway/proxy/forward.h"
#include "gateway/proxy/relay.h"
#include "net/detached.h"

namespace warmroute::gateway {

namespace asio = boost::asio;

namespace {

// Once a second: an engine's keep-alive timeout is seconds (uvicorn's 5 s), and a probe of each
// idle connection costs a system call.
constexpr std::chrono::seconds kSweepInterval{1};

}  // namespace

Proxy::Proxy(const ProxyContext& context, std::shared_ptr<const ProxySettings> settings,
             net::Executor executor, uint64_t seed)
    : context_(context),
      executor_(executor),
      pools_(executor, context.backends),
      response_ids_(seed) {
  SetSettings(std::move(settings));
  asio::co_spawn(executor_, SweepPools(),
                 [](std::exception_ptr e) { net::LogIfDetachedFailed("upstream pool sweep", e); });
}

net::Task<void> Proxy::SweepPools() {
  using Timer =
      asio::basic_waitable_timer<std::chrono::steady_clock,
                                 asio::wait_traits<std::chrono::steady_clock>, net::Executor>;
  Timer timer(executor_);
  cancel_sweep_ = [&timer] { timer.cancel(); };
  while (!stopped_) {
    timer.expires_after(kSweepInterval);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
    if (!stopped_) pools_.Sweep();
  }
  cancel_sweep_ = nullptr;
}

void Proxy::SetSettings(std::shared_ptr<const ProxySettings> settings) {
  const bool redis_changed = !settings_ || settings_->redis_url != settings->redis_url ||
                             settings_->redis_timeout != settings->redis_timeout;
  settings_ = std::move(settings);
  if (!redis_changed) return;
  redis_.reset();
  if (stopped_ || settings_->redis_url.empty()) return;
  absl::StatusOr<net::RedisEndpoint> endpoint = net::ParseRedisUrl(settings_->redis_url);
  if (!endpoint.ok()) return;  // the config validator refused it already
  RedisRateStoreOptions options;
  options.endpoint = *endpoint;
  options.command_timeout = settings_->redis_timeout;
  options.connect_timeout = std::max(settings_->redis_timeout, std::chrono::milliseconds(100));
  redis_ = std::make_unique<RedisRateStore>(executor_, options, context_.clock);
}

void Proxy::Stop() {
  stopped_ = true;
  redis_.reset();
  if (cancel_sweep_) cancel_sweep_();
}

net::Task<void> Proxy::Handle(RouteMatch route, net::HttpRequest& request,
                              net::ResponseWriter& writer) {
  const std::shared_ptr<const ProxySettings> settings = settings_;
  Call call = NewCall(context_);
  call.route = route.route->name;
  call.generates = route.route->body == RouteBody::kPrompt;
  try {
    AdmitResult admitted = co_await Admit(context_, *settings, redis_, route, request, call);
    if (Refusal* refusal = std::get_if<Refusal>(&admitted)) {
      call.rejection = refusal->rejection;
      call.error = std::string(refusal->error.message());
      net::Response response = ResponseOf(*refusal);
      call.status = response.head.status;
      (void)co_await writer.Reply(std::move(response));
    } else {
      Admitted& request_admitted = std::get<Admitted>(admitted);
      request_admitted.routed.CommitInsertSoon(executor_);
      Forwarded forwarded = co_await Forward(context_, *settings, pools_, response_ids_,
                                             request_admitted, request, call);
      co_await Relay(context_, *settings, forwarded, request_admitted, writer, call);
    }
  } catch (...) {
    RecordCall(context_, call, request);  // cancelled (the client left) or failed: 499
    throw;
  }
  RecordCall(context_, call, request);
}

}  // namespace warmroute::gateway
