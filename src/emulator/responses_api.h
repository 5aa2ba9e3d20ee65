// The OpenAI Responses API of one emulated replica (its data-parallel ranks: a response runs on
// the rank DataParallelRanks::Pick gives), as vLLM serves it (serving_responses.py) with
// its response store enabled (VLLM_ENABLE_RESPONSES_API_STORE=1):
//
//   POST   /v1/responses              create: JSON, SSE when "stream": true, or at once
//                                     ("queued") when "background": true
//   GET    /v1/responses/{id}         the stored response
//   DELETE /v1/responses/{id}         {"id", "object": "response", "deleted": true}
//   POST   /v1/responses/{id}/cancel  cancel an unfinished background response
//
// A request is parsed by core/request (Endpoint::kResponses). Its conversation is its
// instructions, then — with previous_response_id — the stored conversation of that response
// without its system messages (instructions do not carry over) and that response's output text
// as an assistant message, then its input; the chat template renders it with the tools, so a
// follow-up that repeats the instructions and tools extends the earlier prompt and its answer
// and hits this replica's prefix cache. The process's ModelText (model_text.h) renders and
// encodes it as chat's prompt. The engine generates exactly max_output_tokens tokens
// (default 16), as for chat: a response whose request set max_output_tokens ends "incomplete"
// (incomplete_details.reason "max_output_tokens", as chat says finish_reason "length"); without
// it the default length stands for the model's own stop and the response is "completed".
//
// `id` is the request's request_id when given (vLLM's extension; the gateway routes follow-ups
// by it), else "resp_" + 32 hex digits; every streamed event's response carries it. With
// `store` (the default) the final response and its conversation go to the ResponseStore before
// the last event or the body is sent, so a follow-up sent as soon as the answer arrives finds
// it. A background response is stored "queued", becomes "in_progress" with its first token and
// "completed" / "incomplete" at its end; cancelling it stores it "cancelled" and aborts its
// engine request; a deleted one is cancelled too.
//
// Errors, in vLLM's words: an unknown, deleted or evicted id (previous_response_id, GET, DELETE,
// cancel) is 404 "Response with id '<id>' not found." naming response_id; cancelling a response
// that is not queued or in progress is 400 "Cannot cancel a synchronous response."; a prompt
// over max_model_len is 400 naming input. Background streaming is refused (400 naming stream).
//
// Usage:
//   ResponsesApi api(ranks, model_text, ResponseStoreLimits{});
//   co_await api.Handle(request, writer);   // any path under /v1/responses
//
// Thread-safety: used on the replica's io_context thread only.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/rng.h"
#include "core/request/inference_request.h"
#include "emulator/data_parallel_ranks.h"
#include "emulator/model_text.h"
#include "emulator/replica.h"
#include "emulator/response_store.h"
#include "emulator/responses_json.h"
#include "net/http1/response_writer.h"

namespace warmroute::emulator {

class ResponsesApi {
 public:
  // `ranks` and `model_text` must outlive the API.
  ResponsesApi(const DataParallelRanks& ranks, const ModelText& model_text,
               ResponseStoreLimits limits);
  ~ResponsesApi();
  ResponsesApi(const ResponsesApi&) = delete;
  ResponsesApi& operator=(const ResponsesApi&) = delete;

  // True for the paths Handle answers: /v1/responses and everything below it.
  static bool Serves(std::string_view path);

  // Answers one request on a path Serves(); another method than the table's is 404.
  net::Task<void> Handle(const net::HttpRequest& request, net::ResponseWriter& writer);

  const ResponseStore& store() const { return store_; }

 private:
  struct Generation;
  struct BackgroundJob;

  absl::StatusOr<Generation> Start(const net::HttpRequest& request);
  absl::StatusOr<std::vector<request::ChatMessage>> Conversation(
      const request::InferenceRequest& request) const;
  net::Task<void> Create(const net::HttpRequest& request, net::ResponseWriter& writer);
  net::Task<void> Collect(Generation generation, net::ResponseWriter& writer);
  net::Task<void> Stream(Generation generation, net::ResponseWriter& writer);
  net::Task<void> StartBackground(Generation generation, net::ResponseWriter& writer);
  net::Task<void> RunBackground(Generation generation, std::shared_ptr<BackgroundJob> job);
  net::Task<void> Retrieve(std::string_view id, net::ResponseWriter& writer);
  net::Task<void> Delete(std::string_view id, net::ResponseWriter& writer);
  net::Task<void> Cancel(std::string_view id, net::ResponseWriter& writer);

  // Stores `generation`'s response as it now is.
  void Store(const Generation& generation);
  // Stores `generation`'s response if the store still holds it (the same generation, not
  // deleted, evicted or cancelled); for background updates.
  void UpdateStored(const Generation& generation);
  // Cancels the background job of `id`, if one runs.
  void CancelJob(std::string_view id);

  const DataParallelRanks& ranks_;
  Replica& replica_;  // rank 0: the model, config and generator of every rank
  const ModelText& model_text_;
  ResponseStore store_;
  Rng id_rng_;
  absl::flat_hash_map<std::string, std::shared_ptr<BackgroundJob>> jobs_;  // by response id
};

}  // namespace warmroute::emulator
