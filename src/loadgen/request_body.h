// The OpenAI request a workload request becomes on the wire.
//
//   chat        POST /v1/chat/completions {"model", "messages", "max_tokens", "stream",
//                                          "stream_options": {"include_usage": true}}
//   completions POST /v1/completions      {"model", "prompt", ...the same}
// "model" is left out when empty (the server's default model); stream_options only when
// streaming, so that every streamed answer ends with a usage chunk (cached tokens included when
// the engine reports them). `ignore_eos` (vLLM's extension) makes the engine generate exactly
// max_tokens.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "core/workload/workload.h"

namespace warmroute::loadgen {

struct BodyOptions {
  bool stream = true;
  bool ignore_eos = false;
};

// The request target for the workload request's endpoint.
std::string_view RequestTarget(const workload::WorkloadRequest& request);

// The JSON body (see above).
std::string BuildRequestBody(const workload::WorkloadRequest& request, const BodyOptions& options);

}  // namespace warmroute::loadgen
