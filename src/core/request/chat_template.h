// A Llama-3-style chat template, the format vLLM applies for Llama 3.x instruct models:
//
//   <|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n{content}<|eot_id|>
//   <|start_header_id|>user<|end_header_id|>\n\n{content}<|eot_id|>
//   <|start_header_id|>assistant<|end_header_id|>\n\n            <- generation prompt
//
// Content is not trimmed, so a previous answer sent back verbatim renders to exactly the text
// (and tokens) the engine generated: multi-turn conversations hit the cached generated blocks.
//
// Tools (the JSON text of a `tools` list) go in the system part, as chat templates put them: at
// the end of the first message's content when it is a system message, else as a system message
// of their own before the first message:
//
//   <|start_header_id|>system<|end_header_id|>\n\n{content}\n\nTools: {tools}<|eot_id|>
//   <|start_header_id|>system<|end_header_id|>\n\nTools: {tools}<|eot_id|>   (no system message)
//
// so requests with the same instructions and tools share that whole prefix.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/request/inference_request.h"

namespace warmroute::request {

inline constexpr std::string_view kBeginOfText = "<|begin_of_text|>";
inline constexpr std::string_view kStartHeader = "<|start_header_id|>";
inline constexpr std::string_view kEndHeader = "<|end_header_id|>";
inline constexpr std::string_view kEndOfTurn = "<|eot_id|>";
inline constexpr std::string_view kToolsLabel = "Tools: ";

// Calls piece(std::string_view) with each piece of the rendered text in order: their
// concatenation is RenderChat's result. For readers of the text that need not build it (the
// prefix key hashes it as it comes). `tools` may be empty (no tools).
template <typename Piece>
void ForEachChatPiece(const std::vector<ChatMessage>& messages, std::string_view tools,
                      bool add_generation_prompt, Piece&& piece) {
  static constexpr std::string_view kHeaderEnd = "\n\n";
  const auto header = [&piece](std::string_view role) {
    piece(kStartHeader);
    piece(role);
    piece(kEndHeader);
    piece(kHeaderEnd);
  };
  piece(kBeginOfText);
  const bool tools_in_first = !tools.empty() && !messages.empty() && messages[0].role == "system";
  if (!tools.empty() && !tools_in_first) {
    header("system");
    piece(kToolsLabel);
    piece(tools);
    piece(kEndOfTurn);
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& message = messages[i];
    header(message.role);
    piece(std::string_view(message.content));
    if (i == 0 && tools_in_first) {
      if (!message.content.empty()) piece(kHeaderEnd);
      piece(kToolsLabel);
      piece(tools);
    }
    piece(kEndOfTurn);
  }
  if (add_generation_prompt) header("assistant");
}

// The same without tools.
template <typename Piece>
void ForEachChatPiece(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                      Piece&& piece) {
  ForEachChatPiece(messages, std::string_view(), add_generation_prompt, std::forward<Piece>(piece));
}

// Renders `messages` and `tools` as above; appends the assistant header when
// add_generation_prompt.
std::string RenderChat(const std::vector<ChatMessage>& messages, std::string_view tools,
                       bool add_generation_prompt);
// The same without tools.
std::string RenderChat(const std::vector<ChatMessage>& messages, bool add_generation_prompt);

}  // namespace warmroute::request
