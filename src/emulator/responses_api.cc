#include "emulator/responses_api.h"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/status.h"
#include "emulator/engine_input.h"
#include "emulator/openai_response.h"
#include "emulator/reply.h"
#include "net/detached.h"

namespace warmroute::emulator {

namespace asio = boost::asio;
using net::HttpRequest;
using net::ResponseWriter;

namespace {

constexpr std::string_view kPath = "/v1/responses";

absl::Status NotFound(std::string_view id) {
  return WithParam(
      absl::NotFoundError(absl::StrCat("Response with id '", AbslView(id), "' not found.")),
      "response_id");
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A path segment with its %XX escapes decoded (clients encode ids as path components); a '%'
// not followed by two hex digits stays as it is.
std::string PercentDecode(std::string_view segment) {
  std::string out;
  out.reserve(segment.size());
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] == '%' && i + 2 < segment.size()) {
      const int high = HexValue(segment[i + 1]);
      const int low = HexValue(segment[i + 2]);
      if (high >= 0 && low >= 0) {
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
        continue;
      }
    }
    out.push_back(segment[i]);
  }
  return out;
}

// The next batch of a generation's events: the text of its tokens and, at its end, the usage.
struct Progress {
  std::string text;
  std::optional<ResponseTokens> usage;  // set by the last batch
  bool stopped = false;                 // the engine stopped before the end
};

net::Task<Progress> NextProgress(RequestHandle& handle, uint64_t seed, bool bare_start,
                                 const engine::TokenGenerator& generator) {
  Progress progress;
  std::vector<engine::RequestEvent> events = co_await handle.NextEvents();
  if (events.empty()) {
    progress.stopped = true;
    co_return progress;
  }
  for (const engine::RequestEvent& event : events) {
    if (event.kind == engine::RequestEvent::Kind::kToken) {
      progress.text.append(generator.Text(seed, event.output_index, bare_start));
    } else if (event.kind == engine::RequestEvent::Kind::kFinished) {
      progress.usage = ResponseTokens{.input_tokens = event.prompt_tokens,
                                      .cached_tokens = event.cached_tokens,
                                      .output_tokens = event.output_index};
    }
  }
  co_return progress;
}

// A seed for response ids that differs from process to process (vLLM's are random UUIDs): the
// ids must not repeat across emulator processes, whose replicas a gateway routes follow-ups to
// by id, and the text seed (--seed) is the same in all of them.
uint64_t RandomSeed() {
  std::random_device device;
  return Mix64((uint64_t{device()} << 32) ^ device());
}

}  // namespace

// A response being generated: its object (kept up to date), the conversation it answers and its
// engine request.
struct ResponsesApi::Generation {
  ResponseObject response;
  std::vector<request::ChatMessage> conversation;
  std::optional<RequestHandle> handle;  // set once submitted
  uint64_t seed = 0;
  bool bare_start = false;  // the engine request's
  bool limited = false;     // the request set max_output_tokens: the end is "incomplete"
  bool stream = false;

  // Folds one batch into the response; at the end sets its status and usage.
  void Apply(const Progress& progress) {
    response.text.append(progress.text);
    if (progress.usage) {
      response.usage = progress.usage;
      response.status = limited ? ResponseStatus::kIncomplete : ResponseStatus::kCompleted;
    }
  }
};

// A background response's coroutine, cancelled through `cancel`.
struct ResponsesApi::BackgroundJob {
  asio::cancellation_signal cancel;
};

ResponsesApi::ResponsesApi(const DataParallelRanks& ranks, const ModelText& model_text,
                           ResponseStoreLimits limits)
    : ranks_(ranks),
      replica_(ranks.front()),
      model_text_(model_text),
      store_(limits),
      id_rng_(RandomSeed()) {}

ResponsesApi::~ResponsesApi() = default;

bool ResponsesApi::Serves(std::string_view path) {
  return path.substr(0, kPath.size()) == kPath &&
         (path.size() == kPath.size() || path[kPath.size()] == '/');
}

net::Task<void> ResponsesApi::Handle(const HttpRequest& request, ResponseWriter& writer) {
  const std::string_view path = request.path;
  const std::string& method = request.method;
  if (path == kPath) {
    if (method == "POST") {
      co_await Create(request, writer);
      co_return;
    }
  } else {
    // /v1/responses/{id} or /v1/responses/{id}/cancel
    std::string_view rest = path.substr(kPath.size() + 1);
    constexpr std::string_view kCancel = "/cancel";
    const bool cancel =
        rest.size() > kCancel.size() && rest.substr(rest.size() - kCancel.size()) == kCancel;
    if (cancel) rest.remove_suffix(kCancel.size());
    if (rest.empty() || rest.find('/') != std::string_view::npos) {
      (void)co_await writer.ReplyError(
          absl::NotFoundError(absl::StrCat("Not Found: ", method, " ", request.path)));
      co_return;
    }
    const std::string id = PercentDecode(rest);
    if (cancel && method == "POST") {
      co_await Cancel(id, writer);
      co_return;
    }
    if (!cancel && method == "GET") {
      co_await Retrieve(id, writer);
      co_return;
    }
    if (!cancel && method == "DELETE") {
      co_await Delete(id, writer);
      co_return;
    }
  }
  (void)co_await writer.ReplyError(
      absl::NotFoundError(absl::StrCat("Method ", method, " is not allowed on ", request.path)));
}

absl::StatusOr<std::vector<request::ChatMessage>> ResponsesApi::Conversation(
    const request::InferenceRequest& request) const {
  const size_t instructions =
      request.instructions && !request.instructions->empty() ? 1 : 0;  // messages[0]
  std::vector<request::ChatMessage> conversation(request.messages.begin(),
                                                 request.messages.begin() + instructions);
  if (request.previous_response_id) {
    const StoredResponse* previous = store_.Find(*request.previous_response_id);
    if (previous == nullptr) return NotFound(*request.previous_response_id);
    for (const request::ChatMessage& message : previous->conversation) {
      if (message.role != "system") conversation.push_back(message);
    }
    if (HasOutput(previous->response.status) && !previous->response.text.empty()) {
      conversation.push_back({"assistant", previous->response.text});
    }
  }
  conversation.insert(conversation.end(), request.messages.begin() + instructions,
                      request.messages.end());
  return conversation;
}

absl::StatusOr<ResponsesApi::Generation> ResponsesApi::Start(const HttpRequest& http) {
  WR_ASSIGN_OR_RETURN(Replica * rank, ranks_.Pick(http));
  absl::StatusOr<request::InferenceRequest> parsed =
      request::ParseInferenceRequest(request::Endpoint::kResponses, http.body);
  if (!parsed.ok()) return parsed.status();
  request::InferenceRequest& req = *parsed;
  const std::string& served = replica_.options().model;
  WR_RETURN_IF_ERROR(CheckModel(req.model, served));
  if (req.background && req.stream) {
    return InvalidParam("stream",
                        "The engine emulator does not stream background responses: send "
                        "\"background\": true without \"stream\" and GET the response.");
  }
  Generation generation;
  WR_ASSIGN_OR_RETURN(generation.conversation, Conversation(req));
  const std::string model = req.model.empty() ? served : req.model;
  // The conversation renders as a chat with the request's tools, encoded as chat's prompt is
  // (vLLM's add_special_tokens default for chat-shaped requests: false).
  req.messages = generation.conversation;
  WR_ASSIGN_OR_RETURN(const std::string prompt, model_text_.RenderChat(req));
  std::vector<int32_t> tokens = model_text_.Encode(prompt, /*add_special_tokens=*/false);
  engine::EngineRequest engine =
      MakeEngineRequest(*rank, std::move(tokens),
                        {.max_tokens = req.max_tokens.value_or(kDefaultMaxTokens),
                         .model = model,
                         .cache_salt = req.cache_salt,
                         .seed = req.seed,
                         .bare_start = model_text_.bare_chat_start()});
  generation.seed = engine.seed;
  generation.bare_start = engine.bare_start;
  generation.limited = req.max_tokens.has_value();
  generation.stream = req.stream;
  ResponseObject& response = generation.response;
  response.max_output_tokens = engine.max_tokens;
  absl::StatusOr<RequestHandle> handle = rank->Submit(std::move(engine));
  if (!handle.ok()) {
    absl::Status status = handle.status();
    // The engine names "prompt"; here the prompt is the input.
    if (ParamOf(status) == "prompt") status = WithParam(status, "input");
    return status;
  }
  generation.handle = std::move(*handle);
  response.id = !req.request_id.empty() ? std::move(req.request_id)
                                        : HexId("resp_", id_rng_.Next(), id_rng_.Next());
  response.created_at = UnixTime();
  response.model = model;
  response.status = req.background ? ResponseStatus::kQueued : ResponseStatus::kInProgress;
  response.instructions = std::move(req.instructions);
  response.tools = std::move(req.tools);
  response.previous_response_id = std::move(req.previous_response_id);
  response.background = req.background;
  response.store = req.store;
  response.user = std::move(req.user);
  response.message_id = HexId("msg_", id_rng_.Next(), id_rng_.Next());
  return generation;
}

net::Task<void> ResponsesApi::Create(const HttpRequest& request, ResponseWriter& writer) {
  absl::StatusOr<Generation> generation = Start(request);
  if (!generation.ok()) {
    (void)co_await writer.ReplyError(generation.status());
  } else if (generation->response.background) {
    co_await StartBackground(std::move(*generation), writer);
  } else if (generation->stream) {
    co_await Stream(std::move(*generation), writer);
  } else {
    co_await Collect(std::move(*generation), writer);
  }
}

void ResponsesApi::Store(const Generation& generation) {
  if (!generation.response.store) return;
  store_.Put({.response = generation.response, .conversation = generation.conversation});
}

void ResponsesApi::UpdateStored(const Generation& generation) {
  const StoredResponse* stored = store_.Find(generation.response.id);
  // The message id tells this generation from a later request that reused its request_id.
  if (stored == nullptr || stored->response.message_id != generation.response.message_id ||
      !IsUnfinished(stored->response.status)) {
    return;
  }
  Store(generation);
}

net::Task<void> ResponsesApi::Collect(Generation generation, ResponseWriter& writer) {
  const engine::TokenGenerator& generator = replica_.generator();
  for (;;) {
    const Progress progress = co_await NextProgress(*generation.handle, generation.seed,
                                                    generation.bare_start, generator);
    if (progress.stopped) {
      (void)co_await writer.ReplyError(absl::UnavailableError("the engine stopped"));
      co_return;
    }
    generation.Apply(progress);
    if (progress.usage) break;
  }
  Store(generation);
  (void)co_await writer.Reply(Head(kJsonType), ResponseJson(generation.response));
}

net::Task<void> ResponsesApi::Stream(Generation generation, ResponseWriter& writer) {
  ResponseEventWriter events(generation.response.message_id);
  std::string chunk;
  events.AppendStart(&chunk, generation.response);
  if (!(co_await writer.StartStream(Head(kEventStreamType))).ok()) co_return;
  if (!(co_await writer.WriteChunk(chunk)).ok()) co_return;
  const engine::TokenGenerator& generator = replica_.generator();
  for (;;) {
    const Progress progress = co_await NextProgress(*generation.handle, generation.seed,
                                                    generation.bare_start, generator);
    if (progress.stopped) co_return;  // the engine stopped: end without response.completed
    generation.Apply(progress);
    chunk.clear();
    if (!progress.text.empty()) events.AppendDelta(&chunk, progress.text);
    if (progress.usage) {
      Store(generation);  // before the client can see the end and send a follow-up
      events.AppendEnd(&chunk, generation.response);
    }
    if (!(co_await writer.WriteChunk(chunk)).ok()) co_return;
    if (progress.usage) break;
  }
  (void)co_await writer.FinishStream();
}

net::Task<void> ResponsesApi::StartBackground(Generation generation, ResponseWriter& writer) {
  const std::string id = generation.response.id;
  Store(generation);  // "queued" (a background request has store: the parser checks)
  const std::string body = ResponseJson(generation.response);
  CancelJob(id);  // an earlier background response under this id is replaced
  auto job = std::make_shared<BackgroundJob>();
  jobs_[id] = job;
  // The executor first, in a statement of its own: GCC 12 destroys the temporaries of a full
  // expression that holds a co_await twice.
  const net::Executor executor = co_await asio::this_coro::executor;
  asio::co_spawn(executor, RunBackground(std::move(generation), job),
                 // The handler holds the job too: the signal outlives its slot's last use.
                 asio::bind_cancellation_slot(job->cancel.slot(), [id, job](std::exception_ptr e) {
                   net::LogIfDetachedFailed(absl::StrCat("background response ", id), e);
                 }));
  (void)co_await writer.Reply(Head(kJsonType), body);
}

net::Task<void> ResponsesApi::RunBackground(Generation generation,
                                            std::shared_ptr<BackgroundJob> job) {
  const engine::TokenGenerator& generator = replica_.generator();
  try {
    for (;;) {
      const Progress progress = co_await NextProgress(*generation.handle, generation.seed,
                                                      generation.bare_start, generator);
      if (progress.stopped) {
        generation.response.status = ResponseStatus::kFailed;
        UpdateStored(generation);
        break;
      }
      const bool first = generation.response.status == ResponseStatus::kQueued;
      if (first) generation.response.status = ResponseStatus::kInProgress;
      generation.Apply(progress);
      if (first || progress.usage) UpdateStored(generation);
      if (progress.usage) break;
    }
  } catch (const boost::system::system_error& e) {
    // Cancelled (POST .../cancel or DELETE): the handle's destructor aborts the engine request.
    if (e.code() != asio::error::operation_aborted) throw;
  }
  const auto it = jobs_.find(generation.response.id);
  if (it != jobs_.end() && it->second == job) jobs_.erase(it);
}

void ResponsesApi::CancelJob(std::string_view id) {
  const auto it = jobs_.find(AbslView(id));
  if (it == jobs_.end()) return;
  std::shared_ptr<BackgroundJob> job = std::move(it->second);
  jobs_.erase(it);
  job->cancel.emit(asio::cancellation_type::terminal);
}

net::Task<void> ResponsesApi::Retrieve(std::string_view id, ResponseWriter& writer) {
  const StoredResponse* stored = store_.Find(id);
  if (stored == nullptr) {
    (void)co_await writer.ReplyError(NotFound(id));
    co_return;
  }
  (void)co_await writer.Reply(Head(kJsonType), ResponseJson(stored->response));
}

net::Task<void> ResponsesApi::Delete(std::string_view id, ResponseWriter& writer) {
  if (!store_.Erase(id)) {
    (void)co_await writer.ReplyError(NotFound(id));
    co_return;
  }
  CancelJob(id);
  (void)co_await writer.Reply(Head(kJsonType), DeletedResponseJson(id));
}

net::Task<void> ResponsesApi::Cancel(std::string_view id, ResponseWriter& writer) {
  const StoredResponse* stored = store_.Find(id);
  if (stored == nullptr) {
    (void)co_await writer.ReplyError(NotFound(id));
    co_return;
  }
  if (!IsUnfinished(stored->response.status)) {
    (void)co_await writer.ReplyError(
        InvalidParam("response_id", "Cannot cancel a synchronous response."));
    co_return;
  }
  StoredResponse cancelled = *stored;
  cancelled.response.status = ResponseStatus::kCancelled;
  const std::string body = ResponseJson(cancelled.response);
  store_.Put(std::move(cancelled));
  CancelJob(id);
  (void)co_await writer.Reply(Head(kJsonType), body);
}

}  // namespace warmroute::emulator
