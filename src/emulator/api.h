// vLLM's OpenAI-compatible HTTP API over one emulated Replica:
//
//   POST   /v1/chat/completions       chat (JSON, or SSE when "stream": true)
//   POST   /v1/completions            text completions; prompt as text or as token ids
//   POST   /v1/responses              the Responses API; GET and DELETE /v1/responses/{id},
//                                     POST /v1/responses/{id}/cancel (responses_api.h)
//   GET    /v1/models                 the served model, vLLM's shape
//   GET    /health                    200, empty body
//   GET    /metrics                   Prometheus text (vLLM metric names)
//   GET    /version                   {"version": ...}
//   POST   /reset_prefix_cache        200, or 400 while requests hold KV blocks
//
// A generation request is parsed (core/request), its model checked (empty means the served
// model; another name is 404 "The model `x` does not exist."), its prompt tokenized (chat
// template + built-in tokenizer, or the given token ids), and submitted to the engine with
// root_hash = RootBlockHash(model, "", cache_salt) and seed = the request's seed or a hash of
// the prompt tokens (as with greedy decoding, the same prompt gets the same answer); max_tokens
// defaults to 16 and exactly that many tokens are generated (finish_reason "length"). Errors get
// net/openai_error.h's status and body. A client that goes away mid-request cancels the handler,
// which aborts the request in the engine.
//
// Usage:
//   EngineApi api(replica, tokenizer, EngineApiOptions{});
//   auto server = net::HttpServer::Create(io, options,
//       [&api](net::HttpRequest& r, net::ResponseWriter& w) { return api.Handle(r, w);
//       });
//
// Thread-safety: used on the replica's io_context thread only.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/rng.h"
#include "core/request/inference_request.h"
#include "core/request/tokenizer.h"
#include "emulator/replica.h"
#include "emulator/response_store.h"
#include "emulator/responses_api.h"
#include "net/http1/response.h"
#include "net/http1/response_writer.h"

namespace warmroute::emulator {

struct EngineApiOptions {
  ResponseStoreLimits responses;  // the Responses API's store
};

class EngineApi {
 public:
  // `replica` and `tokenizer` must outlive the API.
  EngineApi(Replica& replica, const request::Tokenizer& tokenizer,
            const EngineApiOptions& options = {});
  EngineApi(const EngineApi&) = delete;
  EngineApi& operator=(const EngineApi&) = delete;

  // Answers one HTTP request (the net::HttpHandler of the replica's server).
  net::Task<void> Handle(net::HttpRequest& request, net::ResponseWriter& writer);

 private:
  // A validated generation request, ready for the engine.
  struct Prepared {
    engine::EngineRequest engine;  // moved into the engine on submission
    uint64_t seed = 0;             // engine.seed
    int64_t max_tokens = 0;        // engine.max_tokens
    bool stream = false;
    bool include_usage = false;
    std::string model;  // as it appears in the response
  };

  // The whole answer of an endpoint that needs no engine (health, metrics, ...), or
  // the 404 of a path not served.
  net::Response Answer(const net::HttpRequest& request);
  static net::Task<void> Send(net::ResponseWriter& writer, net::Response response);
  absl::StatusOr<Prepared> Prepare(request::Endpoint endpoint, const std::string& body);
  net::Task<void> Generate(request::Endpoint endpoint, const net::HttpRequest& request,
                           net::ResponseWriter& writer);
  net::Task<void> Stream(RequestHandle handle, Prepared prepared, bool chat,
                         net::ResponseWriter& writer);
  net::Task<void> Collect(RequestHandle handle, Prepared prepared, bool chat,
                          net::ResponseWriter& writer);
  Replica& replica_;
  const request::Tokenizer& tokenizer_;
  Rng id_rng_;  // response ids
  ResponsesApi responses_;
};

}  // namespace warmroute::emulator
