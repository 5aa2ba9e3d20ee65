#include "net/tls.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/status.h"

namespace warmroute::net {
namespace {

using ::testing::HasSubstr;

// A temp dir with a self-signed certificate (cert.pem, key.pem) and another key (other.pem),
// made with OpenSSL's API (no CLI, no network).
class TlsFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("wr-tls-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    EVP_PKEY* key = EVP_EC_gen("P-256");
    EVP_PKEY* other = EVP_EC_gen("P-256");
    ASSERT_NE(key, nullptr);
    ASSERT_NE(other, nullptr);
    X509* cert = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    ASSERT_GT(X509_sign(cert, key, EVP_sha256()), 0);
    WritePem(Path("cert.pem"), [&](FILE* f) { return PEM_write_X509(f, cert); });
    WritePem(Path("key.pem"), [&](FILE* f) {
      return PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    });
    WritePem(Path("other.pem"), [&](FILE* f) {
      return PEM_write_PrivateKey(f, other, nullptr, nullptr, 0, nullptr, nullptr);
    });
    std::ofstream(Path("garbage.pem")) << "not PEM at all\n";
    X509_free(cert);
    EVP_PKEY_free(key);
    EVP_PKEY_free(other);
  }

  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  template <typename Write>
  static void WritePem(const std::string& path, Write write) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(write(f), 1);
    std::fclose(f);
  }

  std::filesystem::path dir_;
};

TEST_F(TlsFilesTest, MakesServerAndClientContextsFromMatchingFiles) {
  EXPECT_TRUE(
      MakeTlsServerContext({.cert_file = Path("cert.pem"), .key_file = Path("key.pem")}).ok());
  EXPECT_TRUE(MakeTlsServerContext({.cert_file = Path("cert.pem"),
                                    .key_file = Path("key.pem"),
                                    .client_ca_file = Path("cert.pem")})
                  .ok());
  EXPECT_TRUE(
      MakeTlsClientContext(
          {.ca_file = Path("cert.pem"), .cert_file = Path("cert.pem"), .key_file = Path("key.pem")})
          .ok());
  EXPECT_TRUE(MakeTlsClientContext({}).ok());  // the system's CAs, no client certificate
}

TEST_F(TlsFilesTest, UnreadableFileNamesTheOptionAndTheReason) {
  absl::Status status =
      MakeTlsServerContext({.cert_file = "/nonexistent/cert.pem", .key_file = Path("key.pem")})
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParamOf(status), "cert_file");
  EXPECT_EQ(std::string(status.message()),
            "cannot read '/nonexistent/cert.pem': No such file or directory");

  status = MakeTlsServerContext({.cert_file = Path("cert.pem"),
                                 .key_file = Path("key.pem"),
                                 .client_ca_file = dir_.string()})
               .status();
  EXPECT_EQ(ParamOf(status), "client_ca_file");
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("cannot read '" + dir_.string() + "': Is a directory"));

  status = MakeTlsClientContext({.ca_file = "/nonexistent/ca.pem"}).status();
  EXPECT_EQ(ParamOf(status), "ca_file");
}

TEST_F(TlsFilesTest, FileWithoutPemIsRefused) {
  absl::Status status =
      MakeTlsServerContext({.cert_file = Path("garbage.pem"), .key_file = Path("key.pem")})
          .status();
  EXPECT_EQ(ParamOf(status), "cert_file");
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("'" + Path("garbage.pem") + "' holds no PEM certificate"));

  status =
      MakeTlsServerContext({.cert_file = Path("cert.pem"), .key_file = Path("cert.pem")}).status();
  EXPECT_EQ(ParamOf(status), "key_file");
  EXPECT_THAT(std::string(status.message()), HasSubstr("holds no unencrypted PEM private key"));
}

TEST_F(TlsFilesTest, KeyOfAnotherCertificateIsRefused) {
  absl::Status status =
      MakeTlsServerContext({.cert_file = Path("cert.pem"), .key_file = Path("other.pem")}).status();
  EXPECT_EQ(ParamOf(status), "key_file");
  EXPECT_EQ(std::string(status.message()), "the private key in '" + Path("other.pem") +
                                               "' does not match the certificate in '" +
                                               Path("cert.pem") + "'");
}

TEST_F(TlsFilesTest, RequiredFilesAreNamed) {
  EXPECT_EQ(ParamOf(MakeTlsServerContext({.key_file = Path("key.pem")}).status()), "cert_file");
  EXPECT_EQ(ParamOf(MakeTlsServerContext({.cert_file = Path("cert.pem")}).status()), "key_file");
  absl::Status status = MakeTlsClientContext({.cert_file = Path("cert.pem")}).status();
  EXPECT_EQ(ParamOf(status), "key_file");
  EXPECT_EQ(std::string(status.message()), "required with cert_file");
}

}  // namespace
}  // namespace warmroute::net
