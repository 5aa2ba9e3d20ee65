#include "gateway/proxy/call_record.h"

#include <string_view>

namespace warmroute::gateway {

Call NewCall(const ProxyContext& context) {
  Call call;
  call.id = context.next_request_id.fetch_add(1, std::memory_order_relaxed);
  call.start = context.clock.Now();
  return call;
}

void RecordCall(const ProxyContext& context, const Call& call, const net::HttpRequest& request) {
  const TimePoint now = context.clock.Now();
  const int status = call.status != 0 ? call.status : kClientClosedRequest;
  const std::string_view backend = call.target ? std::string_view(call.target->name) : "";
  const std::string_view reason =
      call.dispatched ? routing::ReasonName(call.reason) : std::string_view();
  std::optional<double> ttft_s;
  if (call.first_byte && call.generates) ttft_s = ToSeconds(*call.first_byte - call.start);
  const double e2e_s = ToSeconds(now - call.start);
  std::optional<int64_t> prompt_tokens;
  std::optional<int64_t> cached_tokens;
  if (call.usage) {
    prompt_tokens = call.usage->prompt_tokens;
    cached_tokens = call.usage->cached_tokens;
  }
  if (!call.rejection.empty()) context.metrics.OnRejected(call.rejection, call.route);
  context.metrics.OnRequest({.route = call.route,
                             .backend = backend,
                             .status = status,
                             .reason = reason,
                             .tenant = call.tenant,
                             .ttft_s = ttft_s,
                             .e2e_s = e2e_s,
                             .retries = call.retries,
                             .prompt_tokens = prompt_tokens,
                             .predicted_cached_tokens = call.predicted_cached_tokens,
                             .reported_cached_tokens = cached_tokens,
                             .key_mode = call.key_mode,
                             .key_reason = call.key_reason,
                             .normalized = call.normalized});
  if (!context.access_log.enabled()) return;
  std::optional<double> ttft_ms;
  if (ttft_s) ttft_ms = *ttft_s * 1e3;
  context.access_log.Write({.id = call.id,
                            .method = request.method,
                            .path = request.path,
                            .route = call.route,
                            .model = call.model,
                            .stream = call.stream,
                            .status = status,
                            .backend = backend,
                            .reason = reason,
                            .prompt_tokens = prompt_tokens,
                            .predicted_cached_tokens = call.predicted_cached_tokens,
                            .cached_tokens = cached_tokens,
                            .ttft_ms = ttft_ms,
                            .e2e_ms = e2e_s * 1e3,
                            .retries = call.retries,
                            .error = call.error,
                            .tenant = call.tenant,
                            .prompt = call.prompt,
                            .key_mode = call.key_mode,
                            .key_reason = call.key_reason});
}

}  // namespace warmroute::gateway
