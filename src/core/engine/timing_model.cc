// The built-in GPU timing profiles.
//
//   step = a + b * prefill_tokens + c * decode_seqs + d * context_tokens
//   jittered: step * max(0.5, 1 + jitter_stddev_frac * N(0,1))
//
// How each coefficient is derived. Published figures are cited; "est." marks an engineering
// estimate (an efficiency or an overhead) that no single source gives; the rest is arithmetic.
//
// Model geometry (Llama 3.1 model card and config.json, meta-llama/Llama-3.1-{8B,70B}):
//   8B : 8.03e9 parameters, 32 layers, 8 KV heads (GQA) x 128 head dim.
//        KV bytes per token = 32 layers x 8 heads x 128 dim x 2 (K and V) x 2 bytes (bf16)
//                           = 131,072 B = 128 KiB.   Weights in bf16: 16.06 GB = 14.96 GiB.
//   70B: 70.6e9 parameters, 80 layers, 8 KV heads x 128 head dim.
//        KV bytes per token = 80 x 8 x 128 x 2 x 2 = 327,680 B = 320 KiB.
//        Weights in bf16: 141.2 GB = 131.5 GiB.
//
// GPUs (NVIDIA datasheets): H100 SXM: 80 GB HBM3 (nvidia-smi: 81,559 MiB = 79.6 GiB),
//   3.35 TB/s, 989 TFLOP/s dense bf16. H200: 141 GB HBM3e, taken conservatively as
//   141e9 B = 131.3 GiB, 4.8 TB/s, the same GH100 compute as H100.
//
// a (per-step overhead): a decode step reads every weight once, so a >= weights per GPU / HBM
//   bandwidth, plus kernel launches, sampling and the scheduler (vLLM V1 with CUDA graphs).
//   8B/H100: 16.06 GB / 3.35 TB/s = 4.8 ms, + ~1.2 ms launches and sampling (est.) -> 6 ms.
//   70B/TP4/H100: 35.3 GB per GPU / 3.35 TB/s = 10.5 ms, + all-reduces (est.) -> 15 ms;
//   Preble (Srivatsa et al., 2024) fits 18.7 ms for 70B on H100 in its own setup.
//   70B/TP8/H200: 17.65 GB per GPU / 4.8 TB/s = 3.7 ms, + launches and 8-way all-reduces
//   (2 per layer = 160 per step, est. ~20 µs each) -> 9 ms.
// b (per prefill token): prefill is compute-bound at 2 x parameters FLOPs per token.
//   8B: 16.1 GFLOP / (989 TFLOP/s x ~46% MFU, est.) = 35 µs, i.e. ~28.5k prefill tokens/s per
//   H100 (the order of the single-GPU prefill throughput in vLLM's, Splitwise's and
//   DistServe's measurements).
//   70B/TP4: 141 GFLOP / (4 x 989 TFLOP/s x ~45%, est.) = 79 µs; Preble fits 0.0799 ms/token
//   -> 80 µs.
//   70B/TP8/H200: 141 GFLOP / (8 x 989 TFLOP/s x ~40%, est.: TP8 scales worse) = 45 µs.
// c (per decoding sequence): the batch-dependent part of a decode step beyond the weight read
//   (which a already covers): logits (LM head) and sampling of one more row, per-sequence
//   scheduler and detokenizer bookkeeping, and GEMM compute that grows with the batch once it
//   nears the roofline ridge (989 TFLOP/s / 3.35 TB/s = ~295 FLOP/byte, i.e. a batch of ~300).
//   Tens of µs (est.): 8B: 30 µs; 70B: 40 µs (TP adds per-token all-reduce traffic of
//   8192 x 2 B x 160 per step). With these, 8B batch-256 decode at 1k-token contexts takes
//   6 + 7.7 + 10.0 = ~24 ms per step.
// d (per context token attended): decode attention is memory-bound — it reads every cached
//   token's K and V once per step: kv_bytes_per_token / HBM bandwidth of the GPU group (tensor
//   parallelism shards KV heads, so the GPUs read their shards in parallel).
//   8B/H100:      131,072 B / 3.35 TB/s          = 39 ns
//   70B/TP4/H100: 327,680 B / (4 x 3.35 TB/s)    = 24 ns
//   70B/TP8/H200: 327,680 B / (8 x 4.8 TB/s)     = 8.5 ns
// Capacity (vLLM's profiling rule): (GPU memory x gpu_memory_utilization 0.9 - weights -
//   activation peak, CUDA graphs and NCCL buffers (the last three est.)) / KV bytes per token.
//   8B/H100:      (0.9 x 79.6 - 14.96 - ~3.0) GiB       = 53.7 GiB / 128 KiB = ~440k tokens.
//   70B/TP4/H100: (0.9 x 4 x 79.6 - 131.5 - 4 x ~3.6) GiB = 140.5 GiB / 320 KiB = ~460k tokens.
//   70B/TP8/H200: (0.9 x 8 x 131.3 - 131.5 - 8 x ~3.6) GiB = 785 GiB / 320 KiB = ~2.57M tokens.
// Jitter (est.): 3% relative standard deviation on GPU profiles, so that replicas with the same
//   load do not run in lockstep; 0 on "tiny", whose purpose is exact tests.
// "tiny" is not a GPU: round numbers (a = 1 ms, b = 10 µs, c = 0.1 ms, d = 0, 64Ki tokens) for
//   fast tests and demos.

#include "core/engine/timing_model.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace warmroute::engine {
namespace {

constexpr int64_t kKiB = 1024;

constexpr std::array<TimingProfile, 4> kProfiles = {{
    {
        .name = "tiny",
        .model = "tiny",
        .step_overhead_s = 1e-3,
        .per_prefill_token_s = 10e-6,
        .per_decode_seq_s = 0.1e-3,
        .per_context_token_s = 0,
        .kv_bytes_per_token = 128 * kKiB,
        .default_capacity_tokens = 65536,
        .max_model_len = 32768,
        .jitter_stddev_frac = 0,
    },
    {
        .name = "llama-3.1-8b-h100",
        .model = "meta-llama/Llama-3.1-8B-Instruct",
        .step_overhead_s = 6e-3,
        .per_prefill_token_s = 35e-6,
        .per_decode_seq_s = 30e-6,
        .per_context_token_s = 131072.0 / 3.35e12,
        .kv_bytes_per_token = 128 * kKiB,
        .default_capacity_tokens = 440000,
        .max_model_len = 131072,
        .jitter_stddev_frac = 0.03,
    },
    {
        .name = "llama-3.1-70b-tp4-h100",
        .model = "meta-llama/Llama-3.1-70B-Instruct",
        .step_overhead_s = 15e-3,
        .per_prefill_token_s = 80e-6,
        .per_decode_seq_s = 40e-6,
        .per_context_token_s = 327680.0 / (4 * 3.35e12),
        .kv_bytes_per_token = 320 * kKiB,
        .default_capacity_tokens = 460000,
        .max_model_len = 131072,
        .jitter_stddev_frac = 0.03,
    },
    {
        .name = "llama-3.1-70b-tp8-h200",
        .model = "meta-llama/Llama-3.1-70B-Instruct",
        .step_overhead_s = 9e-3,
        .per_prefill_token_s = 45e-6,
        .per_decode_seq_s = 40e-6,
        .per_context_token_s = 327680.0 / (8 * 4.8e12),
        .kv_bytes_per_token = 320 * kKiB,
        .default_capacity_tokens = 2570000,
        .max_model_len = 131072,
        .jitter_stddev_frac = 0.03,
    },
}};

}  // namespace

std::span<const TimingProfile> TimingProfiles() { return kProfiles; }

const TimingProfile* FindTimingProfile(std::string_view name) {
  for (const TimingProfile& profile : kProfiles) {
    if (profile.name == name) return &profile;
  }
  return nullptr;
}

Duration StepDuration(const TimingProfile& profile, const StepShape& shape, Rng* rng) {
  double seconds = profile.step_overhead_s +
                   profile.per_prefill_token_s * static_cast<double>(shape.prefill_tokens) +
                   profile.per_decode_seq_s * static_cast<double>(shape.decode_seqs) +
                   profile.per_context_token_s * static_cast<double>(shape.context_tokens);
  if (rng != nullptr && profile.jitter_stddev_frac > 0) {
    seconds *= std::max(0.5, 1.0 + profile.jitter_stddev_frac * rng->Normal());
  }
  return Duration(std::llround(seconds * 1e9));
}

}  // namespace warmroute::engine
