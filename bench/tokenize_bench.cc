// tokenize_bench: the C++ side of bench/tokenize_speed.mjs. Loads a tokenizer.json, reports its
// load time and memory, and times HfTokenizer::Encode on the texts of a plan file, one call at a
// time on one thread.
//
//   tokenize_bench TOKENIZER_JSON PLAN_JSON
//
// The plan: {"runs": [{"name": "...", "prime": ["..."], "texts": ["...", ...]}, ...]}. For each
// run, the `prime` texts are encoded first (untimed: what the tokenizer has seen before), then
// each text once, timed. Prints one JSON object:
//   {"load_ms": L, "memory_bytes": M, "rss_bytes": R, "runs": [{"name": ..., "ns": [...],
//    "bytes": [...], "prefix_hits": H}, ...]}
// where memory_bytes is HfTokenizer::MemoryBytes() and rss_bytes the growth of the process's
// resident memory over the load.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/tokenize/hf_tokenizer.h"
#include "simdjson.h"

namespace {

size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON PLAN_JSON\n", argv[0]);
    return 2;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element plan;
  if (parser.load(argv[2]).get(plan) != simdjson::SUCCESS) {
    std::fprintf(stderr, "cannot read %s\n", argv[2]);
    return 1;
  }
  const size_t rss_before = ResidentBytes();
  const auto load_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<warmroute::tokenize::HfTokenizer>> tok =
      warmroute::tokenize::HfTokenizer::FromFile(argv[1]);
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start)
          .count();
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", std::string(tok.status().message()).c_str());
    return 1;
  }
  const size_t rss_after = ResidentBytes();
  std::string out = "{\"load_ms\": " + std::to_string(load_ms) +
                    ", \"memory_bytes\": " + std::to_string((*tok)->MemoryBytes()) +
                    ", \"rss_bytes\": " + std::to_string(rss_after - rss_before) + ", \"runs\": [";
  bool first_run = true;
  for (simdjson::dom::element run : plan["runs"].get_array()) {
    for (simdjson::dom::element prime : run["prime"].get_array()) {
      (void)(*tok)->Encode(std::string_view(prime));
    }
    const uint64_t hits_before = (*tok)->prefix_hits();
    std::string ns, bytes;
    size_t ids = 0;
    for (simdjson::dom::element text : run["texts"].get_array()) {
      const std::string_view s(text);
      const auto start = std::chrono::steady_clock::now();
      const std::vector<int32_t> result = (*tok)->Encode(s);
      const auto elapsed = std::chrono::steady_clock::now() - start;
      ids += result.size();
      if (!ns.empty()) ns += ",";
      ns += std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
      if (!bytes.empty()) bytes += ",";
      bytes += std::to_string(s.size());
    }
    if (!first_run) out += ", ";
    first_run = false;
    out += "{\"name\": \"" + std::string(std::string_view(run["name"])) + "\", \"ns\": [" + ns +
           "], \"bytes\": [" + bytes + "], \"ids\": " + std::to_string(ids) +
           ", \"prefix_hits\": " + std::to_string((*tok)->prefix_hits() - hits_before) + "}";
  }
  out += "], \"cache_bytes\": " + std::to_string((*tok)->CacheBytes()) + "}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
