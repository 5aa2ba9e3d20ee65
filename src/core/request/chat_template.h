// A Llama-3-style chat template, the format vLLM applies for Llama 3.x instruct models:
//
//   <|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n{content}<|eot_id|>
//   <|start_header_id|>user<|end_header_id|>\n\n{content}<|eot_id|>
//   <|start_header_id|>assistant<|end_header_id|>\n\n            <- generation prompt
//
// Content is not trimmed, so a previous answer sent back verbatim renders to exactly the text
// (and tokens) the engine generated: multi-turn conversations hit the cached generated blocks.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/request/inference_request.h"

namespace warmroute::request {

inline constexpr std::string_view kBeginOfText = "<|begin_of_text|>";
inline constexpr std::string_view kStartHeader = "<|start_header_id|>";
inline constexpr std::string_view kEndHeader = "<|end_header_id|>";
inline constexpr std::string_view kEndOfTurn = "<|eot_id|>";

// Calls piece(std::string_view) with each piece of the rendered text in order: their
// concatenation is RenderChat's result. For readers of the text that need not build it (the
// prefix key hashes it as it comes).
template <typename Piece>
void ForEachChatPiece(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                      Piece&& piece) {
  constexpr std::string_view kHeaderEnd = "\n\n";
  piece(kBeginOfText);
  for (const ChatMessage& message : messages) {
    piece(kStartHeader);
    piece(std::string_view(message.role));
    piece(kEndHeader);
    piece(kHeaderEnd);
    piece(std::string_view(message.content));
    piece(kEndOfTurn);
  }
  if (add_generation_prompt) {
    piece(kStartHeader);
    piece(std::string_view("assistant"));
    piece(kEndHeader);
    piece(kHeaderEnd);
  }
}

// Renders `messages` as above; appends the assistant header when add_generation_prompt.
std::string RenderChat(const std::vector<ChatMessage>& messages, bool add_generation_prompt);

}  // namespace warmroute::request
