// Every path the gateway serves on behalf of its engines, and how each is routed: the paths vLLM
// serves (OpenAI's, Anthropic's Messages API, and its own tokenizer and pooling endpoints).
//
//   method  path                              name         body     placement
//   POST    /v1/chat/completions              chat         prompt   policy (prefix-aware)
//   POST    /v1/completions                   completions  prompt   policy
//   POST    /v1/responses                     responses    prompt   policy; pinned to the backend
//                                                                   that stored
//                                                                   previous_response_id
//   GET     /v1/responses/{id}                responses    none     pinned to the backend that
//   DELETE  /v1/responses/{id}                                      stored {id}
//   POST    /v1/responses/{id}/cancel
//   GET     /v1/responses/{id}/input_items
//   POST    /v1/messages                      messages     prompt   policy
//   POST    /v1/embeddings                    embeddings   model    least outstanding work
//   POST    /v1/rerank, /rerank               rerank       model    least outstanding work
//   POST    /v1/score, /score                 score        model    least outstanding work
//   POST    /pooling                          pooling      model    least outstanding work
//   POST    /classify                         classify     model    least outstanding work
//   POST    /tokenize                         tokenize     model    least outstanding work
//   POST    /detokenize                       detokenize   model    least outstanding work
//   POST    /v1/audio/transcriptions          audio        stream   least outstanding work
//   POST    /v1/audio/translations
//
// "prompt": the body is parsed as a generation request (core/request) and keyed by the prompt
// the engine renders first; "model": only its optional "model" is read (which backends may take
// it); "none": nothing to read. Engines reuse no KV cache across the "model" routes' requests, so
// those go where the least work is outstanding (routing::Placement::kLeastLoad) rather than by
// the policy. "stream": a multipart/form-data upload passed to the engine as it arrives, never
// held whole, its `model` form field read from the body's beginning (admit.h); placed like the
// model routes. Whatever the placement, a request goes only to backends serving its model and in
// its tenant's pools.
//
// Usage:
//   RouteMatch m = MatchRoute(request.method, request.path);
//   if (m.route == nullptr) reply m.allow.empty() ? 404 : 405 with Allow: m.allow;
//
// Thread-safety: immutable tables and pure functions.
#pragma once

#include <string_view>

#include "core/request/inference_request.h"

namespace warmroute::gateway {

enum class RouteBody { kPrompt, kModel, kNone, kStream };

struct Route {
  std::string_view name;  // the `route` label of the gateway's metrics and access log
  RouteBody body = RouteBody::kNone;
  request::Endpoint endpoint = request::Endpoint::kChatCompletions;  // with RouteBody::kPrompt
  // /v1/responses/{id}...: the request is for the stored response {id}.
  bool response_in_path = false;
};

struct RouteMatch {
  const Route* route = nullptr;  // null: not a routed path, or not with this method
  std::string_view response_id;  // with route->response_in_path: {id}, a view into the path
  // When `route` is null but the path is routed with other methods: those methods, for the 405's
  // Allow header ("POST", "GET, DELETE").
  std::string_view allow;
};

// The route of `method` on `path` (without the query).
RouteMatch MatchRoute(std::string_view method, std::string_view path);

}  // namespace warmroute::gateway
