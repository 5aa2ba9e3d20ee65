#include "analyze/prompt_set.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/request/inference_request.h"
#include "core/routing/prefix_key.h"
#include "core/workload/mooncake_trace.h"
#include "simdjson.h"

namespace warmroute::analyze {
namespace {

constexpr int kBlockChars = 64;

absl::Status LineError(std::string_view name, int64_t line, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(name), ":", line, ": ", std::string(problem)));
}

// The first non-blank line of `content`.
std::string_view FirstLine(std::string_view content) {
  size_t at = 0;
  while (at < content.size()) {
    size_t end = content.find('\n', at);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(at, end - at);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) return line;
    at = end + 1;
  }
  return {};
}

absl::StatusOr<PromptSet> ReadRequests(std::string_view name, std::string_view content) {
  PromptSet set;
  set.format = "requests";
  set.block_chars = kBlockChars;
  set.block_tokens = kBlockChars / 4;
  simdjson::dom::parser parser;
  int64_t line_no = 0;
  double last_arrival = -1;
  size_t at = 0;
  while (at < content.size()) {
    size_t end = content.find('\n', at);
    if (end == std::string_view::npos) end = content.size();
    std::string line(content.substr(at, end - at));
    at = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    simdjson::dom::element doc;
    if (parser.parse(line).get(doc) != simdjson::SUCCESS) {
      return LineError(name, line_no, "not valid JSON");
    }
    simdjson::dom::object object;
    if (doc.get_object().get(object) != simdjson::SUCCESS) {
      return LineError(name, line_no, "not a JSON object (one request body per line)");
    }
    PromptRecord record;
    record.line = line_no;
    simdjson::dom::element value;
    if (object["timestamp"].get(value) == simdjson::SUCCESS && !value.is_null()) {
      double t = 0;
      if (value.get_double().get(t) != simdjson::SUCCESS) {
        int64_t i = 0;
        if (value.get_int64().get(i) != simdjson::SUCCESS) {
          return LineError(name, line_no, "timestamp: expected a number of seconds");
        }
        t = static_cast<double>(i);
      }
      if (!std::isfinite(t) || std::abs(t) > 1e12) {
        return LineError(name, line_no, "timestamp: expected a finite number of seconds");
      }
      record.arrival_s = t;
    } else {
      record.arrival_s = last_arrival + 1;
    }
    last_arrival = record.arrival_s;
    if (object["tenant"].get(value) == simdjson::SUCCESS && !value.is_null()) {
      std::string_view tenant;
      if (value.get_string().get(tenant) != simdjson::SUCCESS) {
        return LineError(name, line_no, "tenant: expected a string");
      }
      record.tenant = std::string(tenant);
    }
    const bool chat = object["messages"].error() == simdjson::SUCCESS;
    if (!chat && object["prompt"].error() != simdjson::SUCCESS) {
      return LineError(name, line_no,
                       "neither `messages` (a chat body) nor `prompt` (a completions body)");
    }
    absl::StatusOr<request::InferenceRequest> parsed = request::ParseInferenceRequest(
        chat ? request::Endpoint::kChatCompletions : request::Endpoint::kCompletions, line);
    if (!parsed.ok()) return LineError(name, line_no, std::string(parsed.status().message()));
    record.model = parsed->model;
    record.tools = parsed->tools;
    record.text = parsed->has_token_prompt ? std::string() : request::RenderPrompt(*parsed);
    if (parsed->has_token_prompt) {
      return LineError(name, line_no, "a prompt of token ids: analyze needs text");
    }
    record.blocks = TextBlocks(record.model, record.tenant, record.text);
    record.prompt_tokens = static_cast<int64_t>(record.text.size() + 3) / 4;
    set.records.push_back(std::move(record));
  }
  if (set.records.empty()) return absl::InvalidArgumentError(absl::StrCat(std::string(name), ": no request"));
  std::stable_sort(set.records.begin(), set.records.end(),
                   [](const PromptRecord& a, const PromptRecord& b) {
                     return a.arrival_s < b.arrival_s;
                   });
  return set;
}

absl::StatusOr<PromptSet> ReadTrace(std::string_view name, std::string_view content) {
  absl::StatusOr<std::vector<workload::TraceRecord>> trace =
      workload::ParseMooncakeTrace(content, name);
  if (!trace.ok()) return trace.status();
  PromptSet set;
  set.format = "mooncake";
  set.block_tokens = workload::kMooncakeBlockTokens;
  set.block_chars = 0;
  for (const workload::TraceRecord& r : *trace) {
    PromptRecord record;
    record.line = r.line;
    record.arrival_s = r.timestamp_ms / 1000;
    record.prompt_tokens = r.input_length;
    // A trace's last block may be partial; only full blocks are cacheable.
    const size_t full = static_cast<size_t>(r.input_length / workload::kMooncakeBlockTokens);
    for (size_t i = 0; i < std::min(full, r.hash_ids.size()); ++i) {
      record.blocks.push_back(static_cast<uint64_t>(r.hash_ids[i]));
    }
    set.records.push_back(std::move(record));
  }
  if (set.records.empty()) return absl::InvalidArgumentError(absl::StrCat(std::string(name), ": no request"));
  std::stable_sort(set.records.begin(), set.records.end(),
                   [](const PromptRecord& a, const PromptRecord& b) {
                     return a.arrival_s < b.arrival_s;
                   });
  return set;
}

}  // namespace

std::vector<uint64_t> TextBlocks(std::string_view model, std::string_view tenant,
                                 std::string_view text) {
  routing::PrefixKeyOptions options;
  options.block_chars = kBlockChars;
  return routing::MakePrefixKeyFromText(model, tenant, text, options).block_hashes;
}

absl::StatusOr<PromptSet> ReadPromptSet(std::string_view name, std::string_view content) {
  const std::string_view first = FirstLine(content);
  if (first.empty()) return absl::InvalidArgumentError(absl::StrCat(std::string(name), ": empty file"));
  if (first.find("\"hash_ids\"") != std::string_view::npos) return ReadTrace(name, content);
  return ReadRequests(name, content);
}

}  // namespace warmroute::analyze
