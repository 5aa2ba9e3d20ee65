// Hand-made msgpack for the kv_events tests: payloads in shapes the emulator's encoder does not
// produce (SGLang's, vLLM's map-form batch, bytes hashes) and broken ones.
#pragma once

#include <msgpuck.h>

#include <array>
#include <optional>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine/kv_event.h"

namespace warmroute::kv_events::testing {

class Msgpack {
 public:
  Msgpack& Array(uint32_t n) { return Put(mp_encode_array(buf_.data(), n)); }
  Msgpack& Map(uint32_t n) { return Put(mp_encode_map(buf_.data(), n)); }
  Msgpack& Nil() { return Put(mp_encode_nil(buf_.data())); }
  Msgpack& Double(double v) { return Put(mp_encode_double(buf_.data(), v)); }
  Msgpack& Uint(uint64_t v) { return Put(mp_encode_uint(buf_.data(), v)); }
  Msgpack& Int(int64_t v) {
    return v >= 0 ? Uint(static_cast<uint64_t>(v)) : Put(mp_encode_int(buf_.data(), v));
  }
  Msgpack& Str(std::string_view s) {
    Put(mp_encode_strl(buf_.data(), static_cast<uint32_t>(s.size())));
    out_.append(s);
    return *this;
  }
  Msgpack& Bin(std::string_view s) {
    Put(mp_encode_binl(buf_.data(), static_cast<uint32_t>(s.size())));
    out_.append(s);
    return *this;
  }
  Msgpack& Ints(const std::vector<int64_t>& values) {
    Array(static_cast<uint32_t>(values.size()));
    for (int64_t v : values) Int(v);
    return *this;
  }
  Msgpack& Raw(std::string_view bytes) {
    out_.append(bytes);
    return *this;
  }
  const std::string& bytes() const { return out_; }

 private:
  Msgpack& Put(const char* end) {
    out_.append(buf_.data(), static_cast<size_t>(end - buf_.data()));
    return *this;
  }
  std::string out_;
  std::array<char, 16> buf_{};
};

inline engine::KvEvent Stored(std::vector<uint64_t> hashes, std::optional<uint64_t> parent,
                              std::vector<int32_t> tokens, int block_size) {
  engine::KvEvent e;
  e.kind = engine::KvEvent::Kind::kBlockStored;
  e.block_hashes = std::move(hashes);
  e.parent_block_hash = parent;
  e.token_ids = std::move(tokens);
  e.block_size = block_size;
  return e;
}
inline engine::KvEvent Removed(std::vector<uint64_t> hashes) {
  engine::KvEvent e;
  e.kind = engine::KvEvent::Kind::kBlockRemoved;
  e.block_hashes = std::move(hashes);
  return e;
}
inline engine::KvEvent Cleared() {
  engine::KvEvent e;
  e.kind = engine::KvEvent::Kind::kAllBlocksCleared;
  return e;
}

}  // namespace warmroute::kv_events::testing
