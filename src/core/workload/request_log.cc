#include "core/workload/request_log.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "simdjson.h"

namespace warmroute::workload {
namespace {

constexpr int64_t kDefaultMaxTokens = 256;

absl::Status LineError(std::string_view name, int64_t line, std::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(name), ":", line, ": ", std::string(problem)));
}

class RequestLogWorkload final : public Workload {
 public:
  RequestLogWorkload(const WorkloadOptions& options, std::vector<LoggedRequest> log,
                     uint64_t seed)
      : options_(options), log_(std::move(log)) {
    double earliest = log_.front().timestamp_s;
    for (const LoggedRequest& r : log_) earliest = std::min(earliest, r.timestamp_s);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> jitter(0, options.jitter_s);
    std::vector<std::pair<double, size_t>> order;
    for (size_t i = 0; i < log_.size(); ++i) {
      const double j = options.jitter_s > 0 ? jitter(rng) : 0;
      order.emplace_back((log_[i].timestamp_s - earliest) / options.trace_speed + j, i);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    if (options.num_requests > 0 && order.size() > static_cast<size_t>(options.num_requests)) {
      order.resize(static_cast<size_t>(options.num_requests));
    }
    order_ = std::move(order);
  }

  std::optional<WorkloadRequest> Next() override {
    if (next_ >= order_.size()) return std::nullopt;
    const auto [arrival_s, index] = order_[next_];
    const LoggedRequest& logged = log_[index];
    const request::InferenceRequest& r = logged.request;
    WorkloadRequest out;
    out.id = next_++;
    out.arrival = FromSeconds(arrival_s);
    out.model = options_.model.empty() ? r.model : options_.model;
    out.tenant = logged.has_tenant ? logged.tenant
                                   : absl::StrCat("t", logged.line % options_.num_tenants);
    out.endpoint = r.endpoint;
    out.messages = r.messages;
    out.prompt = r.prompt;
    out.max_tokens = r.max_tokens.value_or(kDefaultMaxTokens);
    return out;
  }
  void OnResponse(uint64_t, std::string_view, Duration) override {}
  bool Done() const override { return next_ >= order_.size(); }

 private:
  const WorkloadOptions options_;
  const std::vector<LoggedRequest> log_;
  std::vector<std::pair<double, size_t>> order_;  // (arrival s, index into log_)
  size_t next_ = 0;
};

}  // namespace

bool LooksLikeMooncakeTrace(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      return line.find("\"hash_ids\"") != std::string_view::npos;
    }
    at = end + 1;
  }
  return false;
}

absl::StatusOr<std::vector<LoggedRequest>> ParseRequestLog(std::string_view text,
                                                           std::string_view name) {
  std::vector<LoggedRequest> out;
  simdjson::dom::parser parser;
  int64_t line_no = 0;
  double last = -1;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(at, end - at));
    at = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    simdjson::dom::element doc;
    if (parser.parse(line).get(doc) != simdjson::SUCCESS) {
      return LineError(name, line_no, "invalid JSON");
    }
    simdjson::dom::object object;
    if (doc.get_object().get(object) != simdjson::SUCCESS) {
      return LineError(name, line_no, "not a JSON object (one request body per line)");
    }
    LoggedRequest logged;
    logged.line = line_no;
    simdjson::dom::element value;
    if (object["timestamp"].get(value) == simdjson::SUCCESS && !value.is_null()) {
      double t = 0;
      if (value.is_int64()) {
        t = static_cast<double>(int64_t(value));
      } else if (value.is_uint64()) {
        t = static_cast<double>(uint64_t(value));
      } else if (value.get_double().get(t) != simdjson::SUCCESS) {
        return LineError(name, line_no, "timestamp: expected a number of seconds");
      }
      if (!std::isfinite(t) || std::abs(t) > 1e12) {
        return LineError(name, line_no, "timestamp: expected a finite number of seconds");
      }
      logged.timestamp_s = t;
    } else {
      logged.timestamp_s = last + 1;
    }
    last = logged.timestamp_s;
    if (object["tenant"].get(value) == simdjson::SUCCESS && !value.is_null()) {
      std::string_view tenant;
      if (value.get_string().get(tenant) != simdjson::SUCCESS) {
        return LineError(name, line_no, "tenant: expected a string");
      }
      logged.has_tenant = true;
      logged.tenant = std::string(tenant);
    }
    const bool chat = object["messages"].error() == simdjson::SUCCESS;
    if (!chat && object["prompt"].error() != simdjson::SUCCESS) {
      return LineError(name, line_no,
                       "neither `messages` (a chat body) nor `prompt` (a completions body)");
    }
    absl::StatusOr<request::InferenceRequest> parsed = request::ParseInferenceRequest(
        chat ? request::Endpoint::kChatCompletions : request::Endpoint::kCompletions, line);
    if (!parsed.ok()) return LineError(name, line_no, std::string(parsed.status().message()));
    if (parsed->has_token_prompt) {
      return LineError(name, line_no, "a prompt of token ids: only text prompts are replayed");
    }
    logged.request = *std::move(parsed);
    out.push_back(std::move(logged));
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(std::string(name), ": no request"));
  return out;
}

std::unique_ptr<Workload> MakeRequestLogWorkload(const WorkloadOptions& options,
                                                 std::vector<LoggedRequest> log, uint64_t seed) {
  return std::make_unique<RequestLogWorkload>(options, std::move(log), seed);
}

}  // namespace warmroute::workload
