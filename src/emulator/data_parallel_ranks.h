// The engine cores behind one emulated HTTP API: one Replica per data-parallel rank, as
// `vllm serve --data-parallel-size N` runs N engine cores (each with its own KV cache,
// scheduler, metrics and KV-event publisher) behind one API server.
//
// What the API does with them, as vLLM does:
//   - a generation request goes to one rank: the `X-data-parallel-rank` header's, else the
//     least loaded (dp_rank_picker.h has the rule and its source);
//   - /reset_prefix_cache resets every rank (each publishes its AllBlocksCleared);
//   - /metrics serves every rank's series, labelled engine="<index>", in one exposition.
// Model, engine config and token generator are the same on every rank; rank 0's are read.
//
// Usage (on the replicas' io_context thread):
//   DataParallelRanks ranks({&rank0, &rank1});
//   absl::StatusOr<Replica*> replica = ranks.Pick(http_request);
//   if (replica.ok()) (*replica)->Submit(...);
//
// Thread-safety: used on the replicas' io_context thread only (every rank runs on it).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "emulator/replica.h"
#include "net/http1/http_request.h"

namespace warmroute::emulator {

class DataParallelRanks {
 public:
  // Rank r is ranks[r]. REQUIRES: !ranks.empty(), none null, all serving the same model with the
  // same engine config; each outlives this object.
  explicit DataParallelRanks(std::vector<Replica*> ranks);

  size_t size() const { return ranks_.size(); }
  Replica& rank(size_t r) const { return *ranks_[r]; }
  // Rank 0: its options, config and generator are every rank's.
  Replica& front() const { return *ranks_.front(); }

  // The rank that serves `request`: its X-data-parallel-rank header when that is an integer
  // (InvalidArgument naming "data_parallel_rank" when out of range), else the least loaded.
  // With one rank, always rank 0 and the header unread (the emulator before ranks existed).
  absl::StatusOr<Replica*> Pick(const net::HttpRequest& request) const;

  // Resets every rank's prefix cache. Every rank is tried, as vLLM asks every engine core;
  // FailedPrecondition (the first failing rank's, naming it when there are several) when any
  // rank holds blocks for running requests; the others are reset.
  absl::Status ResetPrefixCache();

  // The Prometheus text of every rank's metrics (ReplicaMetrics::SerializeAll).
  std::string MetricsText();

 private:
  std::vector<Replica*> ranks_;
};

}  // namespace warmroute::emulator
