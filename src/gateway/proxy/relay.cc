#include "gateway/proxy/relay.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "net/openai_error.h"
#include "net/usage_tap.h"

namespace warmroute::gateway {
namespace {

// The SSE event that ends a stream whose upstream failed: an OpenAI-style error object.
std::string StreamErrorEvent(const absl::Status& status) {
  const net::HttpError error = net::ToHttpError(status);
  return absl::StrCat("data: ", error.body, "\n\n");
}

std::optional<int64_t> CachedTokensOf(const std::optional<net::Usage>& usage) {
  if (!usage) return std::nullopt;
  return usage->cached_tokens;
}

}  // namespace

net::Task<void> Relay(const ProxyContext& context, const ProxySettings& settings,
                      Forwarded& forwarded, Admitted& admitted, net::ResponseWriter& writer,
                      Call& call) {
  net::ResponseHead& head = forwarded.response.head;
  call.status = head.status;
  if (forwarded.exchange == nullptr) {  // the error the forward stage made
    (void)co_await writer.Reply(std::move(forwarded.response));
    co_return;
  }
  if (settings.response_headers) {
    head.headers.emplace_back("x-warmroute-backend", call.target->name);
    head.headers.emplace_back("x-warmroute-reason", std::string(routing::ReasonName(call.reason)));
  }
  if (!forwarded.stream) {  // read whole
    call.first_byte = context.clock.Now();
    if (head.status == 200 && admitted.usage_format) {
      call.usage = net::ReadUsage(forwarded.response.body, *admitted.usage_format);
    }
    if (head.status < 400) {
      admitted.routed.Finished(CachedTokensOf(call.usage));
    } else {
      admitted.routed.Failed();
    }
    (void)co_await writer.Reply(std::move(forwarded.response));
    co_return;
  }

  // Server-Sent Events, passed on as they arrive.
  net::SseUsageTap tap(/*drop_usage_event=*/admitted.body.usage_added(),
                       admitted.usage_format.value_or(net::UsageFormat::kChat));
  absl::Status opened = co_await writer.StartStream(std::move(head));
  if (!opened.ok()) co_return;  // the client left; the request fails in the Router
  for (;;) {
    absl::StatusOr<std::string_view> piece = co_await forwarded.exchange->ReadSome();
    if (!piece.ok()) {
      // The upstream died mid-stream: tell the client in-band, then cut the connection.
      admitted.routed.Failed();
      call.error = std::string(piece.status().message());
      const absl::Status status = absl::UnavailableError(absl::StrCat(
          "backend ", call.target->name, " failed mid-stream: ", piece.status().message()));
      const std::string event = StreamErrorEvent(status);
      (void)co_await writer.WriteChunk(event);
      writer.Abort();
      co_return;
    }
    if (piece->empty()) break;
    const std::string_view out = tap.Feed(*piece);
    if (!call.first_byte && tap.output_started()) {
      call.first_byte = context.clock.Now();
      context.backends.OnFirstToken(call.id);
    }
    if (out.empty()) continue;
    absl::Status written = co_await writer.WriteChunk(out);
    if (!written.ok()) co_return;  // the client left: the exchange closes upstream
  }
  const std::string_view rest = tap.Finish();
  if (!rest.empty()) {
    absl::Status written = co_await writer.WriteChunk(rest);
    if (!written.ok()) co_return;
  }
  if (admitted.usage_format) call.usage = tap.usage();
  admitted.routed.Finished(CachedTokensOf(call.usage));
  (void)co_await writer.FinishStream();
}

}  // namespace warmroute::gateway
