#include "core/request/chat_template.h"

namespace warmroute::request {

std::string RenderChat(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  constexpr std::string_view kHeaderEnd = "\n\n";
  constexpr std::string_view kAssistant = "assistant";
  size_t size = kBeginOfText.size();
  const size_t per_message =
      kStartHeader.size() + kEndHeader.size() + kHeaderEnd.size() + kEndOfTurn.size();
  for (const ChatMessage& message : messages) {
    size += per_message + message.role.size() + message.content.size();
  }
  if (add_generation_prompt) {
    size += kStartHeader.size() + kAssistant.size() + kEndHeader.size() + kHeaderEnd.size();
  }

  std::string out;
  out.reserve(size);
  out.append(kBeginOfText);
  for (const ChatMessage& message : messages) {
    out.append(kStartHeader);
    out.append(message.role);
    out.append(kEndHeader);
    out.append(kHeaderEnd);
    out.append(message.content);
    out.append(kEndOfTurn);
  }
  if (add_generation_prompt) {
    out.append(kStartHeader);
    out.append(kAssistant);
    out.append(kEndHeader);
    out.append(kHeaderEnd);
  }
  return out;
}

}  // namespace warmroute::request
