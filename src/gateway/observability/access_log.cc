#include "gateway/observability/access_log.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "common/json_writer.h"

namespace warmroute::gateway {
namespace {

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Iso8601(int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(unix_ms % 1000));
  return buf;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AccessLog>> AccessLog::Open(const std::string& destination) {
  if (destination == "off" || destination.empty()) {
    return std::unique_ptr<AccessLog>(new AccessLog(nullptr, false));
  }
  if (destination == "stderr") return std::unique_ptr<AccessLog>(new AccessLog(stderr, false));
  std::FILE* f = std::fopen(destination.c_str(), "a");
  if (f == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("cannot open access log '", destination,
                                                   "': ", std::strerror(errno)));
  }
  return std::unique_ptr<AccessLog>(new AccessLog(f, true));
}

AccessLog::~AccessLog() {
  if (file_ == nullptr) return;
  std::fflush(file_);
  if (owned_) std::fclose(file_);
}

std::string AccessLog::Format(const AccessRecord& r, int64_t unix_ms) {
  std::string line;
  line.reserve(320);
  JsonWriter w(&line);
  w.BeginObject();
  w.Key("ts").String(Iso8601(unix_ms));
  w.Key("id").Uint(r.id);
  w.Key("method").String(r.method);
  w.Key("path").String(r.path);
  if (!r.route.empty()) w.Key("route").String(r.route);
  w.Key("model").String(r.model);
  if (!r.tenant.empty()) w.Key("tenant").String(r.tenant);
  w.Key("stream").Bool(r.stream);
  w.Key("status").Int(r.status);
  w.Key("backend");
  r.backend.empty() ? w.Null() : w.String(r.backend);
  w.Key("reason");
  r.reason.empty() ? w.Null() : w.String(r.reason);
  w.Key("prompt_tokens");
  r.prompt_tokens ? w.Int(*r.prompt_tokens) : w.Null();
  w.Key("predicted_cached_tokens").Int(r.predicted_cached_tokens);
  w.Key("cached_tokens");
  r.cached_tokens ? w.Int(*r.cached_tokens) : w.Null();
  w.Key("ttft_ms");
  r.ttft_ms ? w.Double(*r.ttft_ms) : w.Null();
  w.Key("e2e_ms").Double(r.e2e_ms);
  w.Key("retries").Int(r.retries);
  if (!r.key_mode.empty()) {
    w.Key("prefix_key").String(r.key_mode);
    if (r.key_mode != "precise") w.Key("prefix_key_reason").String(r.key_reason);
  }
  if (!r.error.empty()) w.Key("error").String(r.error);
  if (!r.prompt.empty()) {
    // At most 4096 bytes, cut at a UTF-8 character boundary.
    size_t n = std::min<size_t>(r.prompt.size(), 4096);
    while (n > 0 && n < r.prompt.size() && (static_cast<unsigned char>(r.prompt[n]) & 0xC0) == 0x80) {
      --n;
    }
    w.Key("prompt").String(r.prompt.substr(0, n));
  }
  w.EndObject();
  return line;
}

void AccessLog::Write(const AccessRecord& record) {
  if (file_ == nullptr) return;
  WriteLine(Format(record, UnixMs()));
}

void AccessLog::WriteLine(std::string_view text) {
  if (file_ == nullptr) return;
  const int64_t now = UnixMs();
  std::string line(text);
  line.push_back('\n');
  std::lock_guard lock(mu_);
  std::fwrite(line.data(), 1, line.size(), file_);
  unflushed_ = true;
  if (now - last_flush_ms_ >= 1000 || file_ == stderr) {
    std::fflush(file_);
    last_flush_ms_ = now;
    unflushed_ = false;
  }
}

void AccessLog::Flush() {
  if (file_ == nullptr) return;
  std::lock_guard lock(mu_);
  if (!unflushed_) return;
  std::fflush(file_);
  last_flush_ms_ = UnixMs();
  unflushed_ = false;
}

}  // namespace warmroute::gateway
