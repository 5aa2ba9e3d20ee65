#include "loadgen/request_body.h"

#include "common/json_writer.h"

namespace warmroute::loadgen {

std::string_view RequestTarget(const workload::WorkloadRequest& request) {
  return request.endpoint == request::Endpoint::kChatCompletions ? "/v1/chat/completions"
                                                                 : "/v1/completions";
}

std::string BuildRequestBody(const workload::WorkloadRequest& request, const BodyOptions& options) {
  std::string out;
  size_t size = request.prompt.size() + 160;
  for (const auto& m : request.messages) size += m.content.size() + 32;
  out.reserve(size);
  JsonWriter w(&out);
  w.BeginObject();
  if (!request.model.empty()) w.Key("model").String(request.model);
  if (request.endpoint == request::Endpoint::kChatCompletions) {
    w.Key("messages").BeginArray();
    for (const auto& m : request.messages) {
      w.BeginObject().Key("role").String(m.role).Key("content").String(m.content).EndObject();
    }
    w.EndArray();
  } else {
    w.Key("prompt").String(request.prompt);
  }
  w.Key("max_tokens").Int(request.max_tokens);
  w.Key("stream").Bool(options.stream);
  if (options.stream) {
    w.Key("stream_options").BeginObject().Key("include_usage").Bool(true).EndObject();
  }
  if (options.ignore_eos) w.Key("ignore_eos").Bool(true);
  w.EndObject();
  return out;
}

}  // namespace warmroute::loadgen
