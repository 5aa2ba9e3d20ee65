#include "emulator/api.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "emulator/engine_input.h"
#include "emulator/openai_response.h"
#include "emulator/reply.h"
#include "emulator/tokenize.h"

namespace warmroute::emulator {
namespace {

using net::HttpRequest;
using net::ResponseWriter;
using request::Endpoint;

// The parameter a prompt error names on each endpoint.
std::string_view PromptParam(Endpoint endpoint) {
  return endpoint == Endpoint::kChatCompletions ? "messages" : "prompt";
}

// 404 for a path that is not served, or served with another method.
absl::Status NoRoute(const HttpRequest& request) {
  const std::string& path = request.path;
  const bool known = path == "/v1/chat/completions" || path == "/v1/completions" ||
                     path == "/v1/embeddings" || path == "/tokenize" || path == "/detokenize" ||
                     path == "/health" || path == "/metrics" || path == "/v1/models" ||
                     path == "/version" || path == "/reset_prefix_cache";
  if (known) {
    return absl::NotFoundError(
        absl::StrCat("Method ", request.method, " is not allowed on ", path));
  }
  return absl::NotFoundError(absl::StrCat("Not Found: ", request.method, " ", path));
}

}  // namespace

EngineApi::EngineApi(Replica& replica, const ModelText& model_text, const EngineApiOptions& options)
    : EngineApi(std::vector<Replica*>{&replica}, model_text, options) {}

EngineApi::EngineApi(std::vector<Replica*> ranks, const ModelText& model_text,
                     const EngineApiOptions& options)
    : ranks_(std::move(ranks)),
      replica_(ranks_.front()),
      model_text_(model_text),
      embedding_dims_(options.embedding_dims),
      id_rng_(Mix64(replica_.options().seed ^ 0x6964735f72657370ull)),
      responses_(ranks_, model_text, options.responses) {}

// Not a coroutine itself: it hands over the coroutine of the request's endpoint.
net::Task<void> EngineApi::Handle(HttpRequest& request, ResponseWriter& writer) {
  const std::string& path = request.path;
  const bool post = request.method == "POST";
  if (path == "/v1/chat/completions" && post) {
    return Generate(Endpoint::kChatCompletions, request, writer);
  }
  if (path == "/v1/completions" && post) return Generate(Endpoint::kCompletions, request, writer);
  if (ResponsesApi::Serves(path)) return responses_.Handle(request, writer);
  if (path == "/v1/embeddings" && post) return Embeddings(request, writer);
  return Send(writer, Answer(request));
}

net::Task<void> EngineApi::Send(ResponseWriter& writer, net::Response response) {
  (void)co_await writer.Reply(std::move(response));
}

net::Response EngineApi::Answer(const HttpRequest& request) {
  const std::string& path = request.path;
  const bool get = request.method == "GET";
  const bool post = request.method == "POST";
  if (path == "/tokenize" && post) return Tokenize(request.body);
  if (path == "/detokenize" && post) return Detokenize(request.body);
  if (path == "/health" && get) return {.head = Head(""), .body = ""};
  if (path == "/metrics" && get) {
    return {.head = Head("text/plain; version=0.0.4; charset=utf-8"), .body = ranks_.MetricsText()};
  }
  if (path == "/v1/models" && get) {
    return {
        .head = Head(kJsonType),
        .body = ModelList(replica_.options().model, UnixTime(), replica_.config().max_model_len)};
  }
  if (path == "/version" && get) {
    return {.head = Head(kJsonType), .body = R"({"version":"0.1.0+warmroute"})"};
  }
  if (path == "/reset_prefix_cache" && post) {
    absl::Status reset = ranks_.ResetPrefixCache();
    if (!reset.ok()) return net::ErrorResponse(reset);
    return {.head = Head(""), .body = ""};
  }
  return net::ErrorResponse(NoRoute(request));
}

absl::StatusOr<EngineApi::Prepared> EngineApi::Prepare(Endpoint endpoint, const std::string& body,
                                                       Replica& replica) {
  absl::StatusOr<request::InferenceRequest> parsed = request::ParseInferenceRequest(endpoint, body);
  if (!parsed.ok()) return parsed.status();
  request::InferenceRequest& req = *parsed;
  const std::string& served = replica_.options().model;
  WR_RETURN_IF_ERROR(CheckModel(req.model, served));
  if (req.n && *req.n != 1) {
    return InvalidParam("n", absl::StrCat("The engine emulator generates one choice per request: "
                                          "n must be 1, got ",
                                          *req.n, "."));
  }
  Prepared prepared;
  prepared.model = req.model.empty() ? served : req.model;
  prepared.stream = req.stream;
  prepared.include_usage = req.include_usage;
  const bool chat = endpoint == Endpoint::kChatCompletions;
  std::vector<int32_t> tokens;
  if (req.has_token_prompt) {
    for (int32_t id : req.prompt_token_ids) {
      if (id < 0 || id >= model_text_.vocab_size()) {
        return InvalidParam("prompt", absl::StrCat("Token id ", id, " is out of vocabulary."));
      }
    }
    tokens = std::move(req.prompt_token_ids);
  } else if (chat) {
    WR_ASSIGN_OR_RETURN(const std::string text, model_text_.RenderChat(req));
    // vLLM's ChatCompletionRequest.add_special_tokens defaults to false: BOS comes from the
    // template (chat_completion/protocol.py).
    tokens = model_text_.Encode(text, req.add_special_tokens.value_or(false));
  } else {
    // vLLM's CompletionRequest.add_special_tokens defaults to true: a text prompt gets the
    // tokenizer's BOS (completion/protocol.py build_tok_params).
    tokens = model_text_.Encode(req.prompt, req.add_special_tokens.value_or(true));
  }
  if (tokens.empty()) {
    return InvalidParam(PromptParam(endpoint), "The prompt cannot be empty.");
  }
  prepared.engine = MakeEngineRequest(replica, std::move(tokens),
                                      {.max_tokens = req.max_tokens.value_or(kDefaultMaxTokens),
                                       .model = prepared.model,
                                       .cache_salt = req.cache_salt,
                                       .seed = req.seed,
                                       .bare_start = chat && model_text_.bare_chat_start()});
  prepared.seed = prepared.engine.seed;
  prepared.max_tokens = prepared.engine.max_tokens;
  prepared.bare_start = prepared.engine.bare_start;
  return prepared;
}

net::Task<void> EngineApi::Generate(Endpoint endpoint, const HttpRequest& request,
                                    ResponseWriter& writer) {
  absl::StatusOr<Replica*> rank = ranks_.Pick(request);
  if (!rank.ok()) {
    (void)co_await writer.ReplyError(rank.status());
    co_return;
  }
  absl::StatusOr<Prepared> prepared = Prepare(endpoint, request.body, **rank);
  if (!prepared.ok()) {
    (void)co_await writer.ReplyError(prepared.status());
    co_return;
  }
  absl::StatusOr<RequestHandle> handle = (*rank)->Submit(std::move(prepared->engine));
  if (!handle.ok()) {
    absl::Status status = handle.status();
    // The engine names "prompt"; on the chat endpoint the prompt is the messages.
    if (ParamOf(status) == "prompt") status = WithParam(status, PromptParam(endpoint));
    (void)co_await writer.ReplyError(status);
    co_return;
  }
  const bool chat = endpoint == Endpoint::kChatCompletions;
  if (prepared->stream) {
    co_await Stream(std::move(*handle), std::move(*prepared), chat, writer);
  } else {
    co_await Collect(std::move(*handle), std::move(*prepared), chat, writer);
  }
}

net::Task<void> EngineApi::Stream(RequestHandle handle, Prepared prepared, bool chat,
                                  ResponseWriter& writer) {
  const ResponseInfo info{.chat = chat,
                          .id = ResponseId(chat, id_rng_.Next(), id_rng_.Next()),
                          .created = UnixTime(),
                          .model = prepared.model};
  const StreamFormatter format(info);
  if (!(co_await writer.StartStream(Head(kEventStreamType))).ok()) co_return;
  const engine::TokenGenerator& generator = replica_.generator();
  const uint64_t seed = prepared.seed;
  const int64_t max_tokens = prepared.max_tokens;
  const bool bare_start = prepared.bare_start;
  std::string chunk;
  for (;;) {
    std::vector<engine::RequestEvent> events = co_await handle.NextEvents();
    if (events.empty()) co_return;  // the engine stopped: end the stream without [DONE]
    chunk.clear();
    bool done = false;
    for (const engine::RequestEvent& event : events) {
      if (event.kind == engine::RequestEvent::Kind::kToken) {
        if (event.output_index == 0 && chat) format.AppendRole(&chunk);
        format.AppendToken(&chunk, generator.Text(seed, event.output_index, bare_start),
                           event.output_index + 1 == max_tokens);
      } else if (event.kind == engine::RequestEvent::Kind::kFinished) {
        if (prepared.include_usage) {
          format.AppendUsage(&chunk, {.prompt_tokens = event.prompt_tokens,
                                      .completion_tokens = event.output_index,
                                      .cached_tokens = event.cached_tokens});
        }
        StreamFormatter::AppendDone(&chunk);
        done = true;
      }
    }
    if (!(co_await writer.WriteChunk(chunk)).ok()) co_return;
    if (done) break;
  }
  (void)co_await writer.FinishStream();
}

net::Task<void> EngineApi::Collect(RequestHandle handle, Prepared prepared, bool chat,
                                   ResponseWriter& writer) {
  const engine::TokenGenerator& generator = replica_.generator();
  const uint64_t seed = prepared.seed;
  const bool bare_start = prepared.bare_start;
  std::string text;
  for (;;) {
    std::vector<engine::RequestEvent> events = co_await handle.NextEvents();
    if (events.empty()) {
      (void)co_await writer.ReplyError(absl::UnavailableError("the engine stopped"));
      co_return;
    }
    for (const engine::RequestEvent& event : events) {
      if (event.kind == engine::RequestEvent::Kind::kToken) {
        text.append(generator.Text(seed, event.output_index, bare_start));
      } else if (event.kind == engine::RequestEvent::Kind::kFinished) {
        const ResponseInfo info{.chat = chat,
                                .id = ResponseId(chat, id_rng_.Next(), id_rng_.Next()),
                                .created = UnixTime(),
                                .model = prepared.model};
        (void)co_await writer.Reply(Head(kJsonType),
                              CompleteResponse(info, text,
                                               {.prompt_tokens = event.prompt_tokens,
                                                .completion_tokens = event.output_index,
                                                .cached_tokens = event.cached_tokens}));
        co_return;
      }
    }
  }
}

absl::StatusOr<EngineApi::EmbeddingsJob> EngineApi::StartEmbeddings(const HttpRequest& request) {
  WR_ASSIGN_OR_RETURN(Replica * rank, ranks_.Pick(request));
  WR_ASSIGN_OR_RETURN(EmbeddingsRequest parsed, ParseEmbeddingsRequest(request.body));
  WR_RETURN_IF_ERROR(CheckModel(parsed.model, replica_.options().model));
  if (parsed.dimensions && *parsed.dimensions != embedding_dims_) {
    return InvalidParam("dimensions", absl::StrCat("This model's embeddings have ", embedding_dims_,
                                                   " dimensions, not ", *parsed.dimensions, "."));
  }
  EmbeddingsJob job;
  job.model = parsed.model.empty() ? replica_.options().model : parsed.model;
  job.base64 = parsed.base64;
  // Every input is prefilled by the engine (max_tokens 1, its token discarded), all at once.
  for (EmbeddingInput& input : parsed.inputs) {
    // vLLM's EmbeddingCompletionRequest.add_special_tokens defaults to true.
    std::vector<int32_t> tokens =
        input.is_tokens ? std::move(input.tokens) : model_text_.Encode(input.text, true);
    for (int32_t id : tokens) {
      if (id >= model_text_.vocab_size()) {
        return InvalidParam("input", absl::StrCat("Token id ", id, " is out of vocabulary."));
      }
    }
    absl::StatusOr<RequestHandle> handle = rank->Submit(MakeEngineRequest(
        *rank, tokens, {.max_tokens = 1, .model = job.model, .cache_salt = "", .seed = 0}));
    if (!handle.ok()) {
      absl::Status status = handle.status();
      if (ParamOf(status) == "prompt") status = WithParam(status, "input");
      return status;  // the inputs already submitted are aborted with their handles
    }
    job.inputs.push_back(std::move(tokens));
    job.handles.push_back(std::move(*handle));
  }
  return job;
}

std::string EngineApi::EmbeddingsBody(const EmbeddingsJob& job) {
  std::vector<std::vector<float>> vectors;
  int64_t prompt_tokens = 0;
  for (const std::vector<int32_t>& tokens : job.inputs) {
    vectors.push_back(EmbeddingOf(tokens, embedding_dims_));
    prompt_tokens += static_cast<int64_t>(tokens.size());
  }
  const EmbeddingsInfo info{.id = HexId("embd-", id_rng_.Next(), id_rng_.Next()),
                            .created = UnixTime(),
                            .model = job.model};
  return EmbeddingsResponse(info, vectors, job.base64, prompt_tokens);
}

net::Task<void> EngineApi::Embeddings(const HttpRequest& request, ResponseWriter& writer) {
  absl::StatusOr<EmbeddingsJob> job = StartEmbeddings(request);
  if (!job.ok()) {
    (void)co_await writer.ReplyError(job.status());
    co_return;
  }
  for (RequestHandle& handle : job->handles) {
    while (!(co_await handle.NextEvents()).empty()) {
    }
  }
  (void)co_await writer.Reply(Head(kJsonType), EmbeddingsBody(*job));
}

net::Response EngineApi::Tokenize(const std::string& body) {
  absl::StatusOr<std::string> json = TokenizeJson(body);
  if (!json.ok()) return net::ErrorResponse(json.status());
  return {.head = Head(kJsonType), .body = std::move(*json)};
}

net::Response EngineApi::Detokenize(const std::string& body) {
  absl::StatusOr<std::string> json = DetokenizeJson(body);
  if (!json.ok()) return net::ErrorResponse(json.status());
  return {.head = Head(kJsonType), .body = std::move(*json)};
}

absl::StatusOr<std::string> EngineApi::TokenizeJson(const std::string& body) {
  WR_ASSIGN_OR_RETURN(TokenizeRequest req, ParseTokenizeRequest(body));
  WR_RETURN_IF_ERROR(CheckModel(req.model, replica_.options().model));
  std::string text;
  if (req.chat) {
    WR_ASSIGN_OR_RETURN(text, model_text_.RenderChat(req.chat_request));
  } else {
    text = std::move(req.prompt);
  }
  const ModelText::Tokens tokens =
      model_text_.Tokenize(text, req.add_special_tokens, req.return_token_strs);
  return TokenizeResponse(tokens.ids, replica_.config().max_model_len,
                          req.return_token_strs ? &tokens.strs : nullptr);
}

absl::StatusOr<std::string> EngineApi::DetokenizeJson(const std::string& body) {
  WR_ASSIGN_OR_RETURN(DetokenizeRequest req, ParseDetokenizeRequest(body));
  WR_RETURN_IF_ERROR(CheckModel(req.model, replica_.options().model));
  for (int32_t id : req.tokens) {
    if (id >= model_text_.vocab_size()) {
      return InvalidParam("tokens", absl::StrCat("Token id ", id, " is out of vocabulary."));
    }
  }
  return DetokenizeResponse(model_text_.Decode(req.tokens));
}

}  // namespace warmroute::emulator
