#include "net/tls/tls.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "common/status.h"
#include "net/http1/http_client.h"
#include "net/http1/http_server.h"

namespace warmroute::net {
namespace {

using ::testing::HasSubstr;

// A temp dir with a self-signed certificate for "localhost" (cert.pem, key.pem) and another key
// (other.pem), made with OpenSSL's API (no CLI).
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

// HttpServer with TLS and UpstreamPool with TLS, against each other on loopback.
class TlsExchangeTest : public TlsFilesTest {
 protected:
  // Starts a TLS server answering "echo:<body>", `delay` after each request (as one chunk of a
  // chunked response for the target /stream); returns its port.
  uint16_t ServeTls(std::chrono::milliseconds delay = std::chrono::milliseconds(0)) {
    auto context =
        MakeTlsServerContext({.cert_file = Path("cert.pem"), .key_file = Path("key.pem")});
    EXPECT_TRUE(context.ok()) << context.status();
    HttpServerOptions options;
    options.tls = *context;
    auto server = HttpServer::Create(
        io_, options, [delay](HttpRequest& request, ResponseWriter& writer) -> Task<void> {
          if (delay.count() > 0) {
            boost::asio::steady_timer wait(co_await boost::asio::this_coro::executor, delay);
            co_await wait.async_wait(boost::asio::use_awaitable_t<Executor>{});
          }
          // GCC 12: no temporaries in a co_await expression.
          ResponseHead head;
          std::string body = "echo:" + request.body;
          if (request.target == "/stream") {  // the same body as one chunk
            co_await writer.StartStream(std::move(head));
            co_await writer.WriteChunk(body);
            co_await writer.FinishStream();
            co_return;
          }
          co_await writer.Reply(std::move(head), std::move(body));
        });
    EXPECT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    server_->Start();
    return server_->port();
  }

  // A pool to the server, trusting `ca_file` and checking the name "localhost".
  std::unique_ptr<UpstreamPool> TlsPool(uint16_t port, const std::string& ca_file) {
    auto context = MakeTlsClientContext({.ca_file = ca_file});
    EXPECT_TRUE(context.ok()) << context.status();
    PoolOptions options;
    options.tls = *context;
    options.tls_server_name = "localhost";
    return std::make_unique<UpstreamPool>(io_.get_executor(), "127.0.0.1", port, options);
  }

  void Run(std::function<Task<void>()> body) {
    std::exception_ptr failure;
    boost::asio::co_spawn(
        io_,
        [&]() -> Task<void> {
          co_await body();
          server_->Stop();
        },
        [&](std::exception_ptr e) {
          failure = e;
          server_->Stop();
        });
    io_.run();
    if (failure) std::rethrow_exception(failure);
  }

  boost::asio::io_context io_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(TlsExchangeTest, ExchangesOverTlsAndReusesThePooledConnection) {
  const uint16_t port = ServeTls();
  Run([&]() -> Task<void> {
    const UpstreamTimeouts timeouts;
    std::unique_ptr<UpstreamPool> pool = TlsPool(port, Path("cert.pem"));
    for (int i = 0; i < 3; ++i) {
      UpstreamRequest request{.method = "POST", .target = "/", .headers = nullptr, .body = "hi"};
      auto x = co_await UpstreamExchange::Start(*pool, request, timeouts);
      EXPECT_TRUE(x.ok()) << x.status();
      if (!x.ok()) co_return;
      EXPECT_EQ((*x)->head().status, 200);
      auto body = co_await (*x)->ReadAll(1 << 20);
      EXPECT_TRUE(body.ok()) << body.status();
      EXPECT_EQ(body.value_or(""), "echo:hi");
      x->reset();
      EXPECT_EQ(pool->idle_connections(), 1u) << "the TLS connection goes back to the pool";
    }
  });
}

// Requests and responses larger than one TLS record (16 KB) arrive whole. A head and a body are
// one write: up to 16 KB they go out as one record, beyond as several (net/tls/tls_write.h: Boost
// 1.81's flat_stream would end such a write after the head, reporting success). The sizes
// straddle 16 KB with and without the head; the server answers with Content-Length and, for
// /stream, with one chunk (its size line, data and CRLF are one write).
TEST_F(TlsExchangeTest, BodiesLargerThanATlsRecordArriveWhole) {
  const uint16_t port = ServeTls();
  Run([&]() -> Task<void> {
    // A lost body fails the exchange in seconds rather than hanging the test.
    const UpstreamTimeouts timeouts{.first_byte = std::chrono::seconds(5),
                                    .idle_stream = std::chrono::seconds(5)};
    std::unique_ptr<UpstreamPool> pool = TlsPool(port, Path("cert.pem"));
    for (const char* target : {"/", "/stream"}) {
      for (const size_t size : {size_t{16'000}, size_t{16'300}, size_t{16'379}, size_t{16'384},
                                size_t{16'385}, size_t{21'658}, size_t{200'000}}) {
        std::string sent(size, ' ');
        for (size_t i = 0; i < size; ++i) sent[i] = static_cast<char>('a' + i % 26);
        UpstreamRequest request{
            .method = "POST", .target = target, .headers = nullptr, .body = sent};
        auto x = co_await UpstreamExchange::Start(*pool, request, timeouts);
        EXPECT_TRUE(x.ok()) << target << " " << size << ": " << x.status();
        if (!x.ok()) co_return;
        EXPECT_EQ((*x)->head().status, 200);
        auto body = co_await (*x)->ReadAll(1 << 20);
        EXPECT_TRUE(body.ok()) << target << " " << size << ": " << body.status();
        if (!body.ok()) co_return;
        const std::string expected = "echo:" + sent;
        EXPECT_EQ(body->size(), expected.size()) << target;
        EXPECT_TRUE(*body == expected) << target << " " << size << ": other bytes";
      }
    }
  });
}

TEST_F(TlsExchangeTest, FirstByteTimeoutOverTlsIsDeadlineExceeded) {
  // The coarse deadline (net/socket/coarse_deadline.h) cancels the TCP socket under the TLS stream: the
  // read must still be reported as a timeout, not as a failed read (which the gateway retries).
  const uint16_t port = ServeTls(std::chrono::milliseconds(1000));
  Run([&]() -> Task<void> {
    UpstreamTimeouts timeouts;
    timeouts.first_byte = std::chrono::milliseconds(100);
    std::unique_ptr<UpstreamPool> pool = TlsPool(port, Path("cert.pem"));
    UpstreamRequest request{.method = "POST", .target = "/", .headers = nullptr, .body = "hi"};
    const auto start = std::chrono::steady_clock::now();
    auto x = co_await UpstreamExchange::Start(*pool, request, timeouts);
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(x.status().code(), absl::StatusCode::kDeadlineExceeded) << x.status();
    EXPECT_FALSE(ConnectFailed(x.status()));
    EXPECT_GE(waited, std::chrono::milliseconds(100));
    EXPECT_LT(waited, std::chrono::milliseconds(900));
  });
}

TEST_F(TlsExchangeTest, UnverifiableServerIsAConnectFailureAndPlaintextIsRefused) {
  const uint16_t port = ServeTls();
  Run([&]() -> Task<void> {
    const UpstreamTimeouts timeouts;
    // Trusting only the system's CAs, which do not know this self-signed certificate.
    auto context = MakeTlsClientContext({});
    EXPECT_TRUE(context.ok());
    PoolOptions options;
    options.tls = *context;
    options.tls_server_name = "localhost";
    UpstreamPool untrusting(io_.get_executor(), "127.0.0.1", port, options);
    UpstreamRequest request{.method = "GET", .target = "/", .headers = nullptr, .body = {}};
    auto x = co_await UpstreamExchange::Start(untrusting, request, timeouts);
    EXPECT_FALSE(x.ok());
    EXPECT_TRUE(ConnectFailed(x.status())) << x.status();
    EXPECT_NE(x.status().message().find("certificate verify failed"), absl::string_view::npos)
        << x.status();

    // The wrong name: the certificate is for localhost.
    auto trusting = MakeTlsClientContext({.ca_file = Path("cert.pem")});
    EXPECT_TRUE(trusting.ok());
    PoolOptions wrong_name;
    wrong_name.tls = *trusting;
    wrong_name.tls_server_name = "example.com";
    UpstreamPool misnamed(io_.get_executor(), "127.0.0.1", port, wrong_name);
    auto y = co_await UpstreamExchange::Start(misnamed, request, timeouts);
    EXPECT_FALSE(y.ok());
    EXPECT_TRUE(ConnectFailed(y.status())) << y.status();

    // A plaintext client gets no HTTP answer from the TLS server.
    UpstreamPool plaintext(io_.get_executor(), "127.0.0.1", port);
    auto z = co_await UpstreamExchange::Start(plaintext, request, timeouts);
    EXPECT_FALSE(z.ok());

    // The server still serves TLS clients.
    std::unique_ptr<UpstreamPool> pool = TlsPool(port, Path("cert.pem"));
    auto ok = co_await UpstreamExchange::Start(*pool, request, timeouts);
    EXPECT_TRUE(ok.ok()) << ok.status();
  });
}

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
