#include "loadgen/load_driver.h"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "loadgen/engine_counters.h"
#include "loadgen/response_reader.h"
#include "net/http1/http_client.h"
#include "spdlog/spdlog.h"

namespace warmroute::loadgen {
namespace {

namespace asio = boost::asio;
using Timer = asio::steady_timer::rebind_executor<net::Executor>::other;
constexpr auto kTask = asio::as_tuple(asio::use_awaitable_t<net::Executor>{});
constexpr size_t kMetricsLimit = 16u << 20;

double Seconds(Duration d) { return ToSeconds(d); }

// Earliest arrival first (then lowest id), for a min-heap over std::push_heap's max-heap.
bool LaterArrival(const workload::WorkloadRequest& a, const workload::WorkloadRequest& b) {
  return a.arrival != b.arrival ? a.arrival > b.arrival : a.id > b.id;
}

class Driver {
 public:
  Driver(asio::io_context& io, workload::Workload& workload, const LoadOptions& options,
         BenchRun* run)
      : io_(io),
        executor_(io.get_executor()),
        workload_(workload),
        options_(options),
        run_(run),
        wake_(executor_),
        tty_(isatty(STDERR_FILENO) == 1) {
    headers_.emplace_back("Content-Type", "application/json");
    if (!options.api_key.empty()) {
      headers_.emplace_back("Authorization", "Bearer " + options.api_key);
    }
    for (const HttpUrl& url : options.urls) {
      pools_.push_back(std::make_unique<net::UpstreamPool>(executor_, url.host, url.port,
                                                           net::PoolOptions{.max_idle = 8192}));
    }
    for (const HttpUrl& url : options.engine_metrics) {
      metrics_pools_.push_back(std::make_unique<net::UpstreamPool>(executor_, url.host, url.port));
      run_->engines.push_back({.url = url.text, .scrapes = {}, .last_error = ""});
    }
    scrape_warned_.assign(options.engine_metrics.size(), false);
    const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout);
    timeouts_ = {.connect = std::min(timeout, std::chrono::milliseconds(10'000)),
                 .first_byte = timeout,
                 .idle_stream = timeout};
  }

  absl::Status status() const { return status_; }

  // The whole run: first scrape, dispatch, last scrape.
  net::Task<void> Main() {
    co_await ScrapeAll();
    start_ = Now();
    if (!metrics_pools_.empty()) Spawn(ScrapeLoop(), "engine metrics scraper");
    if (options_.progress) Spawn(ProgressLoop(), "progress reporter");
    co_await Dispatch();
    if (!stopping_) co_await ScrapeAll();
    finished_ = true;
    PrintProgress(/*final=*/true);
    io_.stop();
  }

  // Stops everything at once (SIGINT, an unreachable URL).
  void Stop(absl::Status why) {
    if (stopping_) return;
    stopping_ = true;
    status_ = why;
    run_->interrupted = true;
    run_->stop_reason = std::string(why.message());
    PrintProgress(/*final=*/true);
    io_.stop();
  }

 private:
  TimePoint Now() const { return std::chrono::steady_clock::now(); }
  double Offset() const { return Seconds(Now() - start_); }

  template <typename Coroutine>
  void Spawn(Coroutine coroutine, const char* what) {
    asio::co_spawn(executor_, std::move(coroutine), [what](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        spdlog::error("bench: {} failed: {}", what, x.what());
      }
    });
  }

  // Waits until `deadline` or until Wake().
  net::Task<void> Wait(TimePoint deadline) {
    wake_.expires_at(deadline);
    co_await wake_.async_wait(kTask);
  }
  void Wake() { wake_.cancel(); }

  // Makes heap_.front() the earliest request of heap_ and the workload's pending ones.
  void Refill() {
    if (certified_ || drained_) return;
    certified_ = true;
    std::optional<workload::WorkloadRequest> next = workload_.Next();
    if (!next) {
      drained_ = true;
      return;
    }
    heap_.push_back(std::move(*next));
    std::push_heap(heap_.begin(), heap_.end(), LaterArrival);
  }

  net::Task<void> Dispatch() {
    const TimePoint never = TimePoint::max();
    while (!stopping_) {
      Refill();
      if (heap_.empty()) {
        if (in_flight_ == 0 && drained_) {
          if (!workload_.Done()) spdlog::warn("bench: the workload stopped before it was done");
          co_return;
        }
        co_await Wait(never);
        continue;
      }
      if (options_.concurrency > 0) {
        if (in_flight_ >= static_cast<size_t>(options_.concurrency)) {
          co_await Wait(never);
          continue;
        }
      } else if (const TimePoint due = start_ + heap_.front().arrival; Now() < due) {
        co_await Wait(due);
        continue;
      }
      std::pop_heap(heap_.begin(), heap_.end(), LaterArrival);
      workload::WorkloadRequest request = std::move(heap_.back());
      heap_.pop_back();
      certified_ = false;
      Launch(std::move(request));
    }
  }

  void Launch(workload::WorkloadRequest request) {
    const size_t index = run_->requests.size();
    RequestRecord& record = run_->requests.emplace_back();
    record.id = request.id;
    record.session = request.session;
    record.turn = request.turn;
    record.arrival_s = Seconds(request.arrival);
    ++in_flight_;
    asio::co_spawn(executor_, Send(std::move(request), index), [this, index](std::exception_ptr e) {
      if (!e) return;
      std::string what = "unknown exception";
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        what = x.what();
      }
      spdlog::error("bench: request {} failed: {}", index, what);
      Finish(index, 0, error_kind::kBrokenStream, what, "");
    });
  }

  // Records the end of request `index` and tells the workload.
  void Finish(size_t index, double end_offset, std::string_view kind, std::string error,
              std::string_view answer) {
    RequestRecord& r = run_->requests[index];
    if (kind.empty()) {
      r.e2e_s = end_offset - r.send_s;
      if (r.ttft_s >= 0) ttft_done_.push_back(r.ttft_s);
    } else {
      r.error_kind = std::string(kind);
      r.error = std::move(error);
      ++errors_;
    }
    ++done_;
    --in_flight_;
    workload_.OnResponse(r.id, answer, Now() - start_);
    certified_ = false;
    drained_ = false;
    Wake();
  }

  net::Task<void> Send(workload::WorkloadRequest request, size_t index) {
    const size_t which = next_pool_++ % pools_.size();
    const request::Endpoint api = SentAs(request, options_.body);
    const std::string body = BuildRequestBody(request, options_.body);
    const std::string target = ApiTarget(options_.urls[which], RequestTarget(api));
    request = {};  // the prompt is in `body` now
    const net::UpstreamRequest upstream{
        .method = "POST", .target = target, .headers = &headers_, .body = body};
    const TimePoint sent = Now();
    run_->requests[index].send_s = Seconds(sent - start_);
    auto exchange = co_await net::UpstreamExchange::Start(*pools_[which], upstream, timeouts_);
    if (!exchange.ok()) {
      const absl::Status& s = exchange.status();
      if (net::ConnectFailed(s)) {
        const std::string why =
            absl::StrCat("cannot connect to ", options_.urls[which].text, ": ", s.message());
        Finish(index, 0, error_kind::kConnect, why, "");
        Stop(absl::UnavailableError(why));
      } else {
        Finish(index, 0,
               absl::IsDeadlineExceeded(s) ? error_kind::kTimeout : error_kind::kBrokenStream,
               std::string(s.message()), "");
      }
      co_return;
    }
    const net::UpstreamResponseHead& head = (*exchange)->head();
    {
      RequestRecord& r = run_->requests[index];
      r.http_status = head.status;
      for (const auto& [name, value] : head.headers) {
        if (absl::EqualsIgnoreCase(name, "x-warmroute-backend")) r.backend = value;
      }
    }
    ResponseReader reader(head.status, head.content_type, api);
    for (;;) {
      absl::StatusOr<std::string_view> piece = co_await (*exchange)->ReadSome();
      const double now = Seconds(Now() - sent);
      if (!piece.ok()) {
        Finish(index, 0,
               absl::IsDeadlineExceeded(piece.status()) ? error_kind::kTimeout
                                                        : error_kind::kBrokenStream,
               absl::StrCat("response body: ", piece.status().message()), reader.answer());
        co_return;
      }
      if (piece->empty()) {
        reader.Finish(now);
        break;
      }
      reader.Feed(*piece, now);
    }
    const double end = Offset();
    RequestRecord& r = run_->requests[index];
    const std::vector<double>& chunks = reader.chunk_times_s();
    if (!chunks.empty()) r.ttft_s = chunks.front();
    r.itl_s.reserve(chunks.size());
    for (size_t i = 1; i < chunks.size(); ++i) r.itl_s.push_back(chunks[i] - chunks[i - 1]);
    if (const auto& usage = reader.usage()) {
      r.usage_reported = true;
      r.prompt_tokens = usage->prompt_tokens;
      r.completion_tokens = usage->completion_tokens;
      r.cached_tokens = usage->cached_tokens.value_or(0);
    } else {
      r.completion_tokens = static_cast<int64_t>(chunks.size());  // about one token a chunk
    }
    Finish(index, end, reader.error_kind(), reader.error(), reader.answer());
  }

  net::Task<void> ScrapeAll() {
    for (size_t i = 0; i < metrics_pools_.size(); ++i) co_await ScrapeOnce(i);
  }

  net::Task<void> ScrapeOnce(size_t i) {
    const HttpUrl& url = options_.engine_metrics[i];
    const std::string path = url.path.empty() ? "/metrics" : url.path;
    const net::UpstreamRequest request{
        .method = "GET", .target = path, .headers = nullptr, .body = {}};
    const std::chrono::milliseconds limit{2000};
    const net::UpstreamTimeouts timeouts{
        .connect = limit, .first_byte = limit, .idle_stream = limit};
    EngineSeries& series = run_->engines[i];
    auto exchange = co_await net::UpstreamExchange::Start(*metrics_pools_[i], request, timeouts);
    if (!exchange.ok()) {
      ScrapeFailed(i, exchange.status().message());
      co_return;
    }
    auto text = co_await (*exchange)->ReadAll(kMetricsLimit);
    if (!text.ok()) {
      ScrapeFailed(i, text.status().message());
      co_return;
    }
    if ((*exchange)->head().status != 200) {
      ScrapeFailed(i, absl::StrCat("HTTP ", (*exchange)->head().status));
      co_return;
    }
    absl::StatusOr<EngineCounters> counters = ReadEngineCounters(*text);
    if (!counters.ok()) {
      ScrapeFailed(i, counters.status().message());
      co_return;
    }
    series.scrapes.emplace_back(start_ == TimePoint{} ? 0.0 : std::max(0.0, Offset()), *counters);
  }

  // Records a failed scrape of engine `i`; the first failure of each URL is also a warning on
  // stderr (later ones only go to results.json's last_error, not once a second).
  void ScrapeFailed(size_t i, absl::string_view error) {
    EngineSeries& series = run_->engines[i];
    series.last_error = std::string(error);
    if (scrape_warned_[i]) return;
    scrape_warned_[i] = true;
    std::fprintf(stderr,
                 "%swarmroute bench: warning: cannot scrape --engine-metrics %s: %s (later "
                 "failures are recorded in results.json as last_error)\n",
                 tty_ && options_.progress ? "\r\033[K" : "", series.url.c_str(),
                 series.last_error.c_str());
    std::fflush(stderr);
  }

  net::Task<void> ScrapeLoop() {
    Timer timer(executor_);
    while (!finished_ && !stopping_) {
      timer.expires_after(options_.scrape_interval);
      co_await timer.async_wait(kTask);
      if (finished_ || stopping_) break;
      co_await ScrapeAll();
    }
  }

  net::Task<void> ProgressLoop() {
    Timer timer(executor_);
    const auto interval = tty_ ? std::chrono::milliseconds(500) : std::chrono::milliseconds(5000);
    while (!finished_ && !stopping_) {
      timer.expires_after(interval);
      co_await timer.async_wait(kTask);
      if (finished_ || stopping_) break;
      PrintProgress(/*final=*/false);
    }
  }

  void PrintProgress(bool final) {
    if (!options_.progress || printed_final_) return;
    printed_final_ = final;
    std::string p50 = "-";
    if (!ttft_done_.empty()) {
      std::vector<double> copy = ttft_done_;
      auto mid = copy.begin() + static_cast<ptrdiff_t>(copy.size() / 2);
      std::nth_element(copy.begin(), mid, copy.end());
      p50 = absl::StrFormat("%.1f ms", 1000 * *mid);
    }
    const std::string total =
        options_.expected_requests > 0 ? absl::StrCat(options_.expected_requests) : "?";
    const std::string line =
        absl::StrFormat("bench: %d/%s done, %d errors, %d in flight, TTFT p50 %s, %.1f s", done_,
                        total, errors_, in_flight_, p50, Offset());
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }

  asio::io_context& io_;
  net::Executor executor_;
  workload::Workload& workload_;
  const LoadOptions& options_;
  net::HttpHeaders headers_;  // of every request
  BenchRun* run_;
  Timer wake_;
  const bool tty_;
  std::vector<std::unique_ptr<net::UpstreamPool>> pools_;
  std::vector<std::unique_ptr<net::UpstreamPool>> metrics_pools_;
  std::vector<bool> scrape_warned_;  // per engine: its first failed scrape was reported
  net::UpstreamTimeouts timeouts_;
  size_t next_pool_ = 0;

  TimePoint start_{};
  std::vector<workload::WorkloadRequest> heap_;  // std::push_heap order by LaterArrival
  bool certified_ = false;  // heap_.front() is no later than anything the workload holds
  bool drained_ = false;    // the workload's Next() returned nullopt since the last response
  size_t in_flight_ = 0;
  size_t done_ = 0;
  size_t errors_ = 0;
  std::vector<double> ttft_done_;
  bool stopping_ = false;
  bool finished_ = false;
  bool printed_final_ = false;
  absl::Status status_;
};

}  // namespace

absl::Status RunLoad(workload::Workload& workload, const LoadOptions& options, BenchRun* run) {
  if (options.urls.empty()) return absl::InvalidArgumentError("no target URL");
  asio::io_context io(1);
  Driver driver(io, workload, options, run);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&driver](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    driver.Stop(absl::CancelledError(
        absl::StrCat("interrupted by ", signal == SIGINT ? "SIGINT" : "SIGTERM")));
  });
  asio::co_spawn(io.get_executor(), driver.Main(), [&driver](std::exception_ptr e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      driver.Stop(absl::InternalError(absl::StrCat("bench driver failed: ", x.what())));
    }
  });
  io.run();
  for (RequestRecord& r : run->requests) {
    if (r.e2e_s < 0 && r.error_kind.empty()) {  // in flight, or launched but not yet sent
      r.error_kind = error_kind::kInterrupted;
      r.error = run->stop_reason.empty() ? "the run stopped" : run->stop_reason;
    }
  }
  return driver.status();
}

}  // namespace warmroute::loadgen
