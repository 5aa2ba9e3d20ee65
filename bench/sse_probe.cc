// sse_probe: the compiled backend and client of bench/sse_timing.py (--probe), so that the
// measuring processes are not themselves the noise the measurement looks for.
//
//   sse_probe serve --port P [--events N] [--interval-ms I]
//     An HTTP server (net/http1/http_server.h) answering every POST with an SSE stream of N events,
//     one every I ms on absolute deadlines, each stamped with its send time ("t": CLOCK_MONOTONIC
//     nanoseconds, shared by every process on the machine), then "data: [DONE]". GET /health and
//     GET /v1/models answer as an OpenAI server would. Prints "listening on P" and serves until
//     killed.
//   sse_probe measure --port P [--streams S]
//     Opens S concurrent streams to 127.0.0.1:P (net/http1/http_client.h) and, for every event,
//     records delay = arrival - send time and jitter = |arrival gap - send gap| (the event's gap
//     against the one before it on the same stream). Prints one JSON object:
//     {"events": E, "delay_ms": [...], "jitter_ms": [...]}.
//
// One io_context thread each. Not a product command: a measuring instrument for the benchmark.
#include <time.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "net/http1/http_client.h"
#include "net/http1/http_server.h"
#include "net/http1/response_writer.h"
#include "net/http1/sse.h"

namespace {

namespace asio = boost::asio;
using warmroute::net::Task;

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct Options {
  std::string mode;
  int port = 0;
  int events = 100;
  double interval_ms = 10;
  int streams = 50;
};

bool ParseOptions(int argc, char** argv, Options& o) {
  if (argc < 2) return false;
  o.mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--port") {
      o.port = std::atoi(value);
    } else if (flag == "--events") {
      o.events = std::atoi(value);
    } else if (flag == "--interval-ms") {
      o.interval_ms = std::atof(value);
    } else if (flag == "--streams") {
      o.streams = std::atoi(value);
    } else {
      std::fprintf(stderr, "sse_probe: unknown flag %s\n", argv[i]);
      return false;
    }
  }
  return (o.mode == "serve" || o.mode == "measure") && o.port > 0 && o.port < 65536 &&
         o.events > 0 && o.interval_ms > 0 && o.streams > 0;
}

Task<void> Serve(const Options& o, warmroute::net::HttpRequest request,
                 warmroute::net::ResponseWriter& writer) {
  if (request.method != "POST") {
    warmroute::net::ResponseHead head;
    co_await writer.Reply(std::move(head),
                          request.path == "/v1/models"
                              ? R"({"object":"list","data":[{"id":"m","object":"model"}]})"
                              : "{}");
    co_return;
  }
  warmroute::net::ResponseHead head;
  head.content_type = "text/event-stream";
  if (!(co_await writer.StartStream(std::move(head))).ok()) co_return;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto start = std::chrono::steady_clock::now();
  const auto interval = std::chrono::duration<double, std::milli>(o.interval_ms);
  for (int i = 0; i < o.events; ++i) {
    timer.expires_at(start + std::chrono::duration_cast<std::chrono::nanoseconds>(interval * i));
    co_await timer.async_wait(asio::use_awaitable_t<warmroute::net::Executor>{});
    const std::string event = R"(data: {"choices":[{"index":0,"delta":{"content":"x"}}],"t":)" +
                              std::to_string(MonotonicNs()) + "}\n\n";
    if (!(co_await writer.WriteChunk(event)).ok()) co_return;
  }
  if (!(co_await writer.WriteChunk("data: [DONE]\n\n")).ok()) co_return;
  co_await writer.FinishStream();
}

struct Samples {
  std::vector<double> delay_ms;
  std::vector<double> jitter_ms;
};

Task<void> OneStream(warmroute::net::UpstreamPool& pool, Samples& samples, int& failures) {
  const std::string body =
      R"({"model":"m","stream":true,"messages":[{"role":"user","content":"time me"}]})";
  const warmroute::net::HttpHeaders headers = {{"Content-Type", "application/json"}};
  const warmroute::net::UpstreamRequest request{
      .method = "POST", .target = "/v1/chat/completions", .headers = &headers, .body = body};
  const warmroute::net::UpstreamTimeouts timeouts;
  auto started = co_await warmroute::net::UpstreamExchange::Start(pool, request, timeouts);
  if (!started.ok() || (*started)->head().status != 200) {
    ++failures;
    co_return;
  }
  std::string text;
  size_t done = 0;
  int64_t previous_arrival = 0;
  int64_t previous_sent = 0;
  for (;;) {
    absl::StatusOr<std::string_view> piece = co_await (*started)->ReadSome();
    const int64_t now = MonotonicNs();
    if (!piece.ok()) {
      ++failures;
      co_return;
    }
    if (piece->empty()) co_return;
    text.append(*piece);
    for (size_t end = warmroute::net::SseEventEnd(text, done); end != std::string_view::npos;
         end = warmroute::net::SseEventEnd(text, done)) {
      const std::string_view event = std::string_view(text).substr(done, end - done);
      done = end;
      const size_t at = event.rfind("\"t\":");
      if (at == std::string_view::npos) continue;
      const int64_t sent = std::strtoll(event.data() + at + 4, nullptr, 10);
      samples.delay_ms.push_back(static_cast<double>(now - sent) / 1e6);
      if (previous_arrival != 0) {
        samples.jitter_ms.push_back(
            std::abs(static_cast<double>((now - previous_arrival) - (sent - previous_sent))) / 1e6);
      }
      previous_arrival = now;
      previous_sent = sent;
    }
  }
}

void PrintList(const char* name, const std::vector<double>& values) {
  std::printf("\"%s\":[", name);
  for (size_t i = 0; i < values.size(); ++i) std::printf(i ? ",%.4f" : "%.4f", values[i]);
  std::printf("]");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: sse_probe serve --port P [--events N] [--interval-ms I]\n"
                 "       sse_probe measure --port P [--streams S]\n");
    return 2;
  }
  asio::io_context io(1);
  if (o.mode == "serve") {
    warmroute::net::HttpServerOptions options;
    options.port = static_cast<uint16_t>(o.port);
    auto server = warmroute::net::HttpServer::Create(
        io, options,
        [&o](warmroute::net::HttpRequest request, warmroute::net::ResponseWriter& writer)
            -> Task<void> { return Serve(o, std::move(request), writer); });
    if (!server.ok()) {
      std::fprintf(stderr, "sse_probe: %s\n", std::string(server.status().message()).c_str());
      return 1;
    }
    (*server)->Start();
    std::printf("listening on %d\n", (*server)->port());
    std::fflush(stdout);
    io.run();
    return 0;
  }
  warmroute::net::UpstreamPool pool(io.get_executor(), "127.0.0.1", static_cast<uint16_t>(o.port));
  Samples samples;
  int failures = 0;
  int running = o.streams;
  for (int s = 0; s < o.streams; ++s) {
    // The pool keeps its idle connections (and their timers): stop when the last stream ends.
    asio::co_spawn(io, OneStream(pool, samples, failures), [&](std::exception_ptr e) {
      if (e) ++failures;
      if (--running == 0) io.stop();
    });
  }
  io.run();
  std::printf("{\"events\":%zu,\"failures\":%d,", samples.delay_ms.size(), failures);
  PrintList("delay_ms", samples.delay_ms);
  std::printf(",");
  PrintList("jitter_ms", samples.jitter_ms);
  std::printf("}\n");
  return failures == 0 ? 0 : 1;
}
