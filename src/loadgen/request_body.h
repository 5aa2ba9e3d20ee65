// The OpenAI request a workload request becomes on the wire, in the API the run speaks (`--api`):
// each request's own endpoint (BodyOptions::api unset), or every request as one API.
//
//   chat        POST /v1/chat/completions {"model", "messages", "max_tokens", "stream",
//                                          "stream_options": {"include_usage": true}}
//   completions POST /v1/completions      {"model", "prompt", ...the same as chat}
//   responses   POST /v1/responses        {"model", "instructions", "input", "max_output_tokens",
//                                          "stream", "store": false}
//
// A request of the other shape is carried over so that the engine renders the same prompt:
//   chat from a completions request        its prompt as one {"role": "user"} message;
//   completions from a chat request        the messages rendered by the chat template
//                                          (core/request/chat_template.h), generation prompt
//                                          included;
//   responses from a chat request          a leading system message with non-empty content
//                                          becomes `instructions`, every other message an input
//                                          item {"role", "content"} in order (roles as they are:
//                                          the agent workload's tool results stay "tool");
//   responses from a completions request   its prompt as one {"role": "user"} input item.
// Multi-turn and agent workloads send a conversation's whole history with every turn, as chat
// does, so a Responses run is compared like for like with a chat run: `store` is always false and
// no request names a `previous_response_id` (no request relies on the gateway's pinning to the
// replica that stored a response).
//
// "model" is left out when empty (the server's default model); stream_options only when
// streaming chat or completions, so that every streamed answer ends with a usage chunk (cached
// tokens included when the engine reports them; a Responses stream reports usage in its
// response.completed event unasked). `ignore_eos` (vLLM's extension, also read by its Responses
// API) makes the engine generate exactly max_tokens.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/request/inference_request.h"
#include "core/workload/workload.h"

namespace warmroute::loadgen {

struct BodyOptions {
  bool stream = true;
  bool ignore_eos = false;
  // The API every request is sent as: kChatCompletions, kCompletions or kResponses; unset: each
  // request's own endpoint.
  std::optional<request::Endpoint> api;
};

// The value of the flag `flag` (e.g. "--api") naming the API: "chat", "completions" or
// "responses". InvalidArgument naming the flag and the accepted values for anything else.
absl::StatusOr<request::Endpoint> ParseApiFlag(std::string_view flag, std::string_view value);

// "chat", "completions", "responses" (ParseApiFlag's names); "messages" for kMessages.
std::string_view ApiName(request::Endpoint api);

// The endpoint `request` is sent to: options.api, else the request's own.
request::Endpoint SentAs(const workload::WorkloadRequest& request, const BodyOptions& options);

// The request target of an endpoint: "/v1/chat/completions", "/v1/completions",
// "/v1/responses". REQUIRES: endpoint is not kMessages.
std::string_view RequestTarget(request::Endpoint endpoint);

// The JSON body (see above) for SentAs(request, options). REQUIRES: that is not kMessages.
std::string BuildRequestBody(const workload::WorkloadRequest& request, const BodyOptions& options);

}  // namespace warmroute::loadgen
