// vLLM's OpenAI-compatible HTTP API over one emulated Replica, or over several data-parallel
// ranks (data_parallel_ranks.h: a request goes to one rank, /reset_prefix_cache and /metrics
// cover all):
//
//   POST   /v1/chat/completions       chat (JSON, or SSE when "stream": true)
//   POST   /v1/completions            text completions; prompt as text or as token ids
//   POST   /v1/responses              the Responses API; GET and DELETE /v1/responses/{id},
//                                     POST /v1/responses/{id}/cancel (responses_api.h)
//   POST   /v1/embeddings             deterministic embeddings of text or token ids
//                                     (embeddings.h)
//   POST   /tokenize, /detokenize     the process's tokenizer and chat template (tokenize.h)
//   GET    /v1/models                 the served model, vLLM's shape
//   GET    /health                    200, empty body
//   GET    /metrics                   Prometheus text (vLLM metric names)
//   GET    /version                   {"version": ...}
//   POST   /reset_prefix_cache        200, or 400 while requests hold KV blocks
//
// With several ranks, generation, embeddings and Responses API requests honour vLLM's
// `X-data-parallel-rank` header (an integer out of range is a 400 naming data_parallel_rank).
//
// A generation request is parsed (core/request), its model checked (empty means the served
// model; another name is 404 "The model `x` does not exist."), its prompt tokenized by the
// process's ModelText (model_text.h: chat template and tokenizer, with vLLM's defaults of
// add_special_tokens; or the given token ids), and submitted to the engine with
// root_hash = RootBlockHash(model, "", cache_salt) and seed = the request's seed or a hash of
// the prompt tokens (as with greedy decoding, the same prompt gets the same answer); max_tokens
// defaults to 16 and exactly that many tokens are generated (finish_reason "length"). Errors get
// net/openai_error.h's status and body. A client that goes away mid-request cancels the handler,
// which aborts the request in the engine.
//
// Embeddings take the time of a prefill: each input is an engine request of max_tokens 1 (it
// queues, is batched and prefilled like any prompt, and its blocks are cached); its one token is
// discarded. So embedding requests show in the vLLM metrics as requests with one generated
// token.
//
// Usage:
//   EngineApi api(replica, model_text, EngineApiOptions{});
//   auto server = net::HttpServer::Create(io, options,
//       [&api](net::HttpRequest& r, net::ResponseWriter& w) { return api.Handle(r, w);
//       });
//
// Thread-safety: used on the replica's io_context thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/rng.h"
#include "core/request/inference_request.h"
#include "emulator/data_parallel_ranks.h"
#include "emulator/embeddings.h"
#include "emulator/model_text.h"
#include "emulator/replica.h"
#include "emulator/response_store.h"
#include "emulator/responses_api.h"
#include "net/http1/response.h"
#include "net/http1/response_writer.h"

namespace warmroute::emulator {

struct EngineApiOptions {
  ResponseStoreLimits responses;  // the Responses API's store
  int embedding_dims = kDefaultEmbeddingDims;
};

class EngineApi {
 public:
  // `replica` and `model_text` (the process's, shared by its replicas; its generator() is the
  // replica's) must outlive the API.
  EngineApi(Replica& replica, const ModelText& model_text, const EngineApiOptions& options = {});
  // The API over data-parallel ranks: rank r is ranks[r]. REQUIRES: !ranks.empty(); the ranks
  // (on one io_context) and `model_text` outlive the API.
  EngineApi(std::vector<Replica*> ranks, const ModelText& model_text,
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
    bool bare_start = false;       // engine.bare_start
    bool stream = false;
    bool include_usage = false;
    std::string model;  // as it appears in the response
  };

  // The whole answer of an endpoint that needs no engine (health, metrics, tokenize, ...), or
  // the 404 of a path not served.
  net::Response Answer(const net::HttpRequest& request);
  static net::Task<void> Send(net::ResponseWriter& writer, net::Response response);
  // The request for `replica`, the rank that will run it.
  absl::StatusOr<Prepared> Prepare(request::Endpoint endpoint, const std::string& body,
                                   Replica& replica);
  net::Task<void> Generate(request::Endpoint endpoint, const net::HttpRequest& request,
                           net::ResponseWriter& writer);
  net::Task<void> Stream(RequestHandle handle, Prepared prepared, bool chat,
                         net::ResponseWriter& writer);
  net::Task<void> Collect(RequestHandle handle, Prepared prepared, bool chat,
                          net::ResponseWriter& writer);
  // An embeddings request whose inputs are in the engine.
  struct EmbeddingsJob {
    std::string model;
    bool base64 = false;
    std::vector<std::vector<int32_t>> inputs;  // each input's tokens
    std::vector<RequestHandle> handles;        // each input's engine request
  };

  absl::StatusOr<EmbeddingsJob> StartEmbeddings(const net::HttpRequest& request);
  std::string EmbeddingsBody(const EmbeddingsJob& job);
  net::Task<void> Embeddings(const net::HttpRequest& request, net::ResponseWriter& writer);
  // POST /tokenize and /detokenize: the response, or the error response.
  net::Response Tokenize(const std::string& body);
  net::Response Detokenize(const std::string& body);
  absl::StatusOr<std::string> TokenizeJson(const std::string& body);
  absl::StatusOr<std::string> DetokenizeJson(const std::string& body);

  DataParallelRanks ranks_;
  Replica& replica_;  // rank 0: the model, config and generator of every rank
  const ModelText& model_text_;
  const int embedding_dims_;
  Rng id_rng_;  // response ids
  ResponsesApi responses_;
};

}  // namespace warmroute::emulator
