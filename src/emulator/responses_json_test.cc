#include "emulator/responses_json.h"

#include <string>
#include <vector>

#include "emulator/sse_test_util.h"
#include "gtest/gtest.h"
#include "simdjson.h"

namespace warmroute::emulator {
namespace {

ResponseObject Completed() {
  ResponseObject r;
  r.id = "resp_1";
  r.created_at = 1700000000;
  r.model = "m";
  r.status = ResponseStatus::kCompleted;
  r.instructions = "Be \"brief\".";
  r.tools = R"([{"type":"function","name":"f"}])";
  r.max_output_tokens = 16;
  r.previous_response_id = "resp_0";
  r.message_id = "msg_1";
  r.text = " mesa flor";
  r.usage = ResponseTokens{.input_tokens = 40, .cached_tokens = 32, .output_tokens = 2};
  return r;
}

simdjson::dom::element Parse(simdjson::dom::parser& parser, const std::string& json) {
  return testing::ParseJson(parser, json);
}

struct Event {
  std::string type;  // the `event:` line
  std::string data;
};

// The named events of an SSE stream: `event: <type>` then `data: <json>`.
std::vector<Event> Events(const std::string& stream) {
  std::vector<Event> events;
  for (const std::string& event : testing::SseEvents(stream)) {
    const size_t newline = event.find('\n');
    EXPECT_EQ(event.rfind("event: ", 0), 0u) << event;
    EXPECT_EQ(event.compare(newline + 1, 6, "data: "), 0) << event;
    events.push_back({event.substr(7, newline - 7), event.substr(newline + 7)});
  }
  return events;
}

TEST(ResponsesJsonTest, ACompletedResponseHasItsMessageAndUsage) {
  simdjson::dom::parser parser;
  const simdjson::dom::element r = Parse(parser, ResponseJson(Completed()));
  EXPECT_EQ(std::string_view(r["id"]), "resp_1");
  EXPECT_EQ(std::string_view(r["object"]), "response");
  EXPECT_EQ(int64_t(r["created_at"]), 1700000000);
  EXPECT_EQ(std::string_view(r["model"]), "m");
  EXPECT_EQ(std::string_view(r["status"]), "completed");
  EXPECT_TRUE(r["incomplete_details"].is_null());
  EXPECT_EQ(std::string_view(r["instructions"]), "Be \"brief\".");
  EXPECT_EQ(std::string_view(r["previous_response_id"]), "resp_0");
  EXPECT_EQ(int64_t(r["max_output_tokens"]), 16);
  EXPECT_FALSE(bool(r["background"]));
  EXPECT_TRUE(bool(r["store"]));
  EXPECT_TRUE(r["user"].is_null());
  EXPECT_EQ(std::string_view(r["tools"].at(0)["name"]), "f");
  const simdjson::dom::element item = r["output"].at(0);
  EXPECT_EQ(std::string_view(item["type"]), "message");
  EXPECT_EQ(std::string_view(item["id"]), "msg_1");
  EXPECT_EQ(std::string_view(item["role"]), "assistant");
  EXPECT_EQ(std::string_view(item["status"]), "completed");
  const simdjson::dom::element part = item["content"].at(0);
  EXPECT_EQ(std::string_view(part["type"]), "output_text");
  EXPECT_EQ(std::string_view(part["text"]), " mesa flor");
  EXPECT_EQ(simdjson::dom::array(part["annotations"]).size(), 0u);
  const simdjson::dom::element usage = r["usage"];
  EXPECT_EQ(int64_t(usage["input_tokens"]), 40);
  EXPECT_EQ(int64_t(usage["input_tokens_details"]["cached_tokens"]), 32);
  EXPECT_EQ(int64_t(usage["output_tokens"]), 2);
  EXPECT_EQ(int64_t(usage["output_tokens_details"]["reasoning_tokens"]), 0);
  EXPECT_EQ(int64_t(usage["total_tokens"]), 42);
}

TEST(ResponsesJsonTest, AnIncompleteResponseSaysWhy) {
  ResponseObject incomplete = Completed();
  incomplete.status = ResponseStatus::kIncomplete;
  simdjson::dom::parser parser;
  const simdjson::dom::element r = Parse(parser, ResponseJson(incomplete));
  EXPECT_EQ(std::string_view(r["status"]), "incomplete");
  EXPECT_EQ(std::string_view(r["incomplete_details"]["reason"]), "max_output_tokens");
  EXPECT_EQ(simdjson::dom::array(r["output"]).size(), 1u);
}

TEST(ResponsesJsonTest, AnUnfinishedResponseHasNoOutputNorUsage) {
  for (ResponseStatus status :
       {ResponseStatus::kQueued, ResponseStatus::kInProgress, ResponseStatus::kCancelled}) {
    ResponseObject r;
    r.id = "resp_2";
    r.status = status;
    r.background = true;
    r.user = "u";
    simdjson::dom::parser parser;
    const simdjson::dom::element doc = Parse(parser, ResponseJson(r));
    EXPECT_EQ(std::string_view(doc["status"]), StatusName(status));
    EXPECT_EQ(simdjson::dom::array(doc["output"]).size(), 0u);
    EXPECT_TRUE(doc["usage"].is_null());
    EXPECT_TRUE(doc["instructions"].is_null());
    EXPECT_TRUE(doc["previous_response_id"].is_null());
    EXPECT_EQ(simdjson::dom::array(doc["tools"]).size(), 0u);
    EXPECT_TRUE(bool(doc["background"]));
    EXPECT_EQ(std::string_view(doc["user"]), "u");
  }
  EXPECT_TRUE(IsUnfinished(ResponseStatus::kQueued));
  EXPECT_TRUE(IsUnfinished(ResponseStatus::kInProgress));
  EXPECT_FALSE(IsUnfinished(ResponseStatus::kCancelled));
  EXPECT_FALSE(IsUnfinished(ResponseStatus::kCompleted));
}

TEST(ResponsesJsonTest, DeletedResponse) {
  simdjson::dom::parser parser;
  const simdjson::dom::element r = Parse(parser, DeletedResponseJson("resp_\"x"));
  EXPECT_EQ(std::string_view(r["id"]), "resp_\"x");
  EXPECT_EQ(std::string_view(r["object"]), "response");
  EXPECT_TRUE(bool(r["deleted"]));
}

TEST(ResponseEventWriterTest, EventsComeInVllmsOrderNumberedFromZero) {
  ResponseObject response = Completed();
  response.status = ResponseStatus::kInProgress;
  response.text.clear();
  response.usage.reset();
  ResponseEventWriter writer("msg_1");
  std::string out;
  writer.AppendStart(&out, response);
  writer.AppendDelta(&out, " mesa");
  writer.AppendDelta(&out, " \"flor\"");
  response.status = ResponseStatus::kCompleted;
  response.text = " mesa \"flor\"";
  response.usage = ResponseTokens{.input_tokens = 5, .cached_tokens = 0, .output_tokens = 2};
  writer.AppendEnd(&out, response);
  const std::vector<Event> events = Events(out);
  const std::vector<std::string> want = {
      "response.created",           "response.in_progress",
      "response.output_item.added", "response.content_part.added",
      "response.output_text.delta", "response.output_text.delta",
      "response.output_text.done",  "response.content_part.done",
      "response.output_item.done",  "response.completed"};
  ASSERT_EQ(events.size(), want.size());
  EXPECT_EQ(writer.next_sequence_number(), static_cast<int64_t>(want.size()));
  simdjson::dom::parser parser;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].type, want[i]);
    const simdjson::dom::element e = Parse(parser, events[i].data);
    EXPECT_EQ(std::string_view(e["type"]), want[i]);
    EXPECT_EQ(int64_t(e["sequence_number"]), static_cast<int64_t>(i));
  }
  simdjson::dom::element e = Parse(parser, events[0].data);
  EXPECT_EQ(std::string_view(e["response"]["status"]), "in_progress");
  EXPECT_EQ(std::string_view(e["response"]["id"]), "resp_1");
  e = Parse(parser, events[2].data);
  EXPECT_EQ(std::string_view(e["item"]["status"]), "in_progress");
  EXPECT_EQ(simdjson::dom::array(e["item"]["content"]).size(), 0u);
  e = Parse(parser, events[3].data);
  EXPECT_EQ(std::string_view(e["part"]["text"]), "");
  EXPECT_EQ(std::string_view(e["item_id"]), "msg_1");
  e = Parse(parser, events[5].data);
  EXPECT_EQ(std::string_view(e["delta"]), " \"flor\"");
  EXPECT_EQ(int64_t(e["output_index"]), 0);
  EXPECT_EQ(int64_t(e["content_index"]), 0);
  e = Parse(parser, events[6].data);
  EXPECT_EQ(std::string_view(e["text"]), " mesa \"flor\"");
  e = Parse(parser, events[8].data);
  EXPECT_EQ(std::string_view(e["item"]["content"].at(0)["text"]), " mesa \"flor\"");
  EXPECT_EQ(std::string_view(e["item"]["status"]), "completed");
  e = Parse(parser, events[9].data);
  EXPECT_EQ(std::string_view(e["response"]["status"]), "completed");
  EXPECT_EQ(int64_t(e["response"]["usage"]["output_tokens"]), 2);
  EXPECT_EQ(std::string_view(e["response"]["output"].at(0)["id"]), "msg_1");
}

TEST(ResponseEventWriterTest, AnEndWithoutDeltasStillOpensTheItem) {
  ResponseEventWriter writer("msg_2");
  std::string out;
  writer.AppendEnd(&out, Completed());
  const std::vector<Event> events = Events(out);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0].type, "response.output_item.added");
  EXPECT_EQ(events[5].type, "response.completed");
}

}  // namespace
}  // namespace warmroute::emulator
