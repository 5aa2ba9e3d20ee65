#include "emulator/response_store.h"

#include <utility>

#include "common/absl_view.h"

namespace warmroute::emulator {
namespace {

// What a stored response costs beyond its strings (the entry, the index slot, the object's
// fixed fields), and each message beyond its strings: estimates, so that many tiny responses
// still count.
constexpr size_t kEntryOverhead = 512;
constexpr size_t kMessageOverhead = 64;

}  // namespace

size_t StoredBytes(const StoredResponse& stored) {
  const ResponseObject& r = stored.response;
  size_t bytes = kEntryOverhead + r.id.size() + r.model.size() + r.tools.size() + r.user.size() +
                 r.message_id.size() + r.text.size();
  if (r.instructions) bytes += r.instructions->size();
  if (r.previous_response_id) bytes += r.previous_response_id->size();
  for (const request::ChatMessage& message : stored.conversation) {
    bytes += kMessageOverhead + message.role.size() + message.content.size();
  }
  return bytes;
}

bool ResponseStore::Put(StoredResponse stored) {
  if (auto it = index_.find(AbslView(stored.response.id)); it != index_.end()) {
    Remove(it->second);
  }
  const size_t bytes = StoredBytes(stored);
  if (bytes > limits_.max_bytes || limits_.max_responses == 0) return false;
  std::string id = stored.response.id;
  entries_.push_back({.stored = std::move(stored), .bytes = bytes});
  index_.emplace(std::move(id), std::prev(entries_.end()));
  bytes_ += bytes;
  while (index_.size() > limits_.max_responses || bytes_ > limits_.max_bytes) {
    Remove(entries_.begin());  // never the newest: it fits alone
  }
  return true;
}

const StoredResponse* ResponseStore::Find(std::string_view id) const {
  auto it = index_.find(AbslView(id));
  return it == index_.end() ? nullptr : &it->second->stored;
}

bool ResponseStore::Erase(std::string_view id) {
  auto it = index_.find(AbslView(id));
  if (it == index_.end()) return false;
  Remove(it->second);
  return true;
}

void ResponseStore::Remove(List::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(AbslView(it->stored.response.id));
  entries_.erase(it);
}

}  // namespace warmroute::emulator
