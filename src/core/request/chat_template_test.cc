#include "core/request/chat_template.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace warmroute::request {
namespace {

TEST(ChatTemplateTest, RendersSystemAndUserWithGenerationPrompt) {
  const std::vector<ChatMessage> messages = {{"system", "You are terse."}, {"user", "Hi!"}};
  EXPECT_EQ(RenderChat(messages, true),
            "<|begin_of_text|>"
            "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateTest, OmitsGenerationPromptWhenNotAsked) {
  const std::vector<ChatMessage> messages = {{"user", "Hi!"}};
  EXPECT_EQ(RenderChat(messages, false),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>");
}

TEST(ChatTemplateTest, KeepsContentVerbatim) {
  const std::vector<ChatMessage> messages = {
      {"user", "  padded \n"}, {"assistant", " mesa flor"}, {"tool", ""}};
  EXPECT_EQ(RenderChat(messages, true),
            "<|begin_of_text|>"
            "<|start_header_id|>user<|end_header_id|>\n\n  padded \n<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n mesa flor<|eot_id|>"
            "<|start_header_id|>tool<|end_header_id|>\n\n<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateTest, NoMessagesRendersOnlyTheFrame) {
  EXPECT_EQ(RenderChat({}, false), "<|begin_of_text|>");
  EXPECT_EQ(RenderChat({}, true),
            "<|begin_of_text|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateTest, NextTurnExtendsThePreviousPromptAndAnswer) {
  // A multi-turn conversation's prompt starts with the previous prompt followed by the answer:
  // the property that makes the engine's cached generated blocks reusable.
  std::vector<ChatMessage> messages = {{"user", "Name a word."}};
  const std::string first = RenderChat(messages, true);
  messages.push_back({"assistant", " mesa"});
  messages.push_back({"user", "Another."});
  const std::string second = RenderChat(messages, true);
  EXPECT_EQ(second.substr(0, first.size() + 5), first + " mesa");
}

TEST(ChatTemplateTest, ToolsEndTheSystemMessage) {
  const std::vector<ChatMessage> messages = {{"system", "Be brief."}, {"user", "Hi"}};
  EXPECT_EQ(RenderChat(messages, R"([{"name":"f"}])", false),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.\n\n"
            R"(Tools: [{"name":"f"}])"
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
  // An empty system message takes the tools without a separator.
  EXPECT_EQ(RenderChat({{"system", ""}}, "[]", false),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nTools: []<|eot_id|>");
}

TEST(ChatTemplateTest, ToolsWithoutASystemMessageComeFirstInOneOfTheirOwn) {
  EXPECT_EQ(RenderChat({{"user", "Hi"}}, "[1]", true),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nTools: [1]<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(RenderChat({}, "[1]", false),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nTools: [1]<|eot_id|>");
}

TEST(ChatTemplateTest, NoToolsRendersAsWithoutThem) {
  const std::vector<ChatMessage> messages = {{"system", "S"}, {"user", "U"}};
  EXPECT_EQ(RenderChat(messages, "", true), RenderChat(messages, true));
}

}  // namespace
}  // namespace warmroute::request
