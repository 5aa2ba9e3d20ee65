// trace:FILE — replays a Mooncake-format trace (see mooncake_trace.h for the format and the
// replay rules). The text of block `h` is " " + IdWord(h) followed by pseudo-English prose drawn
// from Rng(StreamSeed(seed, salt, h)): 512 tokens, about 2,250 characters. The leading id word
// makes distinct blocks differ within their first few characters, so prompts share text exactly
// as far as they share hash ids; a partial last block is the prefix of its block's full text.
// Defaults and their source: 512-token blocks (Mooncake's trace format), completions requests,
// speed 1 and no jitter (WorkloadOptions).
#include "core/workload/mooncake_trace.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "core/workload/file_text.h"
#include "core/workload/request_log.h"
#include "core/workload/sampling.h"
#include "core/workload/text.h"
#include "simdjson.h"

namespace warmroute::workload {
namespace {

constexpr uint64_t kBlockSalt = 0xb10c;
constexpr uint64_t kJitterSalt = 0x7177;

absl::Status LineError(std::string_view name, int64_t line, std::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(name), ":", line, ": ", std::string(problem)));
}

// Reads a required integer field in [0, max]; errors name `field` and give the value.
absl::Status ReadCount(simdjson::dom::object object, const char* field, int64_t max,
                       std::string_view name, int64_t line, int64_t* out) {
  simdjson::dom::element value;
  if (object[field].get(value) != simdjson::SUCCESS) {
    return LineError(name, line, absl::StrCat("missing field \"", field, "\""));
  }
  if (uint64_t big = 0; value.type() == simdjson::dom::element_type::UINT64 &&
                        value.get_uint64().get(big) == simdjson::SUCCESS) {
    return LineError(name, line,
                     absl::StrCat("\"", field, "\" must be at most ", max, ", got ", big));
  }
  int64_t number = 0;
  if (value.get_int64().get(number) != simdjson::SUCCESS) {
    return LineError(name, line, absl::StrCat("\"", field, "\" must be an integer"));
  }
  if (number < 0) {
    return LineError(name, line,
                     absl::StrCat("\"", field, "\" must not be negative, got ", number));
  }
  if (number > max) {
    return LineError(name, line,
                     absl::StrCat("\"", field, "\" must be at most ", max, ", got ", number));
  }
  *out = number;
  return absl::OkStatus();
}

absl::StatusOr<TraceRecord> ParseLine(simdjson::dom::parser& parser, const char* data, size_t size,
                                      std::string_view name, int64_t line) {
  simdjson::dom::element root;
  if (const auto error = parser.parse(data, size, /*realloc_if_needed=*/false).get(root);
      error != simdjson::SUCCESS) {
    return LineError(name, line, absl::StrCat("invalid JSON: ", simdjson::error_message(error)));
  }
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) {
    return LineError(name, line, "expected a JSON object");
  }
  TraceRecord record;
  record.line = line;

  simdjson::dom::element timestamp;
  if (object["timestamp"].get(timestamp) != simdjson::SUCCESS) {
    return LineError(name, line, "missing field \"timestamp\"");
  }
  if (timestamp.get_double().get(record.timestamp_ms) != simdjson::SUCCESS) {
    return LineError(name, line, "\"timestamp\" must be a number (milliseconds)");
  }
  if (record.timestamp_ms < 0) return LineError(name, line, "\"timestamp\" must not be negative");
  if (!(record.timestamp_ms <= kMaxTraceTimestampMs)) {  // also NaN
    return LineError(name, line,
                     absl::StrCat("\"timestamp\" must be at most ", kMaxTraceTimestampMs,
                                  " ms (about 3 years), got ", record.timestamp_ms));
  }
  if (absl::Status s =
          ReadCount(object, "input_length", kMaxTraceInputTokens, name, line, &record.input_length);
      !s.ok()) {
    return s;
  }
  if (record.input_length < 1) return LineError(name, line, "\"input_length\" must be at least 1");
  if (absl::Status s = ReadCount(object, "output_length", kMaxTraceOutputTokens, name, line,
                                 &record.output_length);
      !s.ok()) {
    return s;
  }

  simdjson::dom::element ids_value;
  if (object["hash_ids"].get(ids_value) != simdjson::SUCCESS) {
    return LineError(name, line, "missing field \"hash_ids\"");
  }
  simdjson::dom::array ids;
  if (ids_value.get_array().get(ids) != simdjson::SUCCESS) {
    return LineError(name, line, "\"hash_ids\" must be an array of integers");
  }
  record.hash_ids.reserve(ids.size());
  for (simdjson::dom::element id : ids) {
    int64_t value = 0;
    if (id.type() == simdjson::dom::element_type::UINT64 ||
        id.get_int64().get(value) != simdjson::SUCCESS) {
      return LineError(name, line, "\"hash_ids\" must be an array of integers");
    }
    if (value < 0) {
      return LineError(name, line,
                       absl::StrCat("\"hash_ids\" must not hold negative ids, got ", value));
    }
    record.hash_ids.push_back(value);
  }
  const int64_t blocks = (record.input_length + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
  if (static_cast<int64_t>(record.hash_ids.size()) != blocks) {
    return LineError(name, line,
                     absl::StrCat("\"hash_ids\" has ", record.hash_ids.size(),
                                  " ids but input_length ", record.input_length, " needs ceil(",
                                  record.input_length, "/", kMooncakeBlockTokens, ") = ", blocks));
  }
  return record;
}

bool IsBlank(const char* data, size_t size) {
  return std::all_of(data, data + size,
                     [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

absl::StatusOr<std::vector<TraceRecord>> ParsePadded(const simdjson::padded_string& text,
                                                     std::string_view name) {
  simdjson::dom::parser parser;
  std::vector<TraceRecord> records;
  const char* data = text.data();
  const size_t size = text.size();
  int64_t line = 0;
  for (size_t start = 0; start < size;) {
    ++line;
    const void* newline = std::memchr(data + start, '\n', size - start);
    const size_t end =
        newline ? static_cast<size_t>(static_cast<const char*>(newline) - data) : size;
    // The padded buffer keeps SIMDJSON_PADDING readable bytes after any line.
    if (!IsBlank(data + start, end - start)) {
      absl::StatusOr<TraceRecord> record = ParseLine(parser, data + start, end - start, name, line);
      if (!record.ok()) return record.status();
      records.push_back(*std::move(record));
    }
    start = end + 1;
  }
  return records;
}

}  // namespace

absl::StatusOr<std::vector<TraceRecord>> ParseMooncakeTrace(std::string_view text,
                                                            std::string_view name) {
  return ParsePadded(simdjson::padded_string(text.data(), text.size()), name);
}

absl::StatusOr<std::vector<TraceRecord>> ReadMooncakeTrace(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileText(path, "trace file");
  if (!text.ok()) return text.status();
  return ParsePadded(simdjson::padded_string(text->data(), text->size()), path);
}

void AppendTraceBlock(uint64_t seed, int64_t hash_id, int64_t tokens, std::string* out) {
  const std::string id_word = IdWord(static_cast<uint64_t>(hash_id));
  out->push_back(' ');
  out->append(id_word);
  const int64_t rest = tokens - SpacedWordTokens(id_word.size());
  if (rest <= 0) return;
  Rng rng(StreamSeed(seed, kBlockSalt, static_cast<uint64_t>(hash_id)));
  AppendProse(rng, rest, out);
}

TraceWorkload::TraceWorkload(const WorkloadOptions& options, std::vector<TraceRecord> records,
                             uint64_t seed)
    : options_(options), seed_(seed) {
  Rng jitter(StreamSeed(seed, kJitterSalt, 0));
  std::vector<double> arrival_s(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    arrival_s[i] = records[i].timestamp_ms / 1000.0 / options.trace_speed;
    if (options.jitter_s > 0) arrival_s[i] += jitter.Uniform() * options.jitter_s;
  }
  std::vector<size_t> order(records.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return arrival_s[a] < arrival_s[b]; });
  if (options.num_requests > 0 && order.size() > static_cast<size_t>(options.num_requests)) {
    order.resize(static_cast<size_t>(options.num_requests));
  }
  records_.reserve(order.size());
  arrivals_.reserve(order.size());
  for (size_t i : order) {
    records_.push_back(std::move(records[i]));
    arrivals_.push_back(FromSeconds(arrival_s[i]));
  }
  // Count the uses of every full block; keep the ones used more than once.
  absl::flat_hash_map<int64_t, int64_t> uses;
  for (const TraceRecord& record : records_) {
    const size_t full = static_cast<size_t>(record.input_length / kMooncakeBlockTokens);
    for (size_t b = 0; b < full; ++b) ++uses[record.hash_ids[b]];
  }
  for (const auto& [id, count] : uses) {
    if (count > 1) cache_[id].remaining_uses = count;
  }
}

void TraceWorkload::AppendFullBlock(int64_t hash_id, std::string* out) {
  const auto it = cache_.find(hash_id);
  if (it == cache_.end()) {
    AppendTraceBlock(seed_, hash_id, kMooncakeBlockTokens, out);
    return;
  }
  CachedBlock& block = it->second;
  if (block.text.empty()) {
    AppendTraceBlock(seed_, hash_id, kMooncakeBlockTokens, &block.text);
    cached_bytes_ += block.text.size();
    peak_cached_bytes_ = std::max(peak_cached_bytes_, cached_bytes_);
  }
  out->append(block.text);
  if (--block.remaining_uses == 0) {
    cached_bytes_ -= block.text.size();
    cache_.erase(it);
  }
}

std::optional<WorkloadRequest> TraceWorkload::Next() {
  if (next_ >= records_.size()) return std::nullopt;
  const TraceRecord& record = records_[next_];
  WorkloadRequest request;
  request.id = next_;
  request.arrival = arrivals_[next_];
  request.model = options_.model;
  request.tenant =
      TenantName(Mix64(static_cast<uint64_t>(record.hash_ids.front())), options_.num_tenants);
  request.endpoint = request::Endpoint::kCompletions;
  request.max_tokens = std::max<int64_t>(record.output_length, 1);
  request.prompt.reserve(static_cast<size_t>(record.input_length) * 6 + 16);  // text.h bound
  const size_t full = static_cast<size_t>(record.input_length / kMooncakeBlockTokens);
  for (size_t b = 0; b < full; ++b) AppendFullBlock(record.hash_ids[b], &request.prompt);
  if (const int64_t partial = record.input_length % kMooncakeBlockTokens; partial > 0) {
    AppendTraceBlock(seed_, record.hash_ids.back(), partial, &request.prompt);
  }
  ++next_;
  return request;
}

absl::StatusOr<std::unique_ptr<Workload>> MakeTraceWorkload(const WorkloadOptions& options,
                                                            const std::string& path,
                                                            uint64_t seed) {
  absl::StatusOr<std::string> text = ReadFileText(path, "trace file");
  if (!text.ok()) return text.status();
  const bool blank = text->find_first_not_of(" \t\r\n") == std::string::npos;
  if (!blank && !LooksLikeMooncakeTrace(*text)) {  // an OpenAI request log (request_log.h)
    absl::StatusOr<std::vector<LoggedRequest>> log = ParseRequestLog(*text, path);
    if (!log.ok()) return log.status();
    double earliest = log->front().timestamp_s;
    for (const LoggedRequest& r : *log) earliest = std::min(earliest, r.timestamp_s);
    for (const LoggedRequest& r : *log) {
      const double arrival_s = (r.timestamp_s - earliest) / options.trace_speed + options.jitter_s;
      if (!(arrival_s <= kMaxArrivalSeconds)) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ":", r.line, ": timestamp ", r.timestamp_s, " s replayed at speed ",
            options.trace_speed, " arrives ", arrival_s, " s into the run, beyond the ",
            kMaxArrivalSeconds, " s (about 3 years) a run may span"));
      }
    }
    return MakeRequestLogWorkload(options, *std::move(log), seed);
  }
  absl::StatusOr<std::vector<TraceRecord>> records =
      ParsePadded(simdjson::padded_string(text->data(), text->size()), path);
  if (!records.ok()) return records.status();
  if (records->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the trace has no requests"));
  }
  // Timestamps are bounded by the reader; a slow replay can still push them out of range.
  for (const TraceRecord& record : *records) {
    const double arrival_s = record.timestamp_ms / 1000.0 / options.trace_speed + options.jitter_s;
    if (!(arrival_s <= kMaxArrivalSeconds)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", record.line, ": timestamp ", record.timestamp_ms, " ms replayed at speed ",
          options.trace_speed, " arrives ", arrival_s, " s into the run, beyond the ",
          kMaxArrivalSeconds, " s (about 3 years) a run may span"));
    }
  }
  return std::make_unique<TraceWorkload>(options, *std::move(records), seed);
}

}  // namespace warmroute::workload
