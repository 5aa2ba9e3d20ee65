#include "net/tls/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/ssl/context.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace warmroute::net {
namespace {

namespace ssl = boost::asio::ssl;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

constexpr size_t kMaxPemBytes = size_t{1} << 20;
// Session resumption with client certificates needs a session id context.
constexpr unsigned char kSessionIdContext[] = "warmroute";

absl::Status OptionError(std::string_view option, std::string_view message) {
  return WithParam(absl::InvalidArgumentError(std::string(message)), option);
}

// The reason of OpenSSL's last queued error on this thread ("no start line"); clears the queue.
std::string OpenSslReason() {
  const unsigned long code = ERR_peek_last_error();
  std::string reason = "unknown error";
  if (code != 0) {
    const char* text = ERR_reason_error_string(code);
    if (text != nullptr) {
      reason = text;
    } else {
      char buffer[256];
      ERR_error_string_n(code, buffer, sizeof buffer);
      reason = buffer;
    }
  }
  ERR_clear_error();
  return reason;
}

// Never prompts on a terminal for the passphrase of an encrypted key: such keys are refused.
int NoPassphrase(char*, int, int, void*) { return 0; }

absl::StatusOr<std::string> ReadPemFile(std::string_view option, const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  const auto read_error = [&](int error) {
    return OptionError(option, absl::StrCat("cannot read '", path, "': ", std::strerror(error)));
  };
  if (file == nullptr) return read_error(errno);
  std::string text;
  char buffer[16 * 1024];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) {
    text.append(buffer, n);
    if (text.size() > kMaxPemBytes) {
      return OptionError(option, absl::StrCat("'", path, "' is larger than 1 MiB"));
    }
  }
  if (std::ferror(file.get())) return read_error(errno);
  return text;
}

BioPtr MemoryBio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// The certificate of `cert_file` and the chain after it.
absl::Status UseCertificateChain(SSL_CTX* ctx, const std::string& cert_file) {
  WR_ASSIGN_OR_RETURN(const std::string pem, ReadPemFile("cert_file", cert_file));
  BioPtr bio = MemoryBio(pem);
  X509Ptr cert(PEM_read_bio_X509_AUX(bio.get(), nullptr, &NoPassphrase, nullptr));
  if (cert == nullptr) {
    return OptionError("cert_file", absl::StrCat("'", cert_file, "' holds no PEM certificate (",
                                                 OpenSslReason(), ")"));
  }
  if (SSL_CTX_use_certificate(ctx, cert.get()) != 1) {
    return OptionError("cert_file", absl::StrCat("cannot use the certificate in '", cert_file,
                                                 "' (", OpenSslReason(), ")"));
  }
  SSL_CTX_clear_chain_certs(ctx);
  while (X509* extra = PEM_read_bio_X509(bio.get(), nullptr, &NoPassphrase, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
      X509_free(extra);
      return OptionError("cert_file", absl::StrCat("cannot use the chain in '", cert_file, "' (",
                                                   OpenSslReason(), ")"));
    }
  }
  ERR_clear_error();  // the end of the file reads as "no start line"
  return absl::OkStatus();
}

// The private key of `key_file`, which must match the certificate already in `ctx`.
absl::Status UsePrivateKey(SSL_CTX* ctx, const std::string& key_file,
                           const std::string& cert_file) {
  WR_ASSIGN_OR_RETURN(const std::string pem, ReadPemFile("key_file", key_file));
  BioPtr bio = MemoryBio(pem);
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, &NoPassphrase, nullptr));
  if (key == nullptr) {
    return OptionError("key_file",
                       absl::StrCat("'", key_file, "' holds no unencrypted PEM private key (",
                                    OpenSslReason(), ")"));
  }
  if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return OptionError("key_file",
                       absl::StrCat("the private key in '", key_file,
                                    "' does not match the certificate in '", cert_file, "'"));
  }
  return absl::OkStatus();
}

// Trusts every CA certificate of `path`; with `name_them`, also lists them to clients as the
// acceptable issuers of their certificates.
absl::Status TrustCas(SSL_CTX* ctx, std::string_view option, const std::string& path,
                      bool name_them) {
  WR_ASSIGN_OR_RETURN(const std::string pem, ReadPemFile(option, path));
  BioPtr bio = MemoryBio(pem);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int count = 0;
  while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, &NoPassphrase, nullptr)) {
    X509Ptr owned(ca);
    if (X509_STORE_add_cert(store, ca) != 1 || (name_them && SSL_CTX_add_client_CA(ctx, ca) != 1)) {
      return OptionError(option, absl::StrCat("cannot use the CA certificates in '", path, "' (",
                                              OpenSslReason(), ")"));
    }
    ++count;
  }
  const std::string reason = OpenSslReason();
  if (count == 0) {
    return OptionError(option,
                       absl::StrCat("'", path, "' holds no PEM certificate (", reason, ")"));
  }
  return absl::OkStatus();
}

void SetCommonOptions(SSL_CTX* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_default_passwd_cb(ctx, &NoPassphrase);
}

}  // namespace

absl::StatusOr<std::shared_ptr<TlsContext>> MakeTlsServerContext(const TlsServerOptions& options) {
  if (options.cert_file.empty()) return OptionError("cert_file", "required");
  if (options.key_file.empty()) return OptionError("key_file", "required");
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* ctx = context->native_handle();
  SetCommonOptions(ctx);
  SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof kSessionIdContext - 1);
  WR_RETURN_IF_ERROR(UseCertificateChain(ctx, options.cert_file));
  WR_RETURN_IF_ERROR(UsePrivateKey(ctx, options.key_file, options.cert_file));
  if (!options.client_ca_file.empty()) {
    WR_RETURN_IF_ERROR(TrustCas(ctx, "client_ca_file", options.client_ca_file, /*name_them=*/true));
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return context;
}

absl::StatusOr<std::shared_ptr<TlsContext>> MakeTlsClientContext(const TlsClientOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return options.cert_file.empty() ? OptionError("cert_file", "required with key_file")
                                     : OptionError("key_file", "required with cert_file");
  }
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* ctx = context->native_handle();
  SetCommonOptions(ctx);
  if (options.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      return OptionError("ca_file", absl::StrCat("cannot load the system's CA certificates (",
                                                 OpenSslReason(), ")"));
    }
  } else {
    WR_RETURN_IF_ERROR(TrustCas(ctx, "ca_file", options.ca_file, /*name_them=*/false));
  }
  if (!options.cert_file.empty()) {
    WR_RETURN_IF_ERROR(UseCertificateChain(ctx, options.cert_file));
    WR_RETURN_IF_ERROR(UsePrivateKey(ctx, options.key_file, options.cert_file));
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return context;
}

}  // namespace warmroute::net
