#include "emulator/api.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "core/request/block_hash.h"
#include "emulator/openai_response.h"

namespace warmroute::emulator {
namespace {

using net::HttpRequest;
using net::ResponseHead;
using net::ResponseWriter;
using request::Endpoint;

int64_t UnixTime() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ResponseHead Head(std::string content_type) {
  ResponseHead head;
  head.content_type = std::move(content_type);
  return head;
}

// The root of the default generated-text seed (any constant).
constexpr uint64_t kTextSeedRoot = 0x746578745f736565ull;

// The parameter a prompt error names on each endpoint.
std::string_view PromptParam(Endpoint endpoint) {
  return endpoint == Endpoint::kChatCompletions ? "messages" : "prompt";
}

// 404 for a path that is not served, or served with another method.
absl::Status NoRoute(const HttpRequest& request) {
  const std::string& path = request.path;
  const bool known = path == "/v1/chat/completions" || path == "/v1/completions" ||
                     path == "/health" || path == "/metrics" || path == "/v1/models" ||
                     path == "/version" || path == "/reset_prefix_cache";
  if (known) {
    return absl::NotFoundError(
        absl::StrCat("Method ", request.method, " is not allowed on ", path));
  }
  return absl::NotFoundError(absl::StrCat("Not Found: ", request.method, " ", path));
}

}  // namespace

EngineApi::EngineApi(Replica& replica, const request::Tokenizer& tokenizer)
    : replica_(replica),
      tokenizer_(tokenizer),
      id_rng_(Mix64(replica.options().seed ^ 0x6964735f72657370ull)) {}

net::Task<void> EngineApi::Handle(HttpRequest& request, ResponseWriter& writer) {
  const std::string& path = request.path;
  const bool get = request.method == "GET";
  const bool post = request.method == "POST";
  if (path == "/v1/chat/completions" && post) {
    co_await Generate(Endpoint::kChatCompletions, request, writer);
  } else if (path == "/v1/completions" && post) {
    co_await Generate(Endpoint::kCompletions, request, writer);
  } else if (path == "/health" && get) {
    co_await writer.Reply(Head(""), "");
  } else if (path == "/metrics" && get) {
    co_await writer.Reply(Head("text/plain; version=0.0.4; charset=utf-8"), replica_.MetricsText());
  } else if (path == "/v1/models" && get) {
    co_await writer.Reply(Head("application/json"), ModelList(replica_.options().model, UnixTime(),
                                                              replica_.config().max_model_len));
  } else if (path == "/version" && get) {
    co_await writer.Reply(Head("application/json"), R"({"version":"0.1.0+warmroute"})");
  } else if (path == "/reset_prefix_cache" && post) {
    absl::Status reset = replica_.ResetPrefixCache();
    if (reset.ok()) {
      co_await writer.Reply(Head(""), "");
    } else {
      co_await writer.ReplyError(reset);
    }
  } else {
    co_await writer.ReplyError(NoRoute(request));
  }
}

absl::StatusOr<EngineApi::Prepared> EngineApi::Prepare(Endpoint endpoint, const std::string& body) {
  absl::StatusOr<request::InferenceRequest> parsed = request::ParseInferenceRequest(endpoint, body);
  if (!parsed.ok()) return parsed.status();
  request::InferenceRequest& req = *parsed;
  const std::string& served = replica_.options().model;
  if (!req.model.empty() && req.model != served) {
    return WithParam(
        absl::NotFoundError(absl::StrCat("The model `", req.model, "` does not exist.")), "model");
  }
  if (req.n && *req.n != 1) {
    return InvalidParam("n", absl::StrCat("The engine emulator generates one choice per request: "
                                          "n must be 1, got ",
                                          *req.n, "."));
  }
  Prepared prepared;
  prepared.model = req.model.empty() ? served : req.model;
  prepared.stream = req.stream;
  prepared.include_usage = req.include_usage;
  engine::EngineRequest& engine = prepared.engine;
  if (req.has_token_prompt) {
    for (int32_t id : req.prompt_token_ids) {
      if (id < 0 || id >= tokenizer_.VocabSize()) {
        return InvalidParam("prompt", absl::StrCat("Token id ", id, " is out of vocabulary."));
      }
    }
    engine.prompt_tokens = std::move(req.prompt_token_ids);
  } else {
    engine.prompt_tokens = tokenizer_.Encode(request::RenderPrompt(req));
  }
  if (engine.prompt_tokens.empty()) {
    return InvalidParam(PromptParam(endpoint), "The prompt cannot be empty.");
  }
  engine.id = replica_.NewRequestId();
  engine.max_tokens = req.max_tokens.value_or(kDefaultMaxTokens);
  engine.root_hash =
      request::RootBlockHash({.model = prepared.model, .lora = "", .cache_salt = req.cache_salt});
  // Without a seed, the text is a function of the prompt, as with greedy decoding: the same
  // prompt gets the same answer on every replica.
  engine.seed = req.seed ? *req.seed : request::ChainBlockHash(kTextSeedRoot, engine.prompt_tokens);
  prepared.seed = engine.seed;
  prepared.max_tokens = engine.max_tokens;
  return prepared;
}

net::Task<void> EngineApi::Generate(Endpoint endpoint, const HttpRequest& request,
                                    ResponseWriter& writer) {
  absl::StatusOr<Prepared> prepared = Prepare(endpoint, request.body);
  if (!prepared.ok()) {
    co_await writer.ReplyError(prepared.status());
    co_return;
  }
  absl::StatusOr<RequestHandle> handle = replica_.Submit(std::move(prepared->engine));
  if (!handle.ok()) {
    absl::Status status = handle.status();
    // The engine names "prompt"; on the chat endpoint the prompt is the messages.
    if (ParamOf(status) == "prompt") status = WithParam(status, PromptParam(endpoint));
    co_await writer.ReplyError(status);
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
  if (!(co_await writer.StartStream(Head("text/event-stream; charset=utf-8"))).ok()) co_return;
  const engine::TokenGenerator& generator = replica_.generator();
  const uint64_t seed = prepared.seed;
  const int64_t max_tokens = prepared.max_tokens;
  std::string chunk;
  for (;;) {
    std::vector<engine::RequestEvent> events = co_await handle.NextEvents();
    if (events.empty()) co_return;  // the engine stopped: end the stream without [DONE]
    chunk.clear();
    bool done = false;
    for (const engine::RequestEvent& event : events) {
      if (event.kind == engine::RequestEvent::Kind::kToken) {
        if (event.output_index == 0 && chat) format.AppendRole(&chunk);
        format.AppendToken(&chunk, generator.Text(seed, event.output_index),
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
  co_await writer.FinishStream();
}

net::Task<void> EngineApi::Collect(RequestHandle handle, Prepared prepared, bool chat,
                                   ResponseWriter& writer) {
  const engine::TokenGenerator& generator = replica_.generator();
  const uint64_t seed = prepared.seed;
  std::string text;
  for (;;) {
    std::vector<engine::RequestEvent> events = co_await handle.NextEvents();
    if (events.empty()) {
      co_await writer.ReplyError(absl::UnavailableError("the engine stopped"));
      co_return;
    }
    for (const engine::RequestEvent& event : events) {
      if (event.kind == engine::RequestEvent::Kind::kToken) {
        text.append(generator.Text(seed, event.output_index));
      } else if (event.kind == engine::RequestEvent::Kind::kFinished) {
        const ResponseInfo info{.chat = chat,
                                .id = ResponseId(chat, id_rng_.Next(), id_rng_.Next()),
                                .created = UnixTime(),
                                .model = prepared.model};
        co_await writer.Reply(Head("application/json"),
                              CompleteResponse(info, text,
                                               {.prompt_tokens = event.prompt_tokens,
                                                .completion_tokens = event.output_index,
                                                .cached_tokens = event.cached_tokens}));
        co_return;
      }
    }
  }
}

}  // namespace warmroute::emulator
