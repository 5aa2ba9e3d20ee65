#include "emulator/openai_response.h"

#include "common/json_writer.h"

namespace warmroute::emulator {
namespace {

void WriteUsage(JsonWriter& w, const Usage& usage) {
  w.BeginObject();
  w.Key("prompt_tokens").Int(usage.prompt_tokens);
  w.Key("total_tokens").Int(usage.prompt_tokens + usage.completion_tokens);
  w.Key("completion_tokens").Int(usage.completion_tokens);
  w.Key("prompt_tokens_details").BeginObject().Key("cached_tokens").Int(usage.cached_tokens);
  w.EndObject();
  w.EndObject();
}

// Writes "id", "object", "created" and "model" into the open object.
void WriteHeaderFields(JsonWriter& w, const ResponseInfo& info, std::string_view object) {
  w.Key("id").String(info.id);
  w.Key("object").String(object);
  w.Key("created").Int(info.created);
  w.Key("model").String(info.model);
}

}  // namespace

std::string HexId(std::string_view prefix, uint64_t a, uint64_t b) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  for (uint64_t word : {a, b}) {
    for (int shift = 60; shift >= 0; shift -= 4) id.push_back(kHex[(word >> shift) & 0xF]);
  }
  return id;
}

std::string ResponseId(bool chat, uint64_t a, uint64_t b) {
  return HexId(chat ? "chatcmpl-" : "cmpl-", a, b);
}

StreamFormatter::StreamFormatter(const ResponseInfo& info) : chat_(info.chat) {
  prefix_ = "data: ";
  JsonWriter w(&prefix_);
  w.BeginObject();
  WriteHeaderFields(w, info, info.chat ? "chat.completion.chunk" : "text_completion");
  w.Key("choices");  // the caller appends the value and closes the object
}

void StreamFormatter::AppendRole(std::string* out) const {
  out->append(prefix_);
  out->append(R"([{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
              R"("finish_reason":null}]})"
              "\n\n");
}

void StreamFormatter::AppendToken(std::string* out, std::string_view text, bool last) const {
  out->append(prefix_);
  if (chat_) {
    out->append(R"([{"index":0,"delta":{"content":)");
    AppendJsonString(out, text);
    out->append(R"(},"logprobs":null,)");
    out->append(last ? R"("finish_reason":"length","stop_reason":null}]})"
                     : R"("finish_reason":null}]})");
  } else {
    out->append(R"([{"index":0,"text":)");
    AppendJsonString(out, text);
    out->append(last ? R"(,"logprobs":null,"finish_reason":"length","stop_reason":null}]})"
                     : R"(,"logprobs":null,"finish_reason":null,"stop_reason":null}]})");
  }
  out->append("\n\n");
}

void StreamFormatter::AppendUsage(std::string* out, const Usage& usage) const {
  out->append(prefix_);
  out->append(R"([],"usage":)");
  JsonWriter w(out);
  WriteUsage(w, usage);
  out->append("}\n\n");
}

void StreamFormatter::AppendDone(std::string* out) { out->append("data: [DONE]\n\n"); }

std::string CompleteResponse(const ResponseInfo& info, std::string_view text, const Usage& usage) {
  std::string out;
  out.reserve(256 + text.size());
  JsonWriter w(&out);
  w.BeginObject();
  WriteHeaderFields(w, info, info.chat ? "chat.completion" : "text_completion");
  w.Key("choices").BeginArray().BeginObject();
  w.Key("index").Int(0);
  if (info.chat) {
    w.Key("message").BeginObject();
    w.Key("role").String("assistant");
    w.Key("content").String(text);
    w.Key("tool_calls").BeginArray().EndArray();
    w.EndObject();
    w.Key("logprobs").Null();
    w.Key("finish_reason").String("length");
    w.Key("stop_reason").Null();
  } else {
    w.Key("text").String(text);
    w.Key("logprobs").Null();
    w.Key("finish_reason").String("length");
    w.Key("stop_reason").Null();
    w.Key("prompt_logprobs").Null();
  }
  w.EndObject().EndArray();
  w.Key("usage");
  WriteUsage(w, usage);
  if (info.chat) w.Key("prompt_logprobs").Null();
  w.EndObject();
  return out;
}

std::string ModelList(std::string_view model, int64_t created, int64_t max_model_len) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("object").String("list");
  w.Key("data").BeginArray().BeginObject();
  w.Key("id").String(model);
  w.Key("object").String("model");
  w.Key("created").Int(created);
  w.Key("owned_by").String("vllm");
  w.Key("root").String(model);
  w.Key("parent").Null();
  w.Key("max_model_len").Int(max_model_len);
  w.Key("permission").BeginArray().BeginObject();
  w.Key("id").String("modelperm-warmroute");
  w.Key("object").String("model_permission");
  w.Key("created").Int(created);
  w.Key("allow_create_engine").Bool(false);
  w.Key("allow_sampling").Bool(true);
  w.Key("allow_logprobs").Bool(true);
  w.Key("allow_search_indices").Bool(false);
  w.Key("allow_view").Bool(true);
  w.Key("allow_fine_tuning").Bool(false);
  w.Key("organization").String("*");
  w.Key("group").Null();
  w.Key("is_blocking").Bool(false);
  w.EndObject().EndArray();
  w.EndObject().EndArray();
  w.EndObject();
  return out;
}

}  // namespace warmroute::emulator
