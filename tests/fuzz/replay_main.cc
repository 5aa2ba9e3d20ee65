// fuzz_replay: runs the fuzz targets without libFuzzer, so every build (GCC included) keeps them
// compiling and their corpora passing, and `make test` explores a little around the corpus.
//
//   fuzz_replay --list
//   fuzz_replay TARGET [--seconds S] [--seed N] [--max-len BYTES] [--dict FILE]
//               [--artifacts DIR] PATH...
//
// Each PATH (a file, or a directory read recursively in name order) is run once; then, for S
// seconds (default 0), inputs made by mutating the corpus (bit flips, interesting bytes,
// deletions, insertions, duplicated ranges, dictionary words, splices of two inputs, changed
// numbers) are run, from a seeded generator: the same seed and corpus give the same inputs. This
// is blind mutation, without libFuzzer's coverage feedback: it finds shallow failures only; the
// deep search is `make fuzz`.
//
// A failure is an input that crashes the target (a signal: abort from FUZZ_CHECK, a segfault,
// a sanitizer report in sanitized builds) or takes over 1 s (one still running after 2 s is
// stopped by a watchdog thread: a hang). The input is written to
// DIR/crash-<target> (default: the working directory) before the process dies, and the exit
// status is non-zero.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fuzz_target.h"

namespace warmroute::fuzz {
namespace {

constexpr std::chrono::milliseconds kSlowInput{1000};

// The input being run and where a crash writes it; read by the signal handler.
const std::string* g_current = nullptr;
char g_artifact[4096] = {};

void SaveCurrentInput() {
  const int fd = open(g_artifact, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  const char* p = g_current->data();
  size_t left = g_current->size();
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  close(fd);
}

// When the input being run started (steady clock, ns), 0 between inputs; the watchdog thread
// ends the process when an input runs past kSlowInput (a hang never returns to be timed).
std::atomic<int64_t> g_started_ns{0};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Watchdog(const char* target) {
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int64_t started = g_started_ns.load(std::memory_order_relaxed);
    if (started == 0 || NowNs() - started <= 2 * std::chrono::nanoseconds(kSlowInput).count()) {
      continue;
    }
    SaveCurrentInput();
    std::fprintf(stderr, "fuzz_replay: %s: an input ran over %lld ms (a hang): %s\n", target,
                 static_cast<long long>(2 * kSlowInput.count()), g_artifact);
    std::_Exit(1);
  }
}

void OnFatalSignal(int sig) {
  if (g_current != nullptr) {
    SaveCurrentInput();
    static const char kMessage[] = "fuzz_replay: the failing input is in ";
    (void)!write(2, kMessage, sizeof(kMessage) - 1);
    (void)!write(2, g_artifact, strlen(g_artifact));
    (void)!write(2, "\n", 1);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void InstallHandlers() {
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) signal(sig, OnFatalSignal);
}

bool ReadFile(const std::filesystem::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

// libFuzzer's dictionary format: one "word" per line (after an optional name=), with \\, \" and
// \xNN escapes; # starts a comment.
bool ReadDictionary(const std::string& path, std::vector<std::string>& words, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read the dictionary " + path;
    return false;
  }
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const size_t open = line.find('"');
    if (line.empty() || line[0] == '#' || open == std::string::npos) continue;
    const size_t close = line.rfind('"');
    if (close <= open) {
      error = path + ":" + std::to_string(number) + ": a word has no closing quote";
      return false;
    }
    std::string word;
    for (size_t i = open + 1; i < close; ++i) {
      if (line[i] != '\\' || i + 1 >= close) {
        word += line[i];
      } else if (line[i + 1] == 'x' && i + 3 < close) {
        word += static_cast<char>(std::stoi(line.substr(i + 2, 2), nullptr, 16));
        i += 3;
      } else {
        word += line[++i];
      }
    }
    words.push_back(std::move(word));
  }
  return true;
}

class Mutator {
 public:
  Mutator(uint64_t seed, size_t max_len, const std::vector<std::string>& corpus,
          const std::vector<std::string>& dictionary)
      : rng_(seed), max_len_(max_len), corpus_(corpus), dictionary_(dictionary) {}

  std::string Next() {
    std::string input = corpus_.empty() ? std::string() : corpus_[Below(corpus_.size())];
    const int edits = 1 + static_cast<int>(Below(4));
    for (int i = 0; i < edits; ++i) Mutate(input);
    if (input.size() > max_len_) input.resize(max_len_);
    return input;
  }

 private:
  size_t Below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  void Mutate(std::string& s) {
    static constexpr char kInteresting[] = {'\0', '\xff', '\x7f', '\x80', '\r', '\n', '"', '\\',
                                            '{', '}', '[', ']', ':', ',', ' ', '0', '9', '-'};
    switch (Below(9)) {
      case 0:  // flip a bit
        if (!s.empty()) s[Below(s.size())] ^= static_cast<char>(1 << Below(8));
        break;
      case 1:  // an interesting byte
        if (!s.empty()) s[Below(s.size())] = kInteresting[Below(sizeof(kInteresting))];
        break;
      case 2:  // delete a range
        if (!s.empty()) {
          const size_t at = Below(s.size());
          s.erase(at, 1 + Below(std::min<size_t>(s.size() - at, 16)));
        }
        break;
      case 3: {  // insert random bytes
        std::string bytes(1 + Below(8), '\0');
        for (char& c : bytes) c = static_cast<char>(Below(256));
        s.insert(Below(s.size() + 1), bytes);
        break;
      }
      case 4:  // duplicate a range
        if (!s.empty()) {
          const size_t at = Below(s.size());
          const std::string range = s.substr(at, 1 + Below(std::min<size_t>(s.size() - at, 64)));
          const int copies = 1 + static_cast<int>(Below(8));
          for (int i = 0; i < copies; ++i) s.insert(Below(s.size() + 1), range);
        }
        break;
      case 5:  // a dictionary word
        if (!dictionary_.empty()) s.insert(Below(s.size() + 1), dictionary_[Below(dictionary_.size())]);
        break;
      case 6:  // splice with another input
        if (!corpus_.empty()) {
          const std::string& other = corpus_[Below(corpus_.size())];
          s = s.substr(0, Below(s.size() + 1)) + other.substr(Below(other.size() + 1));
        }
        break;
      case 7: {  // change a number
        const size_t digit = s.find_first_of("0123456789", Below(s.size() + 1));
        if (digit != std::string::npos) {
          size_t end = digit;
          while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
          static const char* kNumbers[] = {"0", "1", "-1", "255", "65536", "4294967296",
                                           "9223372036854775807", "18446744073709551616",
                                           "1e308", "99999999999999999999999"};
          s.replace(digit, end - digit, kNumbers[Below(std::size(kNumbers))]);
        }
        break;
      }
      default:  // truncate
        s.resize(Below(s.size() + 1));
        break;
    }
  }

  std::mt19937_64 rng_;
  const size_t max_len_;
  const std::vector<std::string>& corpus_;
  const std::vector<std::string>& dictionary_;
};

struct Options {
  const Target* target = nullptr;
  double seconds = 0;
  uint64_t seed = 1;
  size_t max_len = 64 * 1024;
  std::string dictionary;
  std::string artifacts = ".";
  std::vector<std::string> paths;
};

int Usage(const char* problem) {
  std::fprintf(stderr,
               "fuzz_replay: %s\nusage: fuzz_replay --list | fuzz_replay TARGET [--seconds S] "
               "[--seed N] [--max-len BYTES] [--dict FILE] [--artifacts DIR] PATH...\n",
               problem);
  return 2;
}

// Runs one input, timing it; false when it took too long (the input is saved first).
bool RunOne(const Options& options, const std::string& input, const std::string& origin) {
  g_current = &input;
  const int64_t start = NowNs();
  g_started_ns.store(start, std::memory_order_relaxed);
  options.target->run(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  g_started_ns.store(0, std::memory_order_relaxed);
  const auto took = std::chrono::nanoseconds(NowNs() - start);
  g_current = nullptr;
  if (took <= kSlowInput) return true;
  const std::string path = std::string(g_artifact);
  std::ofstream(path, std::ios::binary) << input;
  std::fprintf(stderr, "fuzz_replay: %s: an input (%s, %zu bytes) took %.0f ms (limit %lld ms): %s\n",
               options.target->name, origin.c_str(), input.size(),
               std::chrono::duration<double, std::milli>(took).count(),
               static_cast<long long>(kSlowInput.count()), path.c_str());
  return false;
}

int Main(int argc, char** argv) {
  if (argc == 2 && std::string_view(argv[1]) == "--list") {
    size_t count = 0;
    const Target* targets = Targets(count);
    for (size_t i = 0; i < count; ++i) std::printf("%s\n", targets[i].name);
    return 0;
  }
  if (argc < 2) return Usage("no target named");
  Options options;
  options.target = FindTarget(argv[1]);
  if (options.target == nullptr) return Usage((std::string("no target ") + argv[1]).c_str());
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    try {
      if (arg == "--seconds" && has_value) {
        options.seconds = std::stod(argv[++i]);
      } else if (arg == "--seed" && has_value) {
        options.seed = std::stoull(argv[++i]);
      } else if (arg == "--max-len" && has_value) {
        options.max_len = std::stoull(argv[++i]);
      } else if (arg == "--dict" && has_value) {
        options.dictionary = argv[++i];
      } else if (arg == "--artifacts" && has_value) {
        options.artifacts = argv[++i];
      } else if (arg.starts_with("--")) {
        return Usage((std::string("unknown or incomplete option ") + std::string(arg)).c_str());
      } else {
        options.paths.emplace_back(arg);
      }
    } catch (const std::exception&) {
      return Usage((std::string("not a number after ") + std::string(arg)).c_str());
    }
  }
  if (options.paths.empty()) return Usage("no corpus path");

  std::vector<std::filesystem::path> files;
  for (const std::string& path : options.paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(path, ec)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else if (std::filesystem::is_regular_file(path, ec)) {
      files.emplace_back(path);
    } else {
      return Usage(("no such file or directory: " + path).c_str());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> dictionary;
  if (!options.dictionary.empty()) {
    std::string error;
    if (!ReadDictionary(options.dictionary, dictionary, error)) return Usage(error.c_str());
  }

  InstallHandlers();
  std::snprintf(g_artifact, sizeof(g_artifact), "%s/crash-%s", options.artifacts.c_str(),
                options.target->name);
  // An empty input first, untimed, as libFuzzer does: a target's one-time set-up (loading a
  // tokenizer) is not an input's cost.
  const std::string empty;
  g_current = &empty;
  options.target->run(nullptr, 0);
  g_current = nullptr;
  std::thread(Watchdog, options.target->name).detach();
  std::vector<std::string> corpus;
  for (const auto& file : files) {
    std::string input;
    if (!ReadFile(file, input)) return Usage(("cannot read " + file.string()).c_str());
    if (!RunOne(options, input, file.string())) return 1;
    corpus.push_back(std::move(input));
  }

  Mutator mutator(options.seed, options.max_len, corpus, dictionary);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(options.seconds));
  uint64_t runs = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string input = mutator.Next();
    if (!RunOne(options, input, "mutated")) return 1;
    ++runs;
  }
  std::printf("fuzz_replay %s: %zu corpus inputs, %llu mutated inputs in %.1f s (seed %llu): no failure\n",
              options.target->name, corpus.size(), static_cast<unsigned long long>(runs),
              options.seconds, static_cast<unsigned long long>(options.seed));
  return 0;
}

}  // namespace
}  // namespace warmroute::fuzz

int main(int argc, char** argv) { return warmroute::fuzz::Main(argc, argv); }
