#include "core/request/chat_template.h"

namespace warmroute::request {

std::string RenderChat(const std::vector<ChatMessage>& messages, std::string_view tools,
                       bool add_generation_prompt) {
  size_t size = 0;
  ForEachChatPiece(messages, tools, add_generation_prompt,
                   [&size](std::string_view piece) { size += piece.size(); });
  std::string out;
  out.reserve(size);
  ForEachChatPiece(messages, tools, add_generation_prompt,
                   [&out](std::string_view piece) { out.append(piece); });
  return out;
}

std::string RenderChat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  return RenderChat(messages, std::string_view(), add_generation_prompt);
}

}  // namespace warmroute::request
