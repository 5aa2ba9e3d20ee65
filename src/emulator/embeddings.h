// POST /v1/embeddings in the OpenAI shape vLLM serves, without I/O: the request body, the
// emulator's deterministic vectors, and the response body.
//
// Request: {"model", "input", "encoding_format", "dimensions", "user"}; `input` is a string, an
// array of strings, an array of token ids or an array of token-id arrays (at most 2048 inputs,
// none empty); `encoding_format` is "float" (the default) or "base64"; `dimensions`, when given,
// must be the emulator's (vLLM refuses it for models without matryoshka dimensions).
//
// Response: {"id": "embd-…", "object": "list", "created", "model", "data": [{"index": i,
// "object": "embedding", "embedding": [floats] or the base64 of their little-endian float32
// bytes}], "usage": {"prompt_tokens": n, "total_tokens": n, "completion_tokens": 0,
// "prompt_tokens_details": null}}.
//
// The vector of a token sequence: the sum over its tokens of a pseudo-random vector per token id
// (each coordinate uniform in [-1, 1), seeded by the id), scaled to unit length (vLLM normalizes
// embeddings by default). The same tokens give the same vector on every replica, and texts that
// share many tokens point in similar directions.
//
// Usage:
//   absl::StatusOr<EmbeddingsRequest> req = ParseEmbeddingsRequest(body);
//   std::vector<float> v = EmbeddingOf(tokens, 256);
//   std::string json = EmbeddingsResponse(info, {v}, /*base64=*/false, /*prompt_tokens=*/7);
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::emulator {

inline constexpr int kDefaultEmbeddingDims = 256;
inline constexpr size_t kMaxEmbeddingInputs = 2048;  // OpenAI's limit per request

struct EmbeddingInput {
  bool is_tokens = false;
  std::string text;             // !is_tokens
  std::vector<int32_t> tokens;  // is_tokens: ids in [0, 2^31)
};

struct EmbeddingsRequest {
  std::string model;
  std::vector<EmbeddingInput> inputs;
  bool base64 = false;
  std::optional<int64_t> dimensions;
};

// Parses and validates the body; errors are InvalidArgument naming the parameter.
absl::StatusOr<EmbeddingsRequest> ParseEmbeddingsRequest(std::string_view body);

// The unit vector of `tokens` with `dims` coordinates (all zero for no tokens). REQUIRES: dims > 0.
std::vector<float> EmbeddingOf(std::span<const int32_t> tokens, int dims);

// The base64 of `vector`'s little-endian float32 bytes (OpenAI's encoding_format "base64").
std::string Base64Floats(std::span<const float> vector);

struct EmbeddingsInfo {
  std::string id;  // "embd-…"
  int64_t created = 0;
  std::string model;
};

std::string EmbeddingsResponse(const EmbeddingsInfo& info,
                               const std::vector<std::vector<float>>& vectors, bool base64,
                               int64_t prompt_tokens);

}  // namespace warmroute::emulator
