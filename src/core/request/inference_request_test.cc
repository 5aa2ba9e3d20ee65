#include "core/request/inference_request.h"

#include <string>
#include <vector>

#include "common/rng.h"
#include "common/status.h"
#include "core/request/parse_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warmroute::request {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::warmroute::request::testing::ExpectInvalid;

absl::StatusOr<InferenceRequest> Chat(std::string_view body) {
  return ParseInferenceRequest(Endpoint::kChatCompletions, body);
}

absl::StatusOr<InferenceRequest> Completion(std::string_view body) {
  return ParseInferenceRequest(Endpoint::kCompletions, body);
}

// A chat body with one user message and `extra` fields spliced in, e.g. R"("stream": true)".
std::string ChatWith(std::string_view extra) {
  std::string body = R"({"model": "m", "messages": [{"role": "user", "content": "Hi"}]})";
  if (!extra.empty()) body.insert(body.size() - 1, ", " + std::string(extra));
  return body;
}

// ---- chat: success shapes ----

TEST(InferenceRequestTest, ParsesMinimalChat) {
  absl::StatusOr<InferenceRequest> req = Chat(ChatWith(""));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->endpoint, Endpoint::kChatCompletions);
  EXPECT_EQ(req->model, "m");
  ASSERT_EQ(req->messages.size(), 1u);
  EXPECT_EQ(req->messages[0].role, "user");
  EXPECT_EQ(req->messages[0].content, "Hi");
  EXPECT_FALSE(req->max_tokens.has_value());
  EXPECT_FALSE(req->stream);
  EXPECT_FALSE(req->include_usage);
  EXPECT_TRUE(req->cache_salt.empty());
  EXPECT_FALSE(req->ignore_eos);
  EXPECT_TRUE(req->user.empty());
  EXPECT_FALSE(req->seed.has_value());
  EXPECT_FALSE(req->has_token_prompt);
}

TEST(InferenceRequestTest, AStringWithSpareCapacityIsParsedInPlaceWhateverFollowsItsEnd) {
  // Stale bytes past the end (a longer body's tail, unbalanced) must not change the result.
  std::string body = R"({"model":"m","prompt":"hi","max_tokens":3})";
  const size_t size = body.size();
  body.reserve(size + kParsePadding + 16);
  body.append(R"(,"prompt":"stale"}}}"unterminated)");
  body.resize(size);
  ASSERT_GE(body.capacity() - body.size(), kParsePadding);
  absl::StatusOr<InferenceRequest> in_place = ParseInferenceRequest(Endpoint::kCompletions, body);
  ASSERT_TRUE(in_place.ok()) << in_place.status();
  EXPECT_EQ(in_place->prompt, "hi");
  EXPECT_EQ(in_place->max_tokens, 3);
  // Too little room: copied, same result. A malformed body is refused either way.
  const std::string tight = R"({"model":"m","prompt":"hi","max_tokens":3})";
  absl::StatusOr<InferenceRequest> copied = ParseInferenceRequest(Endpoint::kCompletions, tight);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(copied->prompt, "hi");
  std::string bad = R"({"model":"m","prompt":"hi")";
  bad.reserve(bad.size() + kParsePadding);
  EXPECT_FALSE(ParseInferenceRequest(Endpoint::kCompletions, bad).ok());
}

TEST(InferenceRequestTest, ParsesEveryChatField) {
  absl::StatusOr<InferenceRequest> req = Chat(R"({
      "model": "llama", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": null, "tool_calls": []},
        {"role": "user", "content": "next", "name": "bob"}],
      "max_tokens": 7, "stream": true, "stream_options": {"include_usage": false},
      "cache_salt": "tenant-1", "ignore_eos": true, "user": "u1", "seed": 42,
      "temperature": 0.7, "unknown": {"nested": [1, 2]}})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->model, "llama");
  ASSERT_EQ(req->messages.size(), 4u);
  EXPECT_EQ(req->messages[0].content, "Be brief.");
  EXPECT_EQ(req->messages[1].content, "a\nb");
  EXPECT_EQ(req->messages[2].role, "assistant");
  EXPECT_EQ(req->messages[2].content, "");
  EXPECT_EQ(req->messages[3].content, "next");
  EXPECT_EQ(req->max_tokens, 7);
  EXPECT_TRUE(req->stream);
  EXPECT_FALSE(req->include_usage);
  EXPECT_EQ(req->cache_salt, "tenant-1");
  EXPECT_TRUE(req->ignore_eos);
  EXPECT_EQ(req->user, "u1");
  EXPECT_EQ(req->seed, 42u);
}

TEST(InferenceRequestTest, ModelIsOptional) {
  absl::StatusOr<InferenceRequest> req =
      Chat(R"({"messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->model, "");
  req = Chat(R"({"model": null, "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->model, "");
}

TEST(InferenceRequestTest, MaxCompletionTokensWinsOverMaxTokens) {
  absl::StatusOr<InferenceRequest> req =
      Chat(ChatWith(R"("max_tokens": 5, "max_completion_tokens": 9)"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->max_tokens, 9);
  req = Chat(ChatWith(R"("max_completion_tokens": 9, "max_tokens": 5)"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->max_tokens, 9);
  req = Chat(ChatWith(R"("max_completion_tokens": null, "max_tokens": 5)"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->max_tokens, 5);
  req = Chat(ChatWith(R"("max_tokens": null)"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_FALSE(req->max_tokens.has_value());
}

TEST(InferenceRequestTest, AcceptsIntegralFloatsAndLargeIntegers) {
  absl::StatusOr<InferenceRequest> req = Chat(ChatWith(R"("max_tokens": 16.0, "seed": -1)"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->max_tokens, 16);
  EXPECT_EQ(req->seed, std::numeric_limits<uint64_t>::max());
  req = Chat(ChatWith(R"("max_tokens": 9223372036854775807, "seed": 9223372036854775807)"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->max_tokens, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(req->seed, 9223372036854775807u);
}

TEST(InferenceRequestTest, StreamOptionsIncludeUsageDefaultsToTrue) {
  absl::StatusOr<InferenceRequest> req = Chat(ChatWith(R"("stream": true, "stream_options": {})"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_TRUE(req->include_usage);
  req = Chat(ChatWith(R"("stream": true, "stream_options": {"include_usage": true})"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_TRUE(req->include_usage);
  req = Chat(ChatWith(R"("stream": true, "stream_options": null)"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_FALSE(req->include_usage);
}

TEST(InferenceRequestTest, EmptyOrNullStreamOptionsAllowedWithoutStream) {
  // vLLM only rejects truthy stream_options without stream=true.
  EXPECT_TRUE(Chat(ChatWith(R"("stream_options": {})")).ok());
  EXPECT_TRUE(Chat(ChatWith(R"("stream_options": null, "stream": false)")).ok());
}

TEST(InferenceRequestTest, NullOptionalFieldsAreUnset) {
  absl::StatusOr<InferenceRequest> req = Chat(ChatWith(
      R"("stream": null, "cache_salt": null, "ignore_eos": null, "user": null, "seed": null)"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_FALSE(req->stream);
  EXPECT_TRUE(req->cache_salt.empty());
  EXPECT_FALSE(req->ignore_eos);
  EXPECT_TRUE(req->user.empty());
  EXPECT_FALSE(req->seed.has_value());
}

TEST(InferenceRequestTest, MissingContentIsEmpty) {
  absl::StatusOr<InferenceRequest> req = Chat(R"({"messages": [{"role": "assistant"}]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->messages[0].content, "");
}

TEST(InferenceRequestTest, KeepsUnicodeAndEscapes) {
  absl::StatusOr<InferenceRequest> req =
      Chat(R"({"messages": [{"role": "user", "content": "caf\u00e9 \"q\"\n\t<|eot_id|>"}]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->messages[0].content, "caf\xc3\xa9 \"q\"\n\t<|eot_id|>");
}

TEST(InferenceRequestTest, LastDuplicateKeyWins) {
  absl::StatusOr<InferenceRequest> req = Chat(ChatWith(R"("model": "second")"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->model, "second");
}

TEST(InferenceRequestTest, ChatIgnoresPromptAndCompletionIgnoresMessages) {
  absl::StatusOr<InferenceRequest> req = Chat(ChatWith(R"("prompt": 5)"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_TRUE(req->prompt.empty());
  req = Completion(R"({"prompt": "p", "messages": 5, "max_completion_tokens": "x"})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_TRUE(req->messages.empty());
}

// ---- completions: success shapes ----

TEST(InferenceRequestTest, ParsesTextPrompt) {
  absl::StatusOr<InferenceRequest> req =
      Completion(R"({"model": "m", "prompt": "Once upon", "max_tokens": 3})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->endpoint, Endpoint::kCompletions);
  EXPECT_EQ(req->prompt, "Once upon");
  EXPECT_FALSE(req->has_token_prompt);
  EXPECT_EQ(req->max_tokens, 3);
  EXPECT_TRUE(req->messages.empty());
}

TEST(InferenceRequestTest, ParsesSingleStringArrayPrompt) {
  absl::StatusOr<InferenceRequest> req = Completion(R"({"prompt": ["Once upon"]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->prompt, "Once upon");
  EXPECT_FALSE(req->has_token_prompt);
}

TEST(InferenceRequestTest, ParsesTokenPrompt) {
  absl::StatusOr<InferenceRequest> req = Completion(R"({"prompt": [0, 1, 128000, 2147483647]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_TRUE(req->has_token_prompt);
  EXPECT_THAT(req->prompt_token_ids, ElementsAre(0, 1, 128000, 2147483647));
  EXPECT_TRUE(req->prompt.empty());
}

TEST(InferenceRequestTest, AddSpecialTokensIsReadWhenGivenAndUnsetOtherwise) {
  absl::StatusOr<InferenceRequest> req = Completion(R"({"prompt": "x"})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_FALSE(req->add_special_tokens.has_value());
  req = Completion(R"({"prompt": "x", "add_special_tokens": false})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->add_special_tokens, false);
  req = Chat(ChatWith(R"("add_special_tokens": true)"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->add_special_tokens, true);
  req = Chat(ChatWith(R"("add_special_tokens": null)"));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_FALSE(req->add_special_tokens.has_value());
  ExpectInvalid(Completion(R"({"prompt": "x", "add_special_tokens": 1})"), "add_special_tokens");
}

// ---- errors: the body ----

TEST(InferenceRequestTest, RejectsMalformedJson) {
  for (std::string_view body : {"", "{", R"({"messages": [)", "{\"model\": \"m\"", "nope",
                                R"({"a": 1} trailing)", R"({"a": "\ud800"})"}) {
    absl::StatusOr<InferenceRequest> req = Chat(body);
    ASSERT_FALSE(req.ok()) << body;
    EXPECT_EQ(req.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(std::string(req.status().message()), HasSubstr("Invalid JSON")) << body;
    EXPECT_EQ(ParamOf(req.status()), std::nullopt) << body;
  }
}

TEST(InferenceRequestTest, RejectsTruncatedBody) {
  const std::string full = ChatWith(R"("max_tokens": 10, "stream": true)");
  for (size_t size = 0; size < full.size(); ++size) {
    EXPECT_FALSE(Chat(full.substr(0, size)).ok()) << size;
  }
  EXPECT_TRUE(Chat(full).ok());
}

TEST(InferenceRequestTest, RejectsNonObjectBody) {
  for (std::string_view body : {"[]", "\"text\"", "42", "null", "true"}) {
    absl::StatusOr<InferenceRequest> req = Chat(body);
    ASSERT_FALSE(req.ok()) << body;
    EXPECT_EQ(req.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(req.status().message()), HasSubstr("must be a JSON object"));
  }
}

TEST(InferenceRequestTest, IntegersBeyond64BitsAreInvalidJson) {
  absl::StatusOr<InferenceRequest> req =
      Chat(ChatWith(R"("max_tokens": 100000000000000000000000)"));
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(req.status().message()), HasSubstr("Invalid JSON"));
}

// ---- errors: fields ----

TEST(InferenceRequestTest, RejectsNonStringModel) {
  ExpectInvalid(Chat(ChatWith(R"("model": 3)")), "model", "'model' must be a string");
  ExpectInvalid(Completion(R"({"model": ["m"], "prompt": "p"})"), "model");
}

TEST(InferenceRequestTest, RejectsMissingOrEmptyMessages) {
  ExpectInvalid(Chat(R"({"model": "m"})"), "messages", "required");
  ExpectInvalid(Chat(R"({"messages": []})"), "messages", "at least one");
  ExpectInvalid(Chat(R"({"messages": "hi"})"), "messages", "must be an array, got a string");
  ExpectInvalid(Chat(R"({"messages": null})"), "messages");
  ExpectInvalid(Chat(R"({"messages": {"role": "user"}})"), "messages");
}

TEST(InferenceRequestTest, RejectsBadMessages) {
  ExpectInvalid(Chat(R"({"messages": ["hi"]})"), "messages[0]", "must be an object");
  ExpectInvalid(Chat(R"({"messages": [{"role": "user", "content": "a"}, 7]})"), "messages[1]");
  ExpectInvalid(Chat(R"({"messages": [{"content": "a"}]})"), "messages[0].role", "required");
  ExpectInvalid(Chat(R"({"messages": [{"role": 1, "content": "a"}]})"), "messages[0].role",
                "must be a string");
  ExpectInvalid(Chat(R"({"messages": [{"role": null, "content": "a"}]})"), "messages[0].role");
  ExpectInvalid(Chat(R"({"messages": [{"role": "user", "content": 5}]})"), "messages[0].content");
  ExpectInvalid(Chat(R"({"messages": [{"role": "user", "content": {"text": "a"}}]})"),
                "messages[0].content");
}

TEST(InferenceRequestTest, RejectsNonTextContentParts) {
  ExpectInvalid(Chat(R"({"messages": [{"role": "user", "content": "ok"}, {"role": "user",
                "content": [{"type": "text", "text": "a"},
                            {"type": "image_url", "image_url": {"url": "x"}}]}]})"),
                "messages[1].content", "only text content is supported");
  ExpectInvalid(Chat(R"({"messages": [{"role": "user", "content": ["a"]}]})"),
                "messages[0].content[0]", "content part");
  ExpectInvalid(Chat(R"({"messages": [{"role": "user", "content": [{"text": "a"}]}]})"),
                "messages[0].content", "type' is required");
  ExpectInvalid(Chat(R"({"messages": [{"role": "user", "content": [{"type": 1}]}]})"),
                "messages[0].content");
  ExpectInvalid(Chat(R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})"),
                "messages[0].content", "text' must be a string");
  ExpectInvalid(
      Chat(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]})"),
      "messages[0].content");
}

TEST(InferenceRequestTest, ReadsNAndRejectsItBelowOne) {
  EXPECT_EQ(Chat(ChatWith(R"("n": 3)"))->n, 3);
  EXPECT_EQ(Chat(ChatWith(R"("n": null)"))->n, std::nullopt);
  EXPECT_EQ(Chat(ChatWith(R"("max_tokens": 3)"))->n, std::nullopt);
  ExpectInvalid(Chat(ChatWith(R"("n": 0)")), "n", "n must be at least 1, got 0.");
  ExpectInvalid(Chat(ChatWith(R"("n": "2")")), "n", "must be an integer or null, got a string");
  ExpectInvalid(Completion(R"({"prompt": "p", "n": 1.5})"), "n", "must be an integer");
}

TEST(InferenceRequestTest, RejectsBadMaxTokens) {
  ExpectInvalid(Chat(ChatWith(R"("max_tokens": 0)")), "max_tokens",
                "max_tokens must be at least 1, got 0.");
  ExpectInvalid(Chat(ChatWith(R"("max_tokens": -5)")), "max_tokens", "at least 1");
  ExpectInvalid(Chat(ChatWith(R"("max_tokens": "10")")), "max_tokens",
                "must be an integer or null, got a string");
  ExpectInvalid(Chat(ChatWith(R"("max_tokens": 1.5)")), "max_tokens", "must be an integer");
  ExpectInvalid(Chat(ChatWith(R"("max_tokens": true)")), "max_tokens");
  ExpectInvalid(Chat(ChatWith(R"("max_tokens": [1])")), "max_tokens");
  ExpectInvalid(Chat(ChatWith(R"("max_tokens": 18446744073709551615)")), "max_tokens", "too large");
  ExpectInvalid(Chat(ChatWith(R"("max_tokens": 1e300)")), "max_tokens");
  ExpectInvalid(Chat(ChatWith(R"("max_completion_tokens": 0)")), "max_completion_tokens",
                "at least 1");
  ExpectInvalid(Chat(ChatWith(R"("max_completion_tokens": {})")), "max_completion_tokens");
  ExpectInvalid(Completion(R"({"prompt": "p", "max_tokens": 0})"), "max_tokens");
}

TEST(InferenceRequestTest, RejectsWrongTypesForScalarFields) {
  ExpectInvalid(Chat(ChatWith(R"("stream": "yes")")), "stream", "must be a boolean");
  ExpectInvalid(Chat(ChatWith(R"("stream": 1)")), "stream");
  ExpectInvalid(Chat(ChatWith(R"("ignore_eos": 0)")), "ignore_eos", "must be a boolean");
  ExpectInvalid(Chat(ChatWith(R"("user": 12)")), "user", "must be a string");
  ExpectInvalid(Chat(ChatWith(R"("seed": "1")")), "seed", "must be an integer");
  ExpectInvalid(Chat(ChatWith(R"("seed": 0.5)")), "seed");
  ExpectInvalid(Chat(ChatWith(R"("seed": 18446744073709551615)")), "seed", "64-bit");
  ExpectInvalid(Completion(R"({"prompt": "p", "seed": []})"), "seed");
}

TEST(InferenceRequestTest, RejectsBadCacheSalt) {
  ExpectInvalid(Chat(ChatWith(R"("cache_salt": "")")), "cache_salt",
                "Parameter 'cache_salt' must be a non-empty string if provided.");
  ExpectInvalid(Chat(ChatWith(R"("cache_salt": 5)")), "cache_salt");
  ExpectInvalid(Completion(R"({"prompt": "p", "cache_salt": {}})"), "cache_salt");
}

TEST(InferenceRequestTest, RejectsBadStreamOptions) {
  ExpectInvalid(Chat(ChatWith(R"("stream_options": {"include_usage": true})")), "stream_options",
                "Stream options can only be defined when `stream=True`.");
  ExpectInvalid(Chat(ChatWith(R"("stream": false, "stream_options": {"include_usage": false})")),
                "stream_options", "stream=True");
  ExpectInvalid(Chat(ChatWith(R"("stream": true, "stream_options": true)")), "stream_options",
                "must be an object or null");
  ExpectInvalid(Chat(ChatWith(R"("stream": true, "stream_options": {"include_usage": "yes"})")),
                "stream_options.include_usage", "must be a boolean");
  ExpectInvalid(Completion(R"({"prompt": "p", "stream_options": {"include_usage": true}})"),
                "stream_options", "stream=True");
}

TEST(InferenceRequestTest, RejectsBadPrompts) {
  ExpectInvalid(Completion(R"({"model": "m"})"), "prompt", "required");
  ExpectInvalid(Completion(R"({"prompt": ""})"), "prompt", "Prompt cannot be empty");
  ExpectInvalid(Completion(R"({"prompt": []})"), "prompt", "Prompt cannot be empty");
  ExpectInvalid(Completion(R"({"prompt": [""]})"), "prompt", "Prompt cannot be empty");
  ExpectInvalid(Completion(R"({"prompt": null})"), "prompt");
  ExpectInvalid(Completion(R"({"prompt": 5})"), "prompt", "got an integer");
  ExpectInvalid(Completion(R"({"prompt": {"text": "a"}})"), "prompt");
  ExpectInvalid(Completion(R"({"prompt": ["a", "b"]})"), "prompt", "only one prompt");
  ExpectInvalid(Completion(R"({"prompt": [[1, 2]]})"), "prompt", "prompt[0] must be a token id");
  ExpectInvalid(Completion(R"({"prompt": [1, "a"]})"), "prompt", "prompt[1]");
  ExpectInvalid(Completion(R"({"prompt": [1, null]})"), "prompt", "prompt[1]");
}

TEST(InferenceRequestTest, RejectsTokenIdsOutOfRange) {
  ExpectInvalid(Completion(R"({"prompt": [1, -1]})"), "prompt", "prompt[1] is not a token id");
  ExpectInvalid(Completion(R"({"prompt": [2147483648]})"), "prompt", "[0, 2^31)");
  ExpectInvalid(Completion(R"({"prompt": [18446744073709551615]})"), "prompt");
  ExpectInvalid(Completion(R"({"prompt": [1.5]})"), "prompt");
}

// ---- RenderPrompt ----

TEST(InferenceRequestTest, RendersChatWithTemplate) {
  absl::StatusOr<InferenceRequest> req = Chat(
      R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(RenderPrompt(*req),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(InferenceRequestTest, RendersCompletionPromptAsGiven) {
  absl::StatusOr<InferenceRequest> req = Completion(R"({"prompt": "  raw text\n"})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(RenderPrompt(*req), "  raw text\n");
}

TEST(InferenceRequestDeathTest, RenderingATokenPromptCrashes) {
  absl::StatusOr<InferenceRequest> req = Completion(R"({"prompt": [1, 2]})");
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_DEATH(RenderPrompt(*req), "token prompt");
}

TEST(InferenceRequestTest, ParsesManyBodiesInARow) {
  // The per-thread parser is reused: earlier results must not alias later parses.
  absl::StatusOr<InferenceRequest> first = Chat(ChatWith(R"("user": "first")"));
  absl::StatusOr<InferenceRequest> second =
      Chat(std::string(5000, ' ') + ChatWith(R"("user": "second")"));
  absl::StatusOr<InferenceRequest> small = Completion(R"({"prompt": "x"})");
  ASSERT_TRUE(first.ok() && second.ok() && small.ok());
  EXPECT_EQ(first->user, "first");
  EXPECT_EQ(first->messages[0].content, "Hi");
  EXPECT_EQ(second->user, "second");
  EXPECT_EQ(small->prompt, "x");
}

TEST(InferenceRequestTest, CorruptedBodiesNeverCrash) {
  const std::string valid = ChatWith(
      R"("stream": true, "stream_options": {"include_usage": true}, "max_tokens": 5, "seed": 3,)"
      R"( "cache_salt": "s", "prompt": [1, 2], "user": "u")");
  ASSERT_TRUE(Chat(valid).ok());
  const std::string alphabet = "{}[]\",:0123456789-.eEtrufalsn \\x\x80";
  Rng rng(11);
  for (int round = 0; round < 3000; ++round) {
    std::string body = valid;
    const int edits = 1 + static_cast<int>(rng.UniformInt(4));
    for (int i = 0; i < edits; ++i) {
      body[rng.UniformInt(body.size())] = alphabet[rng.UniformInt(alphabet.size())];
    }
    for (Endpoint endpoint : {Endpoint::kChatCompletions, Endpoint::kCompletions}) {
      absl::StatusOr<InferenceRequest> req = ParseInferenceRequest(endpoint, body);
      if (!req.ok()) {
        EXPECT_EQ(req.status().code(), absl::StatusCode::kInvalidArgument) << body;
      } else if (!req->has_token_prompt) {
        EXPECT_FALSE(RenderPrompt(*req).empty());
      }
    }
  }
}

// ParseInferenceRequestInto, parsing request after request into one object (the gateway's
// per-thread scratch), gives what a new parse gives, whatever the object held before: more or
// fewer messages, the other endpoint, other optional fields, or an error's partial parse.
TEST(InferenceRequestTest, ParsingIntoAnEarlierRequestGivesANewParse) {
  const std::vector<std::string> bodies = {
      ChatWith(""),
      ChatWith(R"("stream": true, "stream_options": {}, "cache_salt": "s", "user": "u")"),
      ChatWith(R"("max_tokens": 5, "seed": -3, "ignore_eos": true)"),
      R"({"messages": [{"role": "system", "content": "Be brief and exact in every answer."},
          {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
          {"role": "assistant", "content": null}, {"role": "user"}], "max_completion_tokens": 2})",
      R"({"model": "a-rather-long-model-name-beyond-sso", "messages": [{"content": "x", "role": "tool"}]})",
      R"({"model": "m", "prompt": "a completion prompt longer than fifteen bytes", "max_tokens": 3})",
      R"({"prompt": [1, 2, 3], "stream": true, "stream_options": {"include_usage": false}})",
      R"({"prompt": ["one"], "user": "someone-with-a-long-user-name"})",
      R"({"messages": [{"role": "assistant", "tool_calls": []}]})",  // no content
      R"({"model": "m", "messages": [{"role": "user", "content": "Hi"}], "stream": 3})",  // error
      R"({"model": "m", "messages": [{"role": "user", "content": "Hi"}, {"content": "x"}]})",
      R"({"model": "m", "messages": [{"role": "user", "content": "Hi"}, 7]})",  // error
      R"({"model": "m", "messages": [)",                                        // invalid JSON
  };
  Rng rng(5);
  InferenceRequest reused;
  for (int round = 0; round < 2000; ++round) {
    const std::string& body = bodies[rng.UniformInt(bodies.size())];
    const Endpoint endpoint =
        rng.UniformInt(3) == 0 ? Endpoint::kCompletions : Endpoint::kChatCompletions;
    const absl::StatusOr<InferenceRequest> fresh = ParseInferenceRequest(endpoint, body);
    const absl::Status into = ParseInferenceRequestInto(endpoint, body, reused);
    ASSERT_EQ(into, fresh.status()) << body;
    if (fresh.ok()) {
      ASSERT_EQ(reused, *fresh) << body;
    }
  }
}

TEST(InferenceRequestTest, ReleaseGivesBackTheMemoryOfALargeRequest) {
  const std::string text(100000, 'x');
  InferenceRequest reused;
  for (const std::string& body :
       {R"({"model": "m", "prompt": ")" + text + R"(", "user": ")" + text + R"("})",
        R"({"model": "m", "messages": [{"role": "user", "content": ")" + text + R"("}]})"}) {
    ASSERT_TRUE(ParseInferenceRequestInto(Endpoint::kCompletions, body, reused).ok() ||
                ParseInferenceRequestInto(Endpoint::kChatCompletions, body, reused).ok());
    ReleaseInferenceRequest(reused);
    EXPECT_EQ(reused, InferenceRequest());
    EXPECT_LT(reused.prompt.capacity(), 100u);
    EXPECT_LT(reused.user.capacity(), 100u);
    EXPECT_EQ(reused.messages.capacity(), 0u);
  }
}

}  // namespace
}  // namespace warmroute::request
