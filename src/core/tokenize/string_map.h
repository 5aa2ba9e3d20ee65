// StringMap<V>: a hash map keyed by std::string that std::string_view keys look up without a
// copy (Debian's Abseil has its own string_view, so its default hash does not take ours).
//
// Thread-safety: as absl::flat_hash_map.
#pragma once

#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"

namespace warmroute::tokenize {

struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return absl::Hash<absl::string_view>{}(absl::string_view(s.data(), s.size()));
  }
};

struct StringViewEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

template <typename V>
using StringMap = absl::flat_hash_map<std::string, V, StringViewHash, StringViewEq>;

}  // namespace warmroute::tokenize
