#include "core/kv_events/event_decoder.h"

#include <msgpuck.h>

#include <cstring>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

// Two passes. Validate() walks the whole payload once with bounds checks (msgpuck's mp_check is
// not used: its element counter is an int, so a declared array of 2^31 elements overflows it and
// the check passes), and also bounds the nesting depth and rejects ext values. After it, every
// header and every string or element the payload declares lies inside it, so the decoding pass
// uses msgpuck's unchecked mp_decode_* and only checks types.

namespace warmroute::kv_events {
namespace {

absl::Status Malformed(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("KV-event payload: ", std::string(what)));
}

// The size of the value whose first byte is `c`: whole for a scalar, the header for a string,
// bytes, array or map. (msgpuck's mp_check_*l assert, when assertions are on, instead of
// reporting a header cut at the payload's end; mp_next would step past it.)
size_t HeadSize(uint8_t c) {
  switch (c) {
    case 0xcc:  // uint 8
    case 0xd0:  // int 8
    case 0xd9:  // str 8
    case 0xc4:  // bin 8
      return 2;
    case 0xcd:  // uint 16
    case 0xd1:  // int 16
    case 0xda:  // str 16
    case 0xc5:  // bin 16
    case 0xdc:  // array 16
    case 0xde:  // map 16
      return 3;
    case 0xce:  // uint 32
    case 0xd2:  // int 32
    case 0xca:  // float 32
    case 0xdb:  // str 32
    case 0xc6:  // bin 32
    case 0xdd:  // array 32
    case 0xdf:  // map 32
      return 5;
    case 0xcf:  // uint 64
    case 0xd3:  // int 64
    case 0xcb:  // float 64
      return 9;
    default:  // fixint, nil, bool, fixstr, fixarray, fixmap
      return 1;
  }
}

absl::Status Validate(const char* cur, const char* end) {
  // pending[d]: values still to read at depth d. Each needs at least one byte, so a count larger
  // than the bytes left is rejected at its header (no absurd count survives).
  uint64_t pending[kMaxDepth + 1];
  int depth = 0;
  pending[0] = 1;
  while (true) {
    while (depth > 0 && pending[depth] == 0) --depth;
    if (pending[depth] == 0) break;
    --pending[depth];
    if (cur >= end) return Malformed("truncated");
    uint64_t children = 0;
    bool container = false;
    const size_t head = HeadSize(static_cast<uint8_t>(*cur));
    if (head > static_cast<size_t>(end - cur)) return Malformed("truncated");
    switch (mp_typeof(*cur)) {
      case MP_NIL:
      case MP_BOOL:
      case MP_UINT:
      case MP_INT:
      case MP_FLOAT:
      case MP_DOUBLE:
        cur += head;
        break;
      case MP_STR:
      case MP_BIN: {
        const uint32_t len =
            mp_typeof(*cur) == MP_STR ? mp_decode_strl(&cur) : mp_decode_binl(&cur);
        if (len > static_cast<uint64_t>(end - cur)) return Malformed("truncated string or bytes");
        cur += len;
        break;
      }
      case MP_ARRAY:
        children = mp_decode_array(&cur);
        container = true;
        break;
      case MP_MAP:
        children = 2 * uint64_t{mp_decode_map(&cur)};
        container = true;
        break;
      case MP_EXT:
      default:
        return Malformed("unsupported msgpack type (ext)");
    }
    if (container && children > 0) {
      if (children > static_cast<uint64_t>(end - cur)) {
        return Malformed("container declares more elements than the payload has bytes");
      }
      if (depth == kMaxDepth) return Malformed("nested too deeply");
      pending[++depth] = children;
    }
  }
  if (cur != end) return Malformed("trailing bytes after the batch");
  return absl::OkStatus();
}

// The decoding pass over a validated payload.
class Reader {
 public:
  explicit Reader(const char* cur) : cur_(cur) {}

  mp_type type() const { return mp_typeof(*cur_); }
  bool Nil() {
    if (type() != MP_NIL) return false;
    mp_decode_nil(&cur_);
    return true;
  }
  void Skip() { mp_next(&cur_); }

  bool Array(uint32_t& n) {
    if (type() != MP_ARRAY) return false;
    n = mp_decode_array(&cur_);
    return true;
  }
  bool Map(uint32_t& n) {
    if (type() != MP_MAP) return false;
    n = mp_decode_map(&cur_);
    return true;
  }
  bool Str(std::string_view& s) {
    if (type() != MP_STR) return false;
    uint32_t len = 0;
    const char* p = mp_decode_str(&cur_, &len);
    s = std::string_view(p, len);
    return true;
  }
  bool Int(int64_t& v) {
    if (type() == MP_UINT) {
      const uint64_t u = mp_decode_uint(&cur_);
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      v = static_cast<int64_t>(u);
      return true;
    }
    if (type() == MP_INT) {
      v = mp_decode_int(&cur_);
      return true;
    }
    return false;
  }
  bool Number(double& v) {
    switch (type()) {
      case MP_DOUBLE:
        v = mp_decode_double(&cur_);
        return true;
      case MP_FLOAT:
        v = mp_decode_float(&cur_);
        return true;
      case MP_UINT:
        v = static_cast<double>(mp_decode_uint(&cur_));
        return true;
      case MP_INT:
        v = static_cast<double>(mp_decode_int(&cur_));
        return true;
      default:
        return false;
    }
  }
  // A block hash: unsigned int, signed int (its 64 bits), or bytes (BlockHashFromBytes).
  bool Hash(uint64_t& h) {
    switch (type()) {
      case MP_UINT:
        h = mp_decode_uint(&cur_);
        return true;
      case MP_INT:
        h = static_cast<uint64_t>(mp_decode_int(&cur_));
        return true;
      case MP_BIN: {
        uint32_t len = 0;
        const char* p = mp_decode_bin(&cur_, &len);
        h = BlockHashFromBytes(std::string_view(p, len));
        return true;
      }
      default:
        return false;
    }
  }

 private:
  const char* cur_;
};

absl::Status EventError(size_t index, std::string_view what) {
  return Malformed(absl::StrCat("event ", index, ": ", std::string(what)));
}

// Field decoders shared by both event forms. `index` names the event in errors.
class EventDecoder {
 public:
  EventDecoder(Reader& r, EventBatch& batch, Event& event, size_t index)
      : r_(r), batch_(batch), e_(event), index_(index) {}

  absl::Status Hashes() {
    uint32_t n = 0;
    if (!r_.Array(n)) return Error("block_hashes is not an array");
    e_.hashes_begin = static_cast<uint32_t>(batch_.block_hashes.size());
    e_.hashes_count = n;
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t h = 0;
      if (!r_.Hash(h)) return Error("a block hash is not an integer or bytes");
      batch_.block_hashes.push_back(h);
    }
    return absl::OkStatus();
  }
  absl::Status Parent() {
    e_.has_parent = false;
    if (r_.Nil()) return absl::OkStatus();
    if (!r_.Hash(e_.parent_hash)) return Error("parent_block_hash is not an integer, bytes or nil");
    e_.has_parent = true;
    return absl::OkStatus();
  }
  absl::Status Tokens() {
    uint32_t n = 0;
    if (!r_.Array(n)) return Error("token_ids is not an array");
    e_.tokens_begin = static_cast<uint32_t>(batch_.token_ids.size());
    e_.tokens_count = n;
    for (uint32_t i = 0; i < n; ++i) {
      int64_t t = 0;
      if (!r_.Int(t) || t < 0 || t > std::numeric_limits<int32_t>::max()) {
        return Error("a token id is not an integer in [0, 2^31)");
      }
      batch_.token_ids.push_back(static_cast<int32_t>(t));
    }
    return absl::OkStatus();
  }
  absl::Status BlockSize() {
    int64_t v = 0;
    if (!r_.Int(v) || v < 1 || v > kMaxBlockSize) {
      return Error(absl::StrCat("block_size is not an integer in [1, ", kMaxBlockSize, "]"));
    }
    e_.block_size = static_cast<int32_t>(v);
    return absl::OkStatus();
  }
  absl::Status OptionalInt(std::optional<int64_t>& out, std::string_view name) {
    out.reset();
    if (r_.Nil()) return absl::OkStatus();
    int64_t v = 0;
    if (!r_.Int(v)) return Error(absl::StrCat(std::string(name), " is not an integer or nil"));
    out = v;
    return absl::OkStatus();
  }
  absl::Status OptionalStr(std::optional<std::string_view>& out, std::string_view name) {
    out.reset();
    if (r_.Nil()) return absl::OkStatus();
    std::string_view s;
    if (!r_.Str(s)) return Error(absl::StrCat(std::string(name), " is not a string or nil"));
    out = s;
    return absl::OkStatus();
  }
  absl::Status MediumField() {
    e_.medium = Medium::kUnspecified;
    if (r_.Nil()) return absl::OkStatus();
    std::string_view s;
    if (!r_.Str(s)) return Error("medium is not a string or nil");
    if (s == "GPU") {
      e_.medium = Medium::kGpu;
    } else if (s == "CPU" || s == "CPU_PINNED") {
      e_.medium = Medium::kCpu;
    } else if (s == "DISK") {
      e_.medium = Medium::kDisk;
    } else {
      e_.medium = Medium::kOther;
    }
    return absl::OkStatus();
  }
  absl::Status ExtraKeys() {
    e_.extra_keys = Event::ExtraKeys::kAbsent;
    if (r_.Nil()) return absl::OkStatus();
    uint32_t n = 0;
    if (!r_.Array(n)) return Error("extra_keys is not an array or nil");
    for (uint32_t i = 0; i < n; ++i) {
      if (i > 0) {
        r_.Skip();
        continue;
      }
      if (r_.Nil()) {
        e_.extra_keys = Event::ExtraKeys::kFirstNil;
        continue;
      }
      uint32_t m = 0;
      if (!r_.Array(m)) return Error("an extra_keys entry is not an array or nil");
      e_.extra_keys = Event::ExtraKeys::kFirstTuple;
      e_.strings_begin = static_cast<uint32_t>(batch_.first_block_strings.size());
      for (uint32_t j = 0; j < m; ++j) {
        std::string_view s;
        if (r_.Str(s)) {
          batch_.first_block_strings.push_back(s);
          ++e_.strings_count;
        } else {
          r_.Skip();
        }
      }
    }
    return absl::OkStatus();
  }
  // SGLang's metadata struct: {"cache_salt": str}.
  absl::Status Metadata() {
    uint32_t n = 0;
    r_.Map(n);
    for (uint32_t i = 0; i < n; ++i) {
      std::string_view key;
      if (!r_.Str(key)) return Error("a metadata key is not a string");
      if (key == "cache_salt") {
        if (absl::Status s = OptionalStr(e_.cache_salt, "cache_salt"); !s.ok()) return s;
      } else {
        r_.Skip();
      }
    }
    return absl::OkStatus();
  }
  // The checks that need the whole event.
  absl::Status Finish(bool have_hashes, bool have_tokens, bool have_block_size) {
    switch (e_.kind) {
      case EventKind::kBlockStored:
        if (!have_hashes || !have_tokens || !have_block_size) {
          return Error("BlockStored lacks block_hashes, token_ids or block_size");
        }
        if (uint64_t{e_.hashes_count} * static_cast<uint64_t>(e_.block_size) != e_.tokens_count) {
          return Error(absl::StrCat("BlockStored has ", e_.tokens_count, " token ids for ",
                                    e_.hashes_count, " blocks of ", e_.block_size));
        }
        return absl::OkStatus();
      case EventKind::kBlockRemoved:
        if (!have_hashes) return Error("BlockRemoved lacks block_hashes");
        return absl::OkStatus();
      case EventKind::kAllBlocksCleared:
        return absl::OkStatus();
    }
    return absl::OkStatus();
  }
  absl::Status Error(std::string_view what) const { return EventError(index_, what); }

 private:
  Reader& r_;
  EventBatch& batch_;
  Event& e_;
  size_t index_;
};

bool KindOf(std::string_view tag, EventKind& kind) {
  if (tag == "BlockStored") {
    kind = EventKind::kBlockStored;
  } else if (tag == "BlockRemoved") {
    kind = EventKind::kBlockRemoved;
  } else if (tag == "AllBlocksCleared") {
    kind = EventKind::kAllBlocksCleared;
  } else {
    return false;
  }
  return true;
}

#define WR_RETURN_IF_ERROR(expr)              \
  do {                                        \
    if (absl::Status s_ = (expr); !s_.ok()) { \
      return s_;                              \
    }                                         \
  } while (0)

// ["BlockStored", hashes, parent, tokens, block_size, lora_id?, medium?, lora_name|metadata?,
//  extra_keys?, group_idx?, ...] and the shorter two.
absl::Status DecodeArrayEvent(Reader& r, uint32_t n, EventBatch& batch, Event& e, size_t index) {
  EventDecoder d(r, batch, e, index);
  std::string_view tag;
  if (n == 0 || !r.Str(tag)) return d.Error("array event does not start with its tag");
  if (!KindOf(tag, e.kind)) return d.Error(absl::StrCat("unknown event type '", std::string(tag), "'"));
  uint32_t i = 1;
  bool hashes = false, tokens = false, block_size = false;
  switch (e.kind) {
    case EventKind::kBlockStored:
      if (n < 5) return d.Error("BlockStored array has fewer than 5 elements");
      WR_RETURN_IF_ERROR(d.Hashes());
      WR_RETURN_IF_ERROR(d.Parent());
      WR_RETURN_IF_ERROR(d.Tokens());
      WR_RETURN_IF_ERROR(d.BlockSize());
      hashes = tokens = block_size = true;
      i = 5;
      if (i < n) {
        WR_RETURN_IF_ERROR(d.OptionalInt(e.lora_id, "lora_id"));
        ++i;
      }
      if (i < n) {
        WR_RETURN_IF_ERROR(d.MediumField());
        ++i;
      }
      if (i < n) {
        if (r.type() == MP_MAP) {
          WR_RETURN_IF_ERROR(d.Metadata());
        } else {
          WR_RETURN_IF_ERROR(d.OptionalStr(e.lora_name, "lora_name"));
        }
        ++i;
      }
      if (i < n) {
        WR_RETURN_IF_ERROR(d.ExtraKeys());
        ++i;
      }
      if (i < n) {
        WR_RETURN_IF_ERROR(d.OptionalInt(e.group_idx, "group_idx"));
        ++i;
      }
      break;
    case EventKind::kBlockRemoved:
      if (n < 2) return d.Error("BlockRemoved array has fewer than 2 elements");
      WR_RETURN_IF_ERROR(d.Hashes());
      hashes = true;
      i = 2;
      if (i < n) {
        WR_RETURN_IF_ERROR(d.MediumField());
        ++i;
      }
      if (i < n) {
        WR_RETURN_IF_ERROR(d.OptionalInt(e.group_idx, "group_idx"));
        ++i;
      }
      break;
    case EventKind::kAllBlocksCleared:
      break;
  }
  for (; i < n; ++i) r.Skip();  // fields of later versions
  return d.Finish(hashes, tokens, block_size);
}

// {"type": tag, field: value, ...} in any order.
absl::Status DecodeMapEvent(Reader& r, uint32_t n, EventBatch& batch, Event& e, size_t index) {
  EventDecoder d(r, batch, e, index);
  bool typed = false, hashes = false, tokens = false, block_size = false;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!r.Str(key)) return d.Error("a map event's key is not a string");
    if (key == "type") {
      std::string_view tag;
      if (!r.Str(tag)) return d.Error("type is not a string");
      if (!KindOf(tag, e.kind)) return d.Error(absl::StrCat("unknown event type '", std::string(tag), "'"));
      typed = true;
    } else if (key == "block_hashes") {
      if (hashes) return d.Error("block_hashes given twice");
      WR_RETURN_IF_ERROR(d.Hashes());
      hashes = true;
    } else if (key == "parent_block_hash") {
      WR_RETURN_IF_ERROR(d.Parent());
    } else if (key == "token_ids") {
      if (tokens) return d.Error("token_ids given twice");
      WR_RETURN_IF_ERROR(d.Tokens());
      tokens = true;
    } else if (key == "block_size") {
      WR_RETURN_IF_ERROR(d.BlockSize());
      block_size = true;
    } else if (key == "lora_id") {
      WR_RETURN_IF_ERROR(d.OptionalInt(e.lora_id, "lora_id"));
    } else if (key == "lora_name") {
      WR_RETURN_IF_ERROR(d.OptionalStr(e.lora_name, "lora_name"));
    } else if (key == "medium") {
      WR_RETURN_IF_ERROR(d.MediumField());
    } else if (key == "extra_keys") {
      if (e.extra_keys != Event::ExtraKeys::kAbsent) return d.Error("extra_keys given twice");
      WR_RETURN_IF_ERROR(d.ExtraKeys());
    } else if (key == "group_idx") {
      WR_RETURN_IF_ERROR(d.OptionalInt(e.group_idx, "group_idx"));
    } else if (key == "cache_salt") {
      WR_RETURN_IF_ERROR(d.OptionalStr(e.cache_salt, "cache_salt"));
    } else {
      r.Skip();
    }
  }
  if (!typed) return d.Error("map event has no type");
  return d.Finish(hashes, tokens, block_size);
}

absl::Status DecodeEvents(Reader& r, EventBatch& out) {
  uint32_t n = 0;
  if (!r.Array(n)) return Malformed("events is not an array");
  out.events.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    Event& e = out.events[i];
    e = Event{};
    uint32_t m = 0;
    if (r.Array(m)) {
      WR_RETURN_IF_ERROR(DecodeArrayEvent(r, m, out, e, i));
    } else if (r.Map(m)) {
      WR_RETURN_IF_ERROR(DecodeMapEvent(r, m, out, e, i));
    } else {
      return EventError(i, "is neither an array nor a map");
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeRank(Reader& r, EventBatch& out) {
  out.dp_rank.reset();
  if (r.Nil()) return absl::OkStatus();
  int64_t rank = 0;
  if (!r.Int(rank)) return Malformed("data_parallel_rank is not an integer or nil");
  out.dp_rank = rank;
  return absl::OkStatus();
}

}  // namespace

void EventBatch::clear() {
  ts = 0;
  dp_rank.reset();
  events.clear();
  block_hashes.clear();
  token_ids.clear();
  first_block_strings.clear();
}

uint64_t BlockHashFromBytes(std::string_view bytes) {
  const size_t take = bytes.size() < 8 ? bytes.size() : 8;
  uint64_t h = 0;
  for (size_t i = bytes.size() - take; i < bytes.size(); ++i) {
    h = h << 8 | static_cast<unsigned char>(bytes[i]);
  }
  return h;
}

absl::StatusOr<uint64_t> DecodeSequence(std::string_view frame) {
  if (frame.size() != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("KV-event sequence frame has ", frame.size(), " bytes, not 8"));
  }
  uint64_t seq = 0;
  for (char c : frame) seq = seq << 8 | static_cast<unsigned char>(c);
  return seq;
}

absl::Status DecodeEventBatch(std::string_view payload, EventBatch& out) {
  out.clear();
  const char* begin = payload.data();
  const char* end = begin + payload.size();
  WR_RETURN_IF_ERROR(Validate(begin, end));
  Reader r(begin);
  uint32_t n = 0;
  if (r.Array(n)) {
    if (n < 2) return Malformed("batch array has fewer than 2 elements");
    if (!r.Number(out.ts)) return Malformed("ts is not a number");
    WR_RETURN_IF_ERROR(DecodeEvents(r, out));
    if (n >= 3) WR_RETURN_IF_ERROR(DecodeRank(r, out));
    return absl::OkStatus();  // later elements were validated; nothing reads them
  }
  if (!r.Map(n)) return Malformed("batch is neither an array nor a map");
  bool ts = false, events = false;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!r.Str(key)) return Malformed("a batch key is not a string");
    if (key == "ts") {
      if (!r.Number(out.ts)) return Malformed("ts is not a number");
      ts = true;
    } else if (key == "events") {
      if (events) return Malformed("events given twice");
      WR_RETURN_IF_ERROR(DecodeEvents(r, out));
      events = true;
    } else if (key == "data_parallel_rank" || key == "attn_dp_rank") {
      WR_RETURN_IF_ERROR(DecodeRank(r, out));
    } else {
      r.Skip();
    }
  }
  if (!ts || !events) return Malformed("batch map lacks ts or events");
  return absl::OkStatus();
}

}  // namespace warmroute::kv_events
