// Mooncake-format request traces (kvcache-ai/Mooncake, FAST'25 release; copies with provenance in
// workloads/traces/): a reader, the mapping of block hash ids to text, and the `trace:FILE`
// workload that replays a trace with its prefix-sharing structure kept exactly.
//
// Format: one JSON object per line,
//   {"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids": [int, ...]}
// Each hash id stands for one 512-token block and identifies that block and every block before
// it. len(hash_ids) == ceil(input_length / 512); the last block may be partial: input_length -
// 512 * (len - 1) tokens. Unknown fields are ignored; blank lines are skipped.
//
// Usage:
//   absl::StatusOr<std::vector<TraceRecord>> records = ReadMooncakeTrace("trace.jsonl");
//   absl::StatusOr<std::unique_ptr<Workload>> w =
//       MakeTraceWorkload(options, "trace.jsonl", /*seed=*/1);
//
// Thread-safety: the functions are pure; a TraceWorkload has one owner.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/workload/workload.h"

namespace warmroute::workload {

inline constexpr int64_t kMooncakeBlockTokens = 512;

// Bounds on one trace line. A replayed prompt is built in memory (about 4.4 bytes per token) and
// the simulator's engine model and gateway accounting add token counts in int64, so an absurd
// length must be refused at the line that holds it rather than exhaust memory or overflow:
//   - input_length <= 10,000,000 tokens: the longest context window any model advertises today
//     (Llama 4 Scout, 10M); such a prompt is about 45 MB of text;
//   - output_length <= 1,000,000 tokens: about 8x the longest output current models allow
//     (128k), and the simulator decodes it one token per step;
//   - timestamp <= kMaxArrivalSeconds (workload.h) in milliseconds, about 3 years: beyond that
//     the arrival cannot be held as a Duration (int64 nanoseconds) with room to spare.
inline constexpr int64_t kMaxTraceInputTokens = 10'000'000;
inline constexpr int64_t kMaxTraceOutputTokens = 1'000'000;
inline constexpr double kMaxTraceTimestampMs = kMaxArrivalSeconds * 1000;

struct TraceRecord {
  double timestamp_ms = 0;
  int64_t input_length = 0;       // tokens, >= 1
  int64_t output_length = 0;      // tokens, >= 0
  std::vector<int64_t> hash_ids;  // each >= 0; size() == ceil(input_length / 512)
  int64_t line = 0;               // 1-based line in the file
};

// Parses a whole trace. Errors are InvalidArgument "NAME:LINE: problem" (LINE 1-based): invalid
// JSON, not an object, a missing field, a wrong type (non-integer lengths or ids), a negative
// number, input_length < 1, a length or timestamp beyond the bounds above (the message gives the
// value and the bound), or a hash_ids length other than ceil(input_length / 512).
// Timestamps need not be monotonic: records keep the file's order.
absl::StatusOr<std::vector<TraceRecord>> ParseMooncakeTrace(std::string_view text,
                                                            std::string_view name);

// Reads and parses the file at `path` to its end (so /proc files and pipes work too). A file that
// cannot be read is NotFound (no such file) or InvalidArgument (a directory, no permission, ...)
// naming the path and the reason.
absl::StatusOr<std::vector<TraceRecord>> ReadMooncakeTrace(const std::string& path);

// Appends the first `tokens` tokens (1..512) of block `hash_id`'s text for `seed` to `out`:
// " " + IdWord(hash_id) (text.h; one token for ids below 12,356,630) then pseudo-English prose.
// The text is a function of (seed, hash_id) only; fewer tokens give a prefix of the full block;
// distinct ids differ within their first word; and concatenated blocks tokenize to the
// concatenation of their tokens, so a prompt of n blocks has exactly input_length tokens under
// the BuiltinTokenizer (ids of 12,356,630 and more take a few tokens more).
void AppendTraceBlock(uint64_t seed, int64_t hash_id, int64_t tokens, std::string* out);

// Replays `records`:
//   - arrival = timestamp_ms / 1000 / options.trace_speed + U(0, options.jitter_s) seconds
//     (jitter drawn per record in file order), then records are sorted by arrival (stable);
//     the Mooncake conversation trace's arrivals come in 3-second ticks of about 10 requests,
//     which jitter spreads out;
//   - the first options.num_requests records by arrival (0 = all);
//   - a completions request: prompt = the blocks' texts concatenated (AppendTraceBlock), the
//     last one cut to its partial length; max_tokens = max(1, output_length). Completions, not
//     chat, so the prompt text is exactly the trace's tokens with no template in between;
//   - tenant "t<Mix64(first hash id) mod num_tenants>": requests sharing a first block share a
//     tenant.
// Two requests share a text prefix exactly as long as they share leading hash ids.
// Memory: the text of a full block used by more than one request is cached from its first use
// to its last and then dropped; other blocks are written directly into the prompt.
class TraceWorkload final : public Workload {
 public:
  // REQUIRES: options valid (trace_speed > 0, jitter_s >= 0, num_tenants >= 1).
  TraceWorkload(const WorkloadOptions& options, std::vector<TraceRecord> records, uint64_t seed);

  std::optional<WorkloadRequest> Next() override;
  void OnResponse(uint64_t, std::string_view, Duration) override {}
  bool Done() const override { return next_ >= records_.size(); }

  size_t size() const { return records_.size(); }
  // Bytes of block text held in the cache now, and at most so far.
  size_t cached_bytes() const { return cached_bytes_; }
  size_t peak_cached_bytes() const { return peak_cached_bytes_; }

 private:
  struct CachedBlock {
    int64_t remaining_uses = 0;
    std::string text;  // empty until first use
  };

  void AppendFullBlock(int64_t hash_id, std::string* out);

  const WorkloadOptions options_;
  const uint64_t seed_;
  std::vector<TraceRecord> records_;  // sorted by arrival
  std::vector<Duration> arrivals_;
  size_t next_ = 0;
  absl::flat_hash_map<int64_t, CachedBlock> cache_;  // full blocks used more than once
  size_t cached_bytes_ = 0;
  size_t peak_cached_bytes_ = 0;
};

// Reads the trace at `path` and builds its workload: a TraceWorkload, or a request log's
// (request_log.h) when the file's first record is not a Mooncake one. InvalidArgument
// "PATH:LINE: ..." also when a record's arrival (timestamp / options.trace_speed + jitter) lies
// beyond kMaxArrivalSeconds.
absl::StatusOr<std::unique_ptr<Workload>> MakeTraceWorkload(const WorkloadOptions& options,
                                                            const std::string& path, uint64_t seed);

}  // namespace warmroute::workload
