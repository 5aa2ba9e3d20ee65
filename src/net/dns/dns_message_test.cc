#include "net/dns/dns_message.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "absl/strings/escaping.h"
#include "common/absl_view.h"

namespace warmroute::net::dns {
namespace {

std::string Hex(std::string_view hex) { return absl::HexStringToBytes(AbslView(hex)); }

// A response header: id 0x1234, QR + RD + RA, `rcode`, the four counts.
std::string Header(int rcode, int qd, int an, int ns, int ar, bool truncated = false) {
  std::string out = Hex("1234");
  out.push_back(static_cast<char>(0x81 | (truncated ? 0x02 : 0)));
  out.push_back(static_cast<char>(0x80 | rcode));
  for (int count : {qd, an, ns, ar}) {
    out.push_back(static_cast<char>(count >> 8));
    out.push_back(static_cast<char>(count & 0xff));
  }
  return out;
}

// "\x04vllm\x04test\x00" at offset 12 of every message below.
const std::string kVllmTest = Hex("04766c6c6d047465737400");

TEST(DnsMessageTest, EncodesAQueryWithEdns) {
  absl::StatusOr<std::string> query = EncodeQuery(0xbeef, "vllm.test.", RecordType::kA);
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_EQ(absl::BytesToHexString(*query),
            "beef01000001000000000001"    // id, RD, 1 question, 1 additional
            "04766c6c6d0474657374000001"  // vllm.test
            "0001"                        // A IN
            "00002904d0000000000000");    // OPT, payload 1232
}

TEST(DnsMessageTest, RefusesNamesThatAreNotDnsNames) {
  EXPECT_FALSE(EncodeQuery(1, "", RecordType::kA).ok());
  EXPECT_FALSE(EncodeQuery(1, "a..b", RecordType::kA).ok());
  EXPECT_FALSE(EncodeQuery(1, std::string(64, 'a') + ".test", RecordType::kA).ok());
  std::string long_name;
  for (int i = 0; i < 64; ++i) long_name += "abc.";
  const absl::Status status = EncodeQuery(1, long_name, RecordType::kA).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("253"), std::string::npos) << status;
  EXPECT_TRUE(EncodeQuery(1, std::string(63, 'a') + ".test", RecordType::kA).ok());
}

// Bytes dnsmasq 2.90 sent for "vllm.test A" with two addresses (names compressed to offset 12).
TEST(DnsMessageTest, DecodesARecordsWithCompressedNames) {
  const std::string bytes = Hex(
      "12348580000100020000000004766c6c6d04746573740000010001c00c000100010000000000047f000002c00c"
      "000100010000000000047f000003");
  absl::StatusOr<Message> m = DecodeMessage(bytes);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->id, 0x1234);
  EXPECT_TRUE(m->response);
  EXPECT_FALSE(m->truncated);
  EXPECT_EQ(m->rcode, kRcodeNoError);
  ASSERT_EQ(m->questions.size(), 1u);
  EXPECT_EQ(m->questions[0].name, "vllm.test");
  ASSERT_EQ(m->answers.size(), 2u);
  EXPECT_EQ(m->answers[0].name, "vllm.test");
  EXPECT_EQ(m->answers[0].address, "127.0.0.2");
  EXPECT_EQ(m->answers[1].address, "127.0.0.3");
  EXPECT_EQ(AnswersFor(*m, "VLLM.test.", RecordType::kA).size(), 2u);
  EXPECT_TRUE(AnswersFor(*m, "other.test", RecordType::kA).empty());
}

TEST(DnsMessageTest, DecodesAaaaRecords) {
  const std::string bytes = Hex(
      "12348580000100010000000004766c6c6d047465737400001c0001c00c001c0001000000000010000000000000"
      "00000000000000000001");
  absl::StatusOr<Message> m = DecodeMessage(bytes);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->answers.size(), 1u);
  EXPECT_EQ(m->answers[0].address, "::1");
}

// dnsmasq's SRV answer: the target is written out once and the additional A/AAAA records point
// into the SRV record's data.
TEST(DnsMessageTest, DecodesSrvRecordsAndAdditionals) {
  const std::string bytes = Hex(
      "123485800001000100000003055f68747470045f74637004766c6c6d04746573740000210001c00c002100010000"
      "00000011000000001fbb04766c6c6d047465737400c038000100010000000000047f000003c03800010001000000"
      "0000047f000002c038001c000100000000001000000000000000000000000000000001");
  absl::StatusOr<Message> m = DecodeMessage(bytes);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<Record> srv = AnswersFor(*m, "_http._tcp.vllm.test", RecordType::kSrv);
  ASSERT_EQ(srv.size(), 1u);
  EXPECT_EQ(srv[0].srv.port, 8123);
  EXPECT_EQ(srv[0].srv.target, "vllm.test");
  ASSERT_EQ(m->additionals.size(), 3u);
  EXPECT_EQ(m->additionals[0].name, "vllm.test");
  EXPECT_EQ(m->additionals[2].address, "::1");
}

TEST(DnsMessageTest, ReadsRcodeAndTruncation) {
  absl::StatusOr<Message> nx = DecodeMessage(Header(kRcodeNxDomain, 1, 0, 0, 0) + kVllmTest +
                                             Hex("00010001"));
  ASSERT_TRUE(nx.ok()) << nx.status();
  EXPECT_EQ(nx->rcode, kRcodeNxDomain);
  EXPECT_EQ(RcodeName(nx->rcode), "NXDOMAIN");
  absl::StatusOr<Message> tc = DecodeMessage(Header(0, 1, 0, 0, 0, /*truncated=*/true) +
                                             kVllmTest + Hex("00010001"));
  ASSERT_TRUE(tc.ok()) << tc.status();
  EXPECT_TRUE(tc->truncated);
}

TEST(DnsMessageTest, FollowsCnameChains) {
  // vllm.test CNAME pods.test (written "\x04pods" + pointer to "test" at 17); pods.test A 10.0.0.9.
  const std::string bytes = Header(0, 1, 2, 0, 0) + kVllmTest + Hex("00010001") +
                            Hex("c00c000500010000003c0007") + Hex("04706f6473c011") +
                            Hex("c027000100010000003c00040a000009");
  absl::StatusOr<Message> m = DecodeMessage(bytes);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<Record> a = AnswersFor(*m, "vllm.test", RecordType::kA);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].address, "10.0.0.9");
  EXPECT_EQ(a[0].name, "pods.test");
}

void ExpectMalformed(const std::string& bytes, std::string_view why) {
  absl::StatusOr<Message> m = DecodeMessage(bytes);
  ASSERT_FALSE(m.ok()) << why;
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(m.status().message()).find(why), std::string::npos) << m.status();
}

TEST(DnsMessageTest, RefusesCompressionLoops) {
  // The question's name is a pointer to itself.
  ExpectMalformed(Header(0, 1, 0, 0, 0) + Hex("c00c00010001"), "pointer not pointing back");
  // A label, then a pointer back to that label: an endless name.
  ExpectMalformed(Header(0, 1, 0, 0, 0) + Hex("0161c00c00010001"), "pointer not pointing back");
  // Two pointers pointing at each other (the answer's name points at 29, which points at 27).
  ExpectMalformed(Header(0, 1, 1, 0, 0) + kVllmTest + Hex("00010001") + Hex("c01dc01b"),
                  "pointer not pointing back");
  // A pointer past the end.
  ExpectMalformed(Header(0, 1, 0, 0, 0) + Hex("c0ff00010001"), "pointer not pointing back");
}

TEST(DnsMessageTest, RefusesTruncatedMessages) {
  const std::string full = Hex(
      "12348580000100020000000004766c6c6d04746573740000010001c00c000100010000000000047f000002c00c"
      "000100010000000000047f000003");
  ExpectMalformed(full.substr(0, 11), "shorter than the 12-byte header");
  // Every cut inside the body is an error, never a crash or a partial message.
  for (size_t n = 12; n < full.size(); ++n) {
    EXPECT_FALSE(DecodeMessage(full.substr(0, n)).ok()) << n;
  }
  EXPECT_TRUE(DecodeMessage(full).ok());
}

TEST(DnsMessageTest, RefusesBadRecordData) {
  // An A record of 3 bytes.
  ExpectMalformed(Header(0, 1, 1, 0, 0) + kVllmTest + Hex("00010001") +
                      Hex("c00c0001000100000000000301020300"),
                  "A record of 3 bytes");
  // An SRV record whose length says 10 but whose content (a compressed target) takes 8.
  ExpectMalformed(Header(0, 1, 1, 0, 0) + kVllmTest + Hex("00210001") +
                      Hex("c00c0021000100000000000a000000001f90c00c0000"),
                  "record data length does not match");
  // A reserved label type (0x40).
  ExpectMalformed(Header(0, 1, 0, 0, 0) + Hex("4000010001"), "reserved label type");
  // Counts that the bytes cannot hold.
  ExpectMalformed(Header(0, 0, 0xffff, 0, 0) + kVllmTest, "section counts");
}

TEST(DnsMessageTest, RefusesNamesOver255Bytes) {
  std::string name;
  for (int i = 0; i < 5; ++i) name += Hex("3f") + std::string(63, 'a');  // 320 bytes
  ExpectMalformed(Header(0, 1, 0, 0, 0) + name + Hex("0000010001"), "longer than 255 bytes");
}

}  // namespace
}  // namespace warmroute::net::dns
