// Builds the message list of a request being parsed into an InferenceRequest that may hold an
// earlier parse: each added message reuses the element (and its strings' memory) that the earlier
// parse left at that index, and the list is cut to the messages added when the builder goes.
//
// Usage:
//   {
//     MessageList list(request.messages);
//     list.Add("system").content.assign(instructions);
//   }  // request.messages now holds exactly the messages added
//
// Internal to core/request. Thread-safety: none; one parse at a time.
#pragma once

#include <string_view>
#include <vector>

#include "core/request/inference_request.h"

namespace warmroute::request {

class MessageList {
 public:
  explicit MessageList(std::vector<ChatMessage>& messages) : messages_(messages) {}
  ~MessageList() { messages_.resize(used_); }
  MessageList(const MessageList&) = delete;
  MessageList& operator=(const MessageList&) = delete;

  // A new last message of `role` with empty content.
  ChatMessage& Add(std::string_view role) {
    if (used_ == messages_.size()) messages_.emplace_back();
    ChatMessage& message = messages_[used_++];
    message.role.assign(role);
    message.content.clear();
    message.content_form = ChatMessage::ContentForm::kString;
    message.part_sizes.clear();
    message.name.reset();
    message.tool_call_id.reset();
    message.tool_calls.clear();
    message.reasoning.reset();
    return message;
  }

 private:
  std::vector<ChatMessage>& messages_;
  size_t used_ = 0;
};

}  // namespace warmroute::request
