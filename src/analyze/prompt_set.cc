#include "analyze/prompt_set.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/request/inference_request.h"
#include "core/routing/prefix_key.h"
#include "core/workload/mooncake_trace.h"
#include "core/workload/request_log.h"

namespace warmroute::analyze {
namespace {

constexpr int kBlockChars = 64;

absl::StatusOr<PromptSet> ReadRequests(std::string_view name, std::string_view content) {
  absl::StatusOr<std::vector<workload::LoggedRequest>> log =
      workload::ParseRequestLog(content, name);
  if (!log.ok()) return log.status();
  PromptSet set;
  set.format = "requests";
  set.block_chars = kBlockChars;
  set.block_tokens = kBlockChars / 4;
  for (workload::LoggedRequest& logged : *log) {
    PromptRecord record;
    record.line = logged.line;
    record.arrival_s = logged.timestamp_s;
    record.tenant = std::move(logged.tenant);
    record.model = logged.request.model;
    record.tools = logged.request.tools;
    record.text = request::RenderPrompt(logged.request);
    record.blocks = TextBlocks(record.model, record.tenant, record.text);
    record.prompt_tokens = static_cast<int64_t>(record.text.size() + 3) / 4;
    set.records.push_back(std::move(record));
  }
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
  if (content.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(name), ": empty file"));
  }
  absl::StatusOr<PromptSet> set = workload::LooksLikeMooncakeTrace(content)
                                      ? ReadTrace(name, content)
                                      : ReadRequests(name, content);
  if (!set.ok()) return set;
  std::stable_sort(set->records.begin(), set->records.end(),
                   [](const PromptRecord& a, const PromptRecord& b) {
                     return a.arrival_s < b.arrival_s;
                   });
  return set;
}

}  // namespace warmroute::analyze
