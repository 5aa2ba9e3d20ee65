#include "loadgen/request_body.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/json_writer.h"
#include "core/request/chat_template.h"

namespace warmroute::loadgen {
namespace {

using request::ChatMessage;
using request::Endpoint;

// {"role": ..., "content": ...}: a chat message and a Responses input item alike.
void WriteMessage(JsonWriter& w, std::string_view role, std::string_view content) {
  w.BeginObject().Key("role").String(role).Key("content").String(content).EndObject();
}

// The request's messages, or its prompt as one user message.
void WriteMessages(JsonWriter& w, const workload::WorkloadRequest& request, size_t first) {
  w.BeginArray();
  if (request.endpoint == Endpoint::kChatCompletions) {
    for (size_t i = first; i < request.messages.size(); ++i) {
      WriteMessage(w, request.messages[i].role, request.messages[i].content);
    }
  } else {
    WriteMessage(w, "user", request.prompt);
  }
  w.EndArray();
}

}  // namespace

absl::StatusOr<Endpoint> ParseApiFlag(std::string_view flag, std::string_view value) {
  for (Endpoint api : {Endpoint::kChatCompletions, Endpoint::kCompletions, Endpoint::kResponses}) {
    if (value == ApiName(api)) return api;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      AbslView(flag), " must be chat, completions or responses, got \"", AbslView(value), "\""));
}

std::string_view ApiName(Endpoint api) {
  switch (api) {
    case Endpoint::kChatCompletions:
      return "chat";
    case Endpoint::kCompletions:
      return "completions";
    case Endpoint::kResponses:
      return "responses";
    case Endpoint::kMessages:
      return "messages";
  }
  return "chat";
}

Endpoint SentAs(const workload::WorkloadRequest& request, const BodyOptions& options) {
  return options.api.value_or(request.endpoint);
}

std::string_view RequestTarget(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::kCompletions:
      return "/v1/completions";
    case Endpoint::kResponses:
      return "/v1/responses";
    default:
      return "/v1/chat/completions";
  }
}

std::string BuildRequestBody(const workload::WorkloadRequest& request, const BodyOptions& options) {
  const Endpoint api = SentAs(request, options);
  const bool chat_shaped = request.endpoint == Endpoint::kChatCompletions;
  std::string out;
  size_t size = request.prompt.size() + 160;
  for (const ChatMessage& m : request.messages) size += m.content.size() + 32;
  out.reserve(size);
  JsonWriter w(&out);
  w.BeginObject();
  if (!request.model.empty()) w.Key("model").String(request.model);
  switch (api) {
    case Endpoint::kResponses: {
      size_t first = 0;
      if (chat_shaped && !request.messages.empty() && request.messages[0].role == "system" &&
          !request.messages[0].content.empty()) {
        w.Key("instructions").String(request.messages[0].content);
        first = 1;
      }
      w.Key("input");
      WriteMessages(w, request, first);
      w.Key("max_output_tokens").Int(request.max_tokens);
      w.Key("stream").Bool(options.stream);
      w.Key("store").Bool(false);
      break;
    }
    case Endpoint::kCompletions:
      w.Key("prompt").String(chat_shaped ? request::RenderChat(request.messages,
                                                               /*add_generation_prompt=*/true)
                                         : request.prompt);
      break;
    default:
      w.Key("messages");
      WriteMessages(w, request, 0);
      break;
  }
  if (api != Endpoint::kResponses) {
    w.Key("max_tokens").Int(request.max_tokens);
    w.Key("stream").Bool(options.stream);
    if (options.stream) {
      w.Key("stream_options").BeginObject().Key("include_usage").Bool(true).EndObject();
    }
  }
  if (options.ignore_eos) w.Key("ignore_eos").Bool(true);
  w.EndObject();
  return out;
}

}  // namespace warmroute::loadgen
