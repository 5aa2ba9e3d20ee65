// How many requests per second a fleet can serve on a given workload, so that `--load 0.7` can
// mean "arrivals at 70% of the fleet's capacity".
//
// Method: a short calibration run, not a formula. The first `sample_requests` requests of the
// workload (same seed, so the same content as the real run; closed-loop follow-ups answered as
// the engine would) are tokenized, and for each distinct replica spec one engine — with prefix
// caching OFF, i.e. assuming no cache hits — is given `saturation_requests` requests at once
// (the sample, repeated) and stepped until it drains. Its capacity is
//   saturation_requests / (virtual time to drain them all).
// A saturated engine runs the batches a loaded replica runs, so this includes what a closed-form
// per-request cost would have to guess: the per-step overhead shared by the batch, the token
// budget, max_num_seqs, and KV capacity limiting the batch. The pipeline's fill and drain make
// it a slight underestimate (a few % with the defaults: the drain is one request lifetime out of
// thousands of requests). The fleet's capacity is the sum over its replicas.
//
// Closed-loop workloads (multi-turn, agent) take rate_per_s as the session start rate:
// workload::RequestsPerArrival gives the requests each session brings, to convert a request
// rate.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/sim_options.h"

namespace warmroute::sim {

struct CapacityEstimate {
  double fleet_requests_per_s = 0;
  std::vector<double> replica_requests_per_s;  // per replica of options.replicas
  int64_t sample_requests = 0;                 // distinct requests sampled from the workload
  int64_t saturation_requests = 0;             // requests given to each calibration engine
  double mean_prompt_tokens = 0;               // engine tokens
  double mean_output_tokens = 0;
};

// Calibrates as above. InvalidArgument for a bad workload; FailedPrecondition when the sample
// is too small to measure (fewer than 8 requests the engine accepts).
absl::StatusOr<CapacityEstimate> CalibrateCapacity(const SimOptions& options,
                                                   int64_t sample_requests = 256,
                                                   int64_t saturation_requests = 2048);

}  // namespace warmroute::sim
