#include "net/dns/dns_message.h"

#include <arpa/inet.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/absl_view.h"
#include "common/status.h"

namespace warmroute::net::dns {
namespace {

constexpr size_t kHeaderBytes = 12;
constexpr size_t kMaxNameBytes = 255;  // wire form (RFC 1035 2.3.4)
constexpr size_t kMaxNameChars = 253;  // dotted form without the trailing dot
constexpr size_t kMaxLabelBytes = 63;
constexpr int kMaxCnameChain = 8;

absl::Status Malformed(std::string_view what, size_t at) {
  return absl::InvalidArgumentError(absl::StrCat("DNS message: ", AbslView(what), " at byte ", at));
}

void PutU16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xff));
}

// Reads the message from `bytes` front to back; every read is bounds-checked.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  size_t offset() const { return offset_; }

  absl::StatusOr<uint16_t> U16() {
    if (bytes_.size() - offset_ < 2) return Malformed("truncated (2-byte field)", offset_);
    const uint16_t v = static_cast<uint16_t>(Byte(offset_) << 8 | Byte(offset_ + 1));
    offset_ += 2;
    return v;
  }

  absl::StatusOr<uint32_t> U32() {
    absl::StatusOr<uint16_t> hi = U16();
    if (!hi.ok()) return hi.status();
    absl::StatusOr<uint16_t> lo = U16();
    if (!lo.ok()) return lo.status();
    return uint32_t{*hi} << 16 | *lo;
  }

  // A possibly compressed name starting at the current offset; the offset moves past its
  // in-place part (up to and including the first pointer, or the root label).
  absl::StatusOr<std::string> Name() {
    std::string out;
    size_t wire_bytes = 1;  // the root label
    size_t at = offset_;
    bool jumped = false;
    // Pointers must go strictly backwards: each jump lowers `limit`, so the walk ends.
    size_t limit = offset_;
    while (true) {
      if (at >= bytes_.size()) return Malformed("truncated name", at);
      const uint8_t length = Byte(at);
      if ((length & 0xc0) == 0xc0) {
        if (at + 1 >= bytes_.size()) return Malformed("truncated compression pointer", at);
        const size_t target = (size_t{length} & 0x3f) << 8 | Byte(at + 1);
        if (!jumped) offset_ = at + 2;
        if (target >= limit) return Malformed("compression pointer not pointing back", at);
        jumped = true;
        limit = target;
        at = target;
        continue;
      }
      if ((length & 0xc0) != 0) return Malformed("reserved label type", at);
      if (length == 0) {
        if (!jumped) offset_ = at + 1;
        return out;
      }
      if (at + 1 + length > bytes_.size()) return Malformed("truncated label", at);
      wire_bytes += 1 + length;
      if (wire_bytes > kMaxNameBytes) return Malformed("name longer than 255 bytes", at);
      if (!out.empty()) out.push_back('.');
      out.append(bytes_.substr(at + 1, length));
      at += 1 + length;
    }
  }

  absl::StatusOr<std::string_view> Bytes(size_t n) {
    if (bytes_.size() - offset_ < n) return Malformed("truncated record data", offset_);
    std::string_view out = bytes_.substr(offset_, n);
    offset_ += n;
    return out;
  }

 private:
  uint8_t Byte(size_t at) const { return static_cast<uint8_t>(bytes_[at]); }

  std::string_view bytes_;
  size_t offset_ = 0;
};

absl::StatusOr<Question> ReadQuestion(Reader& r) {
  Question q;
  absl::StatusOr<std::string> name = r.Name();
  if (!name.ok()) return name.status();
  q.name = std::move(*name);
  absl::StatusOr<uint16_t> type = r.U16();
  if (!type.ok()) return type.status();
  absl::StatusOr<uint16_t> klass = r.U16();
  if (!klass.ok()) return klass.status();
  q.type = *type;
  q.klass = *klass;
  return q;
}

// The record data of `record` (type already read), `length` bytes starting at the reader's
// offset. Names inside SRV and CNAME data may point anywhere earlier in the message.
absl::Status ReadRecordData(Reader& r, uint16_t length, Record& record) {
  const size_t start = r.offset();
  const size_t end = start + length;
  switch (record.type) {
    case static_cast<uint16_t>(RecordType::kA):
    case static_cast<uint16_t>(RecordType::kAaaa): {
      const bool v4 = record.type == static_cast<uint16_t>(RecordType::kA);
      const size_t want = v4 ? 4 : 16;
      if (length != want) {
        return Malformed(absl::StrCat(AbslView(RecordTypeName(record.type)), " record of ", length,
                                      " bytes (expected ", want, ")"),
                         start);
      }
      absl::StatusOr<std::string_view> data = r.Bytes(length);
      if (!data.ok()) return data.status();
      char text[INET6_ADDRSTRLEN] = {};
      if (inet_ntop(v4 ? AF_INET : AF_INET6, data->data(), text, sizeof(text)) == nullptr) {
        return Malformed("unprintable address", start);
      }
      record.address = text;
      break;
    }
    case static_cast<uint16_t>(RecordType::kSrv): {
      absl::StatusOr<uint16_t> priority = r.U16();
      if (!priority.ok()) return priority.status();
      absl::StatusOr<uint16_t> weight = r.U16();
      if (!weight.ok()) return weight.status();
      absl::StatusOr<uint16_t> port = r.U16();
      if (!port.ok()) return port.status();
      absl::StatusOr<std::string> target = r.Name();
      if (!target.ok()) return target.status();
      record.srv = {*priority, *weight, *port, std::move(*target)};
      break;
    }
    case static_cast<uint16_t>(RecordType::kCname): {
      absl::StatusOr<std::string> target = r.Name();
      if (!target.ok()) return target.status();
      record.cname = std::move(*target);
      break;
    }
    default: {
      absl::StatusOr<std::string_view> skipped = r.Bytes(length);
      if (!skipped.ok()) return skipped.status();
      break;
    }
  }
  if (r.offset() != end) return Malformed("record data length does not match its content", start);
  return absl::OkStatus();
}

absl::StatusOr<Record> ReadRecord(Reader& r) {
  Record record;
  absl::StatusOr<std::string> name = r.Name();
  if (!name.ok()) return name.status();
  record.name = std::move(*name);
  absl::StatusOr<uint16_t> type = r.U16();
  if (!type.ok()) return type.status();
  absl::StatusOr<uint16_t> klass = r.U16();
  if (!klass.ok()) return klass.status();
  absl::StatusOr<uint32_t> ttl = r.U32();
  if (!ttl.ok()) return ttl.status();
  absl::StatusOr<uint16_t> length = r.U16();
  if (!length.ok()) return length.status();
  record.type = *type;
  record.klass = *klass;
  record.ttl = *ttl;
  absl::Status data = ReadRecordData(r, *length, record);
  if (!data.ok()) return data;
  return record;
}

std::string_view WithoutTrailingDot(std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  return name;
}

}  // namespace

std::string_view RecordTypeName(uint16_t type) {
  switch (type) {
    case static_cast<uint16_t>(RecordType::kA):
      return "A";
    case static_cast<uint16_t>(RecordType::kCname):
      return "CNAME";
    case static_cast<uint16_t>(RecordType::kAaaa):
      return "AAAA";
    case static_cast<uint16_t>(RecordType::kSrv):
      return "SRV";
    case static_cast<uint16_t>(RecordType::kOpt):
      return "OPT";
    default:
      return "other";
  }
}

std::string RcodeName(int rcode) {
  switch (rcode) {
    case kRcodeNoError:
      return "NOERROR";
    case kRcodeFormErr:
      return "FORMERR";
    case kRcodeServFail:
      return "SERVFAIL";
    case kRcodeNxDomain:
      return "NXDOMAIN";
    case 4:
      return "NOTIMP";
    case kRcodeRefused:
      return "REFUSED";
    default:
      return absl::StrCat("RCODE", rcode);
  }
}

bool SameName(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(AbslView(WithoutTrailingDot(a)), AbslView(WithoutTrailingDot(b)));
}

absl::Status ValidateDnsName(std::string_view name) {
  const std::string_view dotted = WithoutTrailingDot(name);
  const auto bad = [name](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", AbslView(name), "' is not a DNS name (", AbslView(why), ")"));
  };
  if (dotted.empty()) return bad("empty");
  if (dotted.size() > kMaxNameChars) return bad("longer than 253 characters");
  for (absl::string_view label : absl::StrSplit(AbslView(dotted), '.')) {
    if (label.empty()) return bad("an empty label");
    if (label.size() > kMaxLabelBytes) return bad("a label longer than 63 bytes");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> EncodeQuery(uint16_t id, std::string_view name, RecordType type) {
  WR_RETURN_IF_ERROR(ValidateDnsName(name));
  const std::string_view dotted = WithoutTrailingDot(name);
  std::string out;
  out.reserve(kHeaderBytes + dotted.size() + 2 + 4 + 11);
  PutU16(out, id);
  PutU16(out, 0x0100);  // a standard query, recursion desired
  PutU16(out, 1);       // QDCOUNT
  PutU16(out, 0);       // ANCOUNT
  PutU16(out, 0);       // NSCOUNT
  PutU16(out, 1);       // ARCOUNT: the OPT record
  for (absl::string_view label : absl::StrSplit(AbslView(dotted), '.')) {
    out.push_back(static_cast<char>(label.size()));
    out.append(label.data(), label.size());
  }
  out.push_back('\0');
  PutU16(out, static_cast<uint16_t>(type));
  PutU16(out, 1);  // IN
  // OPT (RFC 6891 6.1.2): root name, type, UDP payload size as the class, TTL 0, no data.
  out.push_back('\0');
  PutU16(out, static_cast<uint16_t>(RecordType::kOpt));
  PutU16(out, kEdnsUdpPayload);
  PutU16(out, 0);
  PutU16(out, 0);
  PutU16(out, 0);
  return out;
}

absl::StatusOr<Message> DecodeMessage(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes) {
    return Malformed(absl::StrCat("shorter than the 12-byte header (", bytes.size(), " bytes)"),
                     0);
  }
  Reader r(bytes);
  Message m;
  uint16_t counts[4] = {};
  absl::StatusOr<uint16_t> id = r.U16();
  absl::StatusOr<uint16_t> flags = r.U16();
  for (uint16_t& count : counts) count = *r.U16();  // the header's size was checked
  m.id = *id;
  m.response = (*flags & 0x8000) != 0;
  m.truncated = (*flags & 0x0200) != 0;
  m.rcode = *flags & 0x000f;
  // Every question takes at least 5 bytes and every record 11: larger counts cannot be right,
  // and are refused before anything is reserved for them.
  const size_t rest = bytes.size() - kHeaderBytes;
  if (size_t{counts[0]} * 5 + (size_t{counts[1]} + counts[2] + counts[3]) * 11 > rest) {
    return Malformed("section counts larger than the message", 4);
  }
  for (uint16_t i = 0; i < counts[0]; ++i) {
    absl::StatusOr<Question> q = ReadQuestion(r);
    if (!q.ok()) return q.status();
    m.questions.push_back(std::move(*q));
  }
  for (int section = 1; section < 4; ++section) {
    for (uint16_t i = 0; i < counts[section]; ++i) {
      absl::StatusOr<Record> record = ReadRecord(r);
      if (!record.ok()) return record.status();
      if (section == 1) m.answers.push_back(std::move(*record));
      if (section == 3) m.additionals.push_back(std::move(*record));
    }
  }
  return m;
}

std::vector<Record> AnswersFor(const Message& message, std::string_view name, RecordType type) {
  std::vector<Record> out;
  std::string owner(WithoutTrailingDot(name));
  for (int hop = 0; hop <= kMaxCnameChain; ++hop) {
    const Record* alias = nullptr;
    for (const Record& r : message.answers) {
      if (!SameName(r.name, owner)) continue;
      if (r.type == static_cast<uint16_t>(type)) out.push_back(r);
      if (r.type == static_cast<uint16_t>(RecordType::kCname)) alias = &r;
    }
    if (!out.empty() || alias == nullptr) break;
    owner = alias->cname;
  }
  return out;
}

}  // namespace warmroute::net::dns
