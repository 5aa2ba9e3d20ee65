#include "sim/capacity.h"

#include <algorithm>
#include <deque>
#include <map>
#include <utility>

#include "common/status.h"
#include "core/engine/engine_core.h"
#include "core/engine/token_generator.h"
#include "core/request/tokenizer.h"
#include "sim/prepared_request.h"

namespace warmroute::sim {
namespace {

// The first `count` requests of the stream, answered in arrival order as the engine would.
absl::StatusOr<std::vector<engine::EngineRequest>> SampleRequests(
    const SimOptions& options, const RequestPreparer& preparer,
    const engine::TokenGenerator& generator, int64_t count) {
  WR_ASSIGN_OR_RETURN(std::unique_ptr<workload::Workload> workload,
                      workload::MakeWorkload(options.workload, options.seed));
  std::vector<engine::EngineRequest> sample;
  std::deque<workload::WorkloadRequest> outstanding;
  while (static_cast<int64_t>(sample.size()) < count) {
    if (auto next = workload->Next()) {
      PreparedRequest p = preparer.Prepare(*next);
      sample.push_back(std::move(p.engine));
      outstanding.push_back(*std::move(next));
      continue;
    }
    if (outstanding.empty()) break;
    const workload::WorkloadRequest& done = outstanding.front();
    const uint64_t seed = preparer.GenerationSeed(done.id);
    workload->OnResponse(done.id, AnswerText(generator, seed, done.max_tokens),
                         done.arrival + std::chrono::seconds(1));
    outstanding.pop_front();
  }
  return sample;
}

// Completions per second of one engine given `total` requests (copies of `sample`) at once.
double SaturatedThroughput(const ReplicaSpec& spec,
                           const std::vector<engine::EngineRequest>& sample, int64_t total,
                           const engine::TokenGenerator& generator, uint64_t seed) {
  engine::EngineConfig config = engine::DefaultEngineConfig(*spec.profile, spec.kv_capacity_tokens);
  config.enable_prefix_caching = false;
  engine::EngineCore core(config, *spec.profile, generator, seed);
  int64_t accepted = 0;
  for (int64_t i = 0; i < total; ++i) {
    engine::EngineRequest r = sample[static_cast<size_t>(i) % sample.size()];
    r.id = static_cast<uint64_t>(i);
    if (core.Add(std::move(r)).ok()) ++accepted;  // one the engine rejects adds no capacity
  }
  Duration elapsed{0};
  while (core.HasWork()) elapsed += core.Step().duration;
  return accepted >= 8 && elapsed > Duration(0) ? static_cast<double>(accepted) / ToSeconds(elapsed)
                                                : 0;
}

}  // namespace

absl::StatusOr<CapacityEstimate> CalibrateCapacity(const SimOptions& options,
                                                   int64_t sample_requests,
                                                   int64_t saturation_requests) {
  if (options.replicas.empty()) return InvalidParam("replicas", "the fleet has no replicas");
  request::BuiltinTokenizer tokenizer;
  engine::TokenGenerator generator(tokenizer);
  RequestPreparer preparer(tokenizer, options.prefix_key,
                           std::string(options.replicas[0].profile->model), options.seed);
  WR_ASSIGN_OR_RETURN(std::vector<engine::EngineRequest> sample,
                      SampleRequests(options, preparer, generator, sample_requests));
  if (sample.empty()) {
    return absl::FailedPreconditionError("capacity calibration failed: the workload is empty");
  }
  CapacityEstimate estimate;
  estimate.sample_requests = static_cast<int64_t>(sample.size());
  estimate.saturation_requests = std::max(saturation_requests, estimate.sample_requests);
  for (const engine::EngineRequest& r : sample) {
    estimate.mean_prompt_tokens += static_cast<double>(r.prompt_tokens.size());
    estimate.mean_output_tokens += static_cast<double>(r.max_tokens);
  }
  estimate.mean_prompt_tokens /= static_cast<double>(sample.size());
  estimate.mean_output_tokens /= static_cast<double>(sample.size());
  std::map<std::pair<const engine::TimingProfile*, int64_t>, double> by_spec;
  for (const ReplicaSpec& spec : options.replicas) {
    auto [it, inserted] = by_spec.try_emplace({spec.profile, spec.kv_capacity_tokens}, 0.0);
    if (inserted) {
      it->second =
          SaturatedThroughput(spec, sample, estimate.saturation_requests, generator, options.seed);
    }
    if (it->second <= 0) {
      return absl::FailedPreconditionError(
          "capacity calibration failed: fewer than 8 requests fit the engine");
    }
    estimate.replica_requests_per_s.push_back(it->second);
    estimate.fleet_requests_per_s += it->second;
  }
  return estimate;
}

}  // namespace warmroute::sim
