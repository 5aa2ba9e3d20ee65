#include "gateway/keys/parity_prober.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "net/detached.h"
#include "net/http1/http_client.h"

namespace warmroute::gateway {
namespace {

namespace asio = boost::asio;
constexpr auto kTick = std::chrono::milliseconds(500);
constexpr size_t kAnswerLimit = size_t{4} << 20;

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// One POST /tokenize on `pool`.
net::Task<TokenizeAnswer> PostTokenize(net::UpstreamPool& pool, std::string body,
                                       std::chrono::milliseconds timeout) {
  static const net::HttpHeaders kJson = {{"content-type", "application/json"}};
  const net::UpstreamTimeouts timeouts{.connect = timeout, .first_byte = timeout,
                                       .idle_stream = timeout};
  net::UpstreamRequest request{
      .method = "POST", .target = "/tokenize", .headers = &kJson, .body = body};
  TokenizeAnswer answer;
  auto exchange = co_await net::UpstreamExchange::Start(pool, request, timeouts);
  if (!exchange.ok()) {
    answer.error = std::string(exchange.status().message());
    co_return answer;
  }
  auto read = co_await (*exchange)->ReadAll(kAnswerLimit);
  if (!read.ok()) {
    answer.error = std::string(read.status().message());
    co_return answer;
  }
  answer.status = (*exchange)->head().status;
  answer.body = std::move(*read);
  co_return answer;
}

// Both probes on a connection of their own.
net::Task<ParityResult> RunProbes(net::Executor executor, const BackendTarget& target,
                                  std::string model, ParityExpectation expected,
                                  std::chrono::milliseconds timeout) {
  net::UpstreamPool pool(executor, target.host, target.port,
                         net::PoolOptions{.max_idle = 1,
                                          .tls = target.tls_context,
                                          .tls_server_name = target.tls.server_name});
  const TokenizeAnswer chat = co_await PostTokenize(pool, ParityChatBody(model), timeout);
  TokenizeAnswer text;
  if (chat.status == 200) text = co_await PostTokenize(pool, ParityTextBody(model), timeout);
  co_return JudgeParity(expected, chat, text);
}

}  // namespace

ParityProber::ParityProber(net::Executor executor, Backends& backends, const Clock& clock,
                           GatewayMetrics& metrics, ModelsSource models,
                           std::chrono::milliseconds interval, std::chrono::milliseconds timeout)
    : executor_(executor),
      backends_(backends),
      clock_(clock),
      metrics_(metrics),
      models_(std::move(models)),
      interval_(interval),
      timeout_(std::max<std::chrono::milliseconds>(timeout, kParityTimeout)),
      timer_(executor) {}

void ParityProber::Stop() {
  stopped_ = true;
  timer_.cancel();
}

void ParityProber::Start() {
  asio::co_spawn(executor_, Loop(),
                 [](std::exception_ptr e) { net::LogIfDetachedFailed("parity prober loop", e); });
}

void ParityProber::Publish(const ModelTokenizers& models) {
  for (const auto& model : models.models()) {
    if (model->files() == nullptr) continue;
    const bool ok = schedule_.ModelOk(model->name());
    model->set_parity_ok(ok);
    metrics_.SetModelPrecise(model->name(), ok);
  }
}

net::Task<void> ParityProber::Loop() {
  std::vector<ParityPair> pairs;
  std::vector<std::pair<std::shared_ptr<const BackendTarget>, std::shared_ptr<const ModelKeying>>>
      owners;
  while (!stopped_) {
    const std::shared_ptr<const ModelTokenizers> models = models_();
    pairs.clear();
    owners.clear();
    if (models != nullptr) {
      for (const BackendSnapshot& backend : backends_.Snapshot()) {
        if (backend.state != "up" && backend.state != "draining") continue;
        const BackendTarget& target = *backend.target;
        for (const auto& model : models->models()) {
          if (model->files() == nullptr) continue;
          const bool serves = target.models.empty()
                                  ? Contains(backend.discovered_models, model->name())
                                  : Contains(target.models, model->name());
          if (serves) owners.emplace_back(backend.target, model);
        }
      }
      for (const auto& [target, model] : owners) pairs.push_back({target->name, model->name(), model.get()});
      for (size_t i : schedule_.Tick(clock_.Now(), pairs)) {
        asio::co_spawn(executor_, Check(owners[i].first, owners[i].second, models),
                       [](std::exception_ptr e) { net::LogIfDetachedFailed("parity check", e); });
      }
      Publish(*models);
    }
    timer_.expires_after(kTick);
    co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
  }
}

net::Task<void> ParityProber::Check(std::shared_ptr<const BackendTarget> target,
                                    std::shared_ptr<const ModelKeying> model,
                                    std::shared_ptr<const ModelTokenizers> models) {
  absl::StatusOr<ParityExpectation> expected =
      ExpectParity(model->name(), *model->files(), models->clock());
  ParityResult result;
  if (!expected.ok()) {
    result = {.verdict = ParityVerdict::kFailed, .detail = std::string(expected.status().message())};
  } else {
    result = co_await RunProbes(executor_, *target, model->name(), std::move(*expected), timeout_);
  }
  metrics_.OnParityCheck(target->name, model->name(), ParityVerdictName(result.verdict));
  switch (schedule_.OnDone(target->name, model->name(), result.verdict, clock_.Now(),
                           interval_)) {
    case ParityChange::kNone:
      break;
    case ParityChange::kMismatch:
      spdlog::error(
          "backend {}: model {}: token ids differ from the gateway's (tokenizer and chat template "
          "of {}): {}; the model's requests get approximate prefix keys until they match",
          target->name, model->name(), model->files()->dir, result.detail);
      break;
    case ParityChange::kMatchAgain:
      spdlog::info("backend {}: model {}: token ids match the gateway's again", target->name,
                   model->name());
      break;
    case ParityChange::kNoEndpoint:
      spdlog::info("backend {}: model {}: no /tokenize ({}); its token ids are not checked",
                   target->name, model->name(), result.detail);
      break;
    case ParityChange::kFailed:
      spdlog::warn("backend {}: model {}: parity check failed: {}; retried in {} s", target->name,
                   model->name(), result.detail, kParityRetry.count());
      break;
  }
  Publish(*models);
}

}  // namespace warmroute::gateway
