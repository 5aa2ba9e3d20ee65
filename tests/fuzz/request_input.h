// The input of the fuzz targets that take a client's request body: the first byte chooses the
// API (its value % 4, core/request/inference_request.h Endpoint) and, in its higher bits,
// whatever else a target varies; the rest is the body, parsed as the gateway parses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/request/inference_request.h"
#include "fuzz_target.h"

namespace warmroute::fuzz {

struct RequestInput {
  uint8_t choice = 0;
  request::Endpoint endpoint = request::Endpoint::kChatCompletions;
  std::string body;
  absl::StatusOr<request::InferenceRequest> parsed;
};

inline RequestInput ReadRequestInput(const uint8_t* data, size_t size) {
  RequestInput input;
  input.choice = TakeByte(data, size);
  input.endpoint = static_cast<request::Endpoint>(input.choice % 4);
  input.body.assign(AsText(data, size));
  input.parsed = request::ParseInferenceRequest(input.endpoint, input.body);
  return input;
}

}  // namespace warmroute::fuzz
