#include "emulator/responses_json.h"

#include "common/json_writer.h"

namespace warmroute::emulator {
namespace {

void WriteOptionalString(JsonWriter& w, const std::optional<std::string>& value) {
  if (value) {
    w.String(*value);
  } else {
    w.Null();
  }
}

// {"annotations": [], "text": …, "type": "output_text", "logprobs": []}
void WriteTextPart(JsonWriter& w, std::string_view text) {
  w.BeginObject();
  w.Key("annotations").BeginArray().EndArray();
  w.Key("text").String(text);
  w.Key("type").String("output_text");
  w.Key("logprobs").BeginArray().EndArray();
  w.EndObject();
}

// The output message item; `text` null: no content yet (in progress).
void WriteMessageItem(JsonWriter& w, std::string_view id, const std::string* text) {
  w.BeginObject();
  w.Key("id").String(id);
  w.Key("content").BeginArray();
  if (text != nullptr) WriteTextPart(w, *text);
  w.EndArray();
  w.Key("role").String("assistant");
  w.Key("status").String(text != nullptr ? "completed" : "in_progress");
  w.Key("type").String("message");
  w.EndObject();
}

void WriteUsage(JsonWriter& w, const ResponseTokens& usage) {
  w.BeginObject();
  w.Key("input_tokens").Int(usage.input_tokens);
  w.Key("input_tokens_details").BeginObject().Key("cached_tokens").Int(usage.cached_tokens);
  w.EndObject();
  w.Key("output_tokens").Int(usage.output_tokens);
  w.Key("output_tokens_details").BeginObject().Key("reasoning_tokens").Int(0).EndObject();
  w.Key("total_tokens").Int(usage.input_tokens + usage.output_tokens);
  w.EndObject();
}

void WriteResponse(JsonWriter& w, const ResponseObject& r) {
  w.BeginObject();
  w.Key("id").String(r.id);
  w.Key("created_at").Int(r.created_at);
  w.Key("incomplete_details");
  if (r.status == ResponseStatus::kIncomplete) {
    w.BeginObject().Key("reason").String("max_output_tokens").EndObject();
  } else {
    w.Null();
  }
  w.Key("instructions");
  WriteOptionalString(w, r.instructions);
  w.Key("metadata").Null();
  w.Key("model").String(r.model);
  w.Key("object").String("response");
  w.Key("output").BeginArray();
  if (HasOutput(r.status)) WriteMessageItem(w, r.message_id, &r.text);
  w.EndArray();
  w.Key("parallel_tool_calls").Bool(true);
  w.Key("temperature").Double(1.0);
  w.Key("tool_choice").String("auto");
  w.Key("tools");
  if (r.tools.empty()) {
    w.BeginArray().EndArray();
  } else {
    w.Raw(r.tools);
  }
  w.Key("top_p").Double(1.0);
  w.Key("background").Bool(r.background);
  w.Key("max_output_tokens").Int(r.max_output_tokens);
  w.Key("max_tool_calls").Null();
  w.Key("previous_response_id");
  WriteOptionalString(w, r.previous_response_id);
  w.Key("prompt").Null();
  w.Key("reasoning").Null();
  w.Key("service_tier").String("auto");
  w.Key("status").String(StatusName(r.status));
  w.Key("store").Bool(r.store);
  w.Key("text").Null();
  w.Key("top_logprobs").Null();
  w.Key("truncation").String("disabled");
  w.Key("usage");
  if (r.usage) {
    WriteUsage(w, *r.usage);
  } else {
    w.Null();
  }
  w.Key("user");
  if (r.user.empty()) {
    w.Null();
  } else {
    w.String(r.user);
  }
  w.Key("input_messages").Null();
  w.Key("output_messages").Null();
  w.EndObject();
}

// One whole event, `event: <type>\ndata: {…}\n\n`: the fields written by `fields(w)`, then
// "sequence_number" (the next of `sequence`) and "type".
template <typename Fields>
void AppendEvent(std::string* out, std::string_view type, int64_t& sequence, Fields&& fields) {
  out->append("event: ");
  out->append(type);
  out->append("\ndata: ");
  JsonWriter w(out);
  w.BeginObject();
  fields(w);
  w.Key("sequence_number").Int(sequence++);
  w.Key("type").String(type);
  w.EndObject();
  out->append("\n\n");
}

}  // namespace

std::string_view StatusName(ResponseStatus status) {
  switch (status) {
    case ResponseStatus::kQueued:
      return "queued";
    case ResponseStatus::kInProgress:
      return "in_progress";
    case ResponseStatus::kCompleted:
      return "completed";
    case ResponseStatus::kIncomplete:
      return "incomplete";
    case ResponseStatus::kCancelled:
      return "cancelled";
    case ResponseStatus::kFailed:
      return "failed";
  }
  return "failed";
}

bool IsUnfinished(ResponseStatus status) {
  return status == ResponseStatus::kQueued || status == ResponseStatus::kInProgress;
}

bool HasOutput(ResponseStatus status) {
  return status == ResponseStatus::kCompleted || status == ResponseStatus::kIncomplete;
}

std::string ResponseJson(const ResponseObject& response) {
  std::string out;
  out.reserve(1024 + response.text.size() + response.tools.size());
  JsonWriter w(&out);
  WriteResponse(w, response);
  return out;
}

std::string DeletedResponseJson(std::string_view id) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("id").String(id);
  w.Key("object").String("response");
  w.Key("deleted").Bool(true);
  w.EndObject();
  return out;
}

void ResponseEventWriter::AppendStart(std::string* out, const ResponseObject& response) {
  for (std::string_view type : {"response.created", "response.in_progress"}) {
    AppendEvent(out, type, sequence_, [&](JsonWriter& w) {
      w.Key("response");
      WriteResponse(w, response);
    });
  }
}

void ResponseEventWriter::AppendOpen(std::string* out) {
  opened_ = true;
  AppendEvent(out, "response.output_item.added", sequence_, [&](JsonWriter& w) {
    w.Key("item");
    WriteMessageItem(w, message_id_, nullptr);
    w.Key("output_index").Int(0);
  });
  AppendEvent(out, "response.content_part.added", sequence_, [&](JsonWriter& w) {
    w.Key("content_index").Int(0);
    w.Key("item_id").String(message_id_);
    w.Key("output_index").Int(0);
    w.Key("part");
    WriteTextPart(w, "");
  });
}

void ResponseEventWriter::AppendDelta(std::string* out, std::string_view delta) {
  if (!opened_) AppendOpen(out);
  AppendEvent(out, "response.output_text.delta", sequence_, [&](JsonWriter& w) {
    w.Key("content_index").Int(0);
    w.Key("delta").String(delta);
    w.Key("item_id").String(message_id_);
    w.Key("logprobs").BeginArray().EndArray();
    w.Key("output_index").Int(0);
  });
}

void ResponseEventWriter::AppendEnd(std::string* out, const ResponseObject& final_response) {
  if (!opened_) AppendOpen(out);
  const std::string& text = final_response.text;
  AppendEvent(out, "response.output_text.done", sequence_, [&](JsonWriter& w) {
    w.Key("content_index").Int(0);
    w.Key("item_id").String(message_id_);
    w.Key("logprobs").BeginArray().EndArray();
    w.Key("output_index").Int(0);
    w.Key("text").String(text);
  });
  AppendEvent(out, "response.content_part.done", sequence_, [&](JsonWriter& w) {
    w.Key("content_index").Int(0);
    w.Key("item_id").String(message_id_);
    w.Key("output_index").Int(0);
    w.Key("part");
    WriteTextPart(w, text);
  });
  AppendEvent(out, "response.output_item.done", sequence_, [&](JsonWriter& w) {
    w.Key("item");
    WriteMessageItem(w, message_id_, &text);
    w.Key("output_index").Int(0);
  });
  AppendEvent(out, "response.completed", sequence_, [&](JsonWriter& w) {
    w.Key("response");
    WriteResponse(w, final_response);
  });
}

}  // namespace warmroute::emulator
