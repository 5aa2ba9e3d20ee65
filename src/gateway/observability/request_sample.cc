#include "gateway/observability/request_sample.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_writer.h"

namespace warmroute::gateway {

bool SampleTakes(uint64_t request_id, double rate) {
  if (rate <= 0) return false;
  if (rate >= 1) return true;
  // SplitMix64's finaliser: consecutive ids spread over the whole range.
  uint64_t z = request_id + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 < rate;
}

std::string RequestSampleLine(std::string_view body, std::string_view tenant, double unix_s) {
  const size_t open = body.find_first_not_of(" \t\r\n");
  if (open == std::string_view::npos || body[open] != '{') return "";
  std::string_view rest = body.substr(open + 1);
  const size_t next = rest.find_first_not_of(" \t\r\n");
  if (next == std::string_view::npos) return "";
  const bool empty_object = rest[next] == '}';
  std::string line = absl::StrFormat("{\"timestamp\":%.3f", unix_s);
  if (!tenant.empty()) {
    line += ",\"tenant\":";
    AppendJsonString(&line, tenant);
  }
  if (!empty_object) line += ',';
  for (const char c : rest) line.push_back(c == '\n' || c == '\r' ? ' ' : c);
  return line;
}

}  // namespace warmroute::gateway
