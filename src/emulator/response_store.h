// The stored responses of one replica (the Responses API's `store`, vLLM's response and message
// stores): each response object with the conversation it answered, for GET /v1/responses/{id}
// and for a follow-up's previous_response_id. Bounded in count and in bytes: while either bound
// is exceeded the oldest response (the least recently written) is evicted.
//
// Usage:
//   ResponseStore store({.max_responses = 10000, .max_bytes = 64 << 20});
//   store.Put({.response = object, .conversation = messages});
//   if (const StoredResponse* r = store.Find("resp_1")) ...;
//   store.Erase("resp_1");
//
// Thread-safety: none; used on the replica's thread.
#pragma once

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/request/inference_request.h"
#include "emulator/responses_json.h"

namespace warmroute::emulator {

struct StoredResponse {
  ResponseObject response;
  // The messages the response answered: the conversation before it (from its own
  // previous_response_id), its instructions and its input, as the prompt rendered them.
  std::vector<request::ChatMessage> conversation;
};

struct ResponseStoreLimits {
  size_t max_responses = 10000;
  size_t max_bytes = size_t{64} << 20;
};

// The bytes a stored response is counted as: its strings and messages plus a fixed overhead.
size_t StoredBytes(const StoredResponse& stored);

class ResponseStore {
 public:
  explicit ResponseStore(ResponseStoreLimits limits) : limits_(limits) {}
  ResponseStore(const ResponseStore&) = delete;
  ResponseStore& operator=(const ResponseStore&) = delete;

  // Stores `stored` under its response's id as the newest, replacing one with that id, then
  // evicts the oldest others while over a limit. Returns false, keeping nothing under that id,
  // when it alone is over max_bytes.
  bool Put(StoredResponse stored);

  // The response stored under `id`, or null (never stored, deleted or evicted). The pointer is
  // valid until the next Put or Erase.
  const StoredResponse* Find(std::string_view id) const;

  // Removes the response stored under `id`; false if there is none.
  bool Erase(std::string_view id);

  size_t size() const { return index_.size(); }
  size_t bytes() const { return bytes_; }
  const ResponseStoreLimits& limits() const { return limits_; }

 private:
  struct Entry {
    StoredResponse stored;
    size_t bytes = 0;
  };
  using List = std::list<Entry>;  // oldest first

  void Remove(List::iterator it);

  ResponseStoreLimits limits_;
  List entries_;
  absl::flat_hash_map<std::string, List::iterator> index_;
  size_t bytes_ = 0;
};

}  // namespace warmroute::emulator
