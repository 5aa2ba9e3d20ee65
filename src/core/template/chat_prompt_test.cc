// vLLM's rules for what a chat template is handed (chat_prompt.h), seen through templates that
// print their variables.
#include "core/template/chat_prompt.h"

#include "core/template/json_value.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::jinja {
namespace {

using ::testing::HasSubstr;

request::InferenceRequest Chat(std::string_view body) {
  absl::StatusOr<request::InferenceRequest> r =
      request::ParseInferenceRequest(request::Endpoint::kChatCompletions, body);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : request::InferenceRequest{};
}

ModelTemplate Model(std::string_view source) {
  auto tokens = std::make_shared<Dict>();
  tokens->Set("bos_token", Value::String("<s>"));
  absl::StatusOr<ModelTemplate> m = ModelTemplate::Create(source, Value::MakeDict(tokens));
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

absl::StatusOr<std::string> Prompt(std::string_view body, std::string_view source) {
  return RenderChatPrompt(Chat(body), Model(source), {});
}

TEST(ChatPromptTest, MessagesAsVllmBuildsThem) {
  const char* body = R"({"messages": [
      {"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "name": "bot", "reasoning_content": "hmm",
       "tool_calls": [{"type": "function", "id": "c1",
                       "function": {"name": "f", "arguments": "{\"x\": 1}"}},
                      {"id": "c2", "type": "function",
                       "function": {"arguments": "not json", "name": "g"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "out"}]},
      {"role": "user", "content": "q"}]})";
  EXPECT_EQ(
      *Prompt(body, "{{ messages|tojson }}"),
      R"([{"role": "system", "content": "a\nb"}, )"
      R"({"role": "assistant", "content": "", "tool_calls": [)"
      R"({"id": "c1", "function": {"arguments": {"x": 1}, "name": "f"}, "type": "function"}, )"
      R"({"id": "c2", "function": {"arguments": {}, "name": "g"}, "type": "function"}], )"
      R"("reasoning": "hmm", "reasoning_content": "hmm", "name": "bot"}, )"
      R"({"role": "tool", "content": "out", "tool_call_id": "c1"}, )"
      R"({"role": "user", "content": "q"}])");
}

TEST(ChatPromptTest, TemplatesThatLoopOverContentGetParts) {
  const char* source =
      "{% for m in messages %}{{ m.content|tojson }}{% for p in m['content'] %}{% endfor %}"
      "{% endfor %}";
  EXPECT_EQ(*Prompt(R"({"messages": [
      {"role": "user", "content": "one"},
      {"role": "user", "content": [{"type": "text", "text": "x\ny"}, {"type": "text", "text": "z"}]},
      {"role": "assistant", "content": null},
      {"role": "tool", "content": [{"type": "text", "text": "t"}]}]})",
                    source),
            R"([{"type": "text", "text": "one"}])"
            R"([{"type": "text", "text": "x\ny"}, {"type": "text", "text": "z"}])"
            R"([])"
            R"("t")");
}

TEST(ChatPromptTest, ToolsAreTheValidatedModelsDump) {
  const char* body = R"({"messages": [{"role": "user", "content": "hi"}], "tools": [
      {"function": {"parameters": {"type": "object"}, "name": "a", "extra": 1}, "type": "function"},
      {"type": "function", "function": {"name": "b", "strict": true}, "defer_loading": false}]})";
  EXPECT_EQ(
      *Prompt(body, "{{ tools|tojson }}"),
      R"([{"type": "function", "function": {"name": "a", "description": null, )"
      R"("parameters": {"type": "object"}}}, )"
      R"({"type": "function", "function": {"name": "b", "description": null, )"
      R"("parameters": null, "strict": true, "defer_loading": false}, "defer_loading": false}])");
  EXPECT_EQ(*Prompt(R"({"messages": [{"role": "user", "content": "hi"}]})",
                    "{{ tools is none }} {{ documents is none }} {{ bos_token }}"),
            "True True <s>");
  EXPECT_FALSE(Prompt(R"({"messages": [{"role": "user", "content": "hi"}], "tools": [
      {"type": "function", "function": {"description": "no name"}}]})",
                      "x")
                   .ok());
}

TEST(ChatPromptTest, KwargsReachTheTemplateOnlyWhenItReadsThem) {
  const char* source =
      "{{ add_generation_prompt }} {{ enable_thinking }} {{ custom is defined }} "
      "{{ reasoning_effort }}";
  EXPECT_EQ(*Prompt(R"({"messages": [{"role": "user", "content": "hi"}],
                        "add_generation_prompt": false,
                        "chat_template_kwargs": {"enable_thinking": false, "unread": 1,
                                                 "add_generation_prompt": true}})",
                    source),
            "False False False ");
  EXPECT_EQ(*Prompt(R"({"messages": [{"role": "user", "content": "hi"}],
                        "reasoning_effort": "none"})",
                    source),
            "True False False none");
  EXPECT_EQ(*Prompt(R"({"messages": [{"role": "user", "content": "hi"}],
                        "reasoning_effort": "high",
                        "chat_template_kwargs": {"enable_thinking": false}})",
                    source),
            "True False False high");
  absl::StatusOr<std::string> refused = Prompt(
      R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"tokenize": true}})",
      source);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("unexpected chat template kwargs"));
}

TEST(ChatPromptTest, RefusesWhatItDoesNotRender) {
  request::InferenceRequest continued =
      Chat(R"({"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": false,
               "continue_final_message": true})");
  EXPECT_EQ(RenderChatPrompt(continued, Model("x"), {}).status().code(),
            absl::StatusCode::kUnimplemented);
  request::InferenceRequest completion = *request::ParseInferenceRequest(
      request::Endpoint::kCompletions, std::string_view(R"({"prompt": "hi"})"));
  EXPECT_FALSE(RenderChatPrompt(completion, Model("x"), {}).ok());
}

TEST(ModelTemplateTest, ReadsTokenizerConfig) {
  absl::StatusOr<ModelTemplate> m = ModelTemplate::FromTokenizerConfig(R"({
      "bos_token": {"__type": "AddedToken", "content": "<bos>"}, "eos_token": "<eos>",
      "pad_token": null, "additional_special_tokens": ["<a>", {"content": "<b>"}],
      "chat_template": [{"name": "default", "template": "D{{ bos_token }}{{ eos_token }}"},
                        {"name": "tool_use", "template": "T{{ additional_special_tokens }}"}]})");
  ASSERT_TRUE(m.ok()) << m.status();
  const request::InferenceRequest plain =
      Chat(R"({"messages": [{"role": "user", "content": "x"}]})");
  const request::InferenceRequest tools = Chat(
      R"({"messages": [{"role": "user", "content": "x"}],
          "tools": [{"type": "function", "function": {"name": "f"}}]})");
  EXPECT_EQ(*RenderChatPrompt(plain, *m, {}), "D<bos><eos>");
  EXPECT_EQ(*RenderChatPrompt(tools, *m, {}), "T['<a>', '<b>']");
  EXPECT_FALSE(ModelTemplate::FromTokenizerConfig(R"({"eos_token": "x"})").ok());
  // Integers beyond 64 bits, as Llama 3's model_max_length, load (Python reads them).
  absl::StatusOr<ModelTemplate> big = ModelTemplate::FromTokenizerConfig(
      R"({"model_max_length": 1000000000000000019884624838656, "n": -99999999999999999999,
          "f": 0.12345678901234567890123, "g": 1.5e300, "s": "12345678901234567890123",
          "bos_token": "<s>", "chat_template": "{{ bos_token }}"})");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->special_tokens().dict().Find("bos_token")->string_value(), "<s>");
  EXPECT_FALSE(ModelTemplate::FromTokenizerConfig(R"({"chat_template": "{% if %}"})").ok());
  EXPECT_FALSE(ModelTemplate::FromTokenizerConfig("[1]").ok());
}

// RenderChatPrompt borrows the messages' text from the request and reserves the output: the same
// text as the template rendered over ChatTemplateVariables (which copies), whatever the reserve.
TEST(ChatPromptTest, RendersAsTheTemplateOverItsVariables) {
  const char* source =
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "[{{ loop.index }}/{{ loop.length }}:{{ m.role }}:{{ m.content ~ '|' + m.content[:3] }}]"
      "{% if loop.previtem is defined %}<{{ loop.previtem.role }}>{% endif %}"
      "{% if m.content.startswith('é') %}!{% endif %}{% endfor %}{{ ns.n }}";
  const ModelTemplate model = Model(source);
  for (const char* body : {R"({"messages": [{"role": "user", "content": "hi"}]})",
                           R"({"messages": [{"role": "system", "content": "éàü long system text"},
                                            {"role": "user", "content": ""},
                                            {"role": "assistant", "content": "a\nb"}]})"}) {
    const request::InferenceRequest request = Chat(body);
    absl::StatusOr<Value> vars = ChatTemplateVariables(request, model);
    ASSERT_TRUE(vars.ok()) << vars.status();
    absl::StatusOr<std::string> expected = model.For(false).Render(*vars, {});
    ASSERT_TRUE(expected.ok()) << expected.status();
    EXPECT_THAT(*expected, HasSubstr("[1/"));
    for (const size_t reserve : {size_t{0}, size_t{1}, size_t{1} << 20}) {
      absl::StatusOr<std::string> prompt =
          RenderChatPrompt(request, model, {.expected_bytes = reserve});
      ASSERT_TRUE(prompt.ok()) << prompt.status();
      EXPECT_EQ(*prompt, *expected) << body;
    }
  }
}

}  // namespace
}  // namespace warmroute::jinja
