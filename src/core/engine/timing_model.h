// The GPU timing model of one engine replica: how long one continuous-batching scheduler step
// takes, from the shape of the batch it runs.
//
//   step = a + b * prefill_tokens + c * decode_seqs + d * context_tokens   (then optional jitter)
//
//   a  fixed per-step cost (kernel launches, sampling, scheduling)
//   b  cost per prefill token computed in this step (compute-bound GEMMs)
//   c  cost per decoding sequence in this step
//   d  cost per token of KV context attended to by the running sequences (memory-bound reads)
//
// Each profile's coefficients, KV bytes per token and default KV capacity are in
// timing_model.cc, each with the published figure it comes from.
//
// Usage:
//   const TimingProfile* p = FindTimingProfile("llama-3.1-8b-h100");
//   Duration d = StepDuration(*p, {.prefill_tokens = 2048, .decode_seqs = 12,
//                                  .context_tokens = 40000}, &rng);
//
// Thread-safety: profiles are immutable; StepDuration is pure except for drawing from `rng`.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "common/clock.h"
#include "common/rng.h"

namespace warmroute::engine {

struct TimingProfile {
  std::string_view name;       // e.g. "llama-3.1-8b-h100"
  std::string_view model;      // default served model name
  double step_overhead_s;      // a
  double per_prefill_token_s;  // b
  double per_decode_seq_s;     // c
  double per_context_token_s;  // d
  int64_t kv_bytes_per_token;
  int64_t default_capacity_tokens;  // KV cache capacity on the profile's GPUs
  int64_t max_model_len;
  double jitter_stddev_frac;  // relative standard deviation of step jitter; 0 = none
};

struct StepShape {
  int64_t prefill_tokens = 0;  // prompt tokens computed this step (excluding cached ones)
  int64_t decode_seqs = 0;     // sequences that generate a token this step by decoding
  int64_t context_tokens = 0;  // sum of the KV context lengths of the sequences in the step
};

// All built-in profiles, in a stable order.
std::span<const TimingProfile> TimingProfiles();

// The profile called `name`, or nullptr.
const TimingProfile* FindTimingProfile(std::string_view name);

// The step's duration under `profile`. With rng == nullptr or no jitter in the profile, the
// result is exact; otherwise it is multiplied by max(0.5, 1 + jitter_stddev_frac * N(0,1)).
Duration StepDuration(const TimingProfile& profile, const StepShape& shape, Rng* rng);

}  // namespace warmroute::engine
