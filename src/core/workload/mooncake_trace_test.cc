#include "core/workload/mooncake_trace.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/request/tokenizer.h"
#include "core/workload/test_driver.h"
#include "gtest/gtest.h"

namespace warmroute::workload {
namespace {

int64_t Tokens(std::string_view text) {
  return static_cast<int64_t>(request::BuiltinTokenizer().Encode(text).size());
}

size_t CommonPrefix(const std::string& a, const std::string& b) {
  return static_cast<size_t>(
      std::mismatch(a.begin(), a.begin() + std::min(a.size(), b.size()), b.begin()).first -
      a.begin());
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

WorkloadOptions AllOf(const std::string& path) {
  WorkloadOptions options;
  options.name = "trace:" + path;
  options.num_requests = 0;
  return options;
}

// Parse errors: each names the file, the 1-based line and the problem.
struct BadLine {
  std::string line;
  std::string problem;
};

TEST(MooncakeTraceTest, ParseErrorsNameFileLineAndProblem) {
  const std::string good =
      R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0]})";
  const std::vector<BadLine> cases = {
      {R"({"timestamp": 0, "input_length": 10, "output_length": 1)", "invalid JSON"},
      {R"([1, 2])", "expected a JSON object"},
      {R"({"input_length": 10, "output_length": 1, "hash_ids": [0]})",
       "missing field \"timestamp\""},
      {R"({"timestamp": 0, "output_length": 1, "hash_ids": [0]})",
       "missing field \"input_length\""},
      {R"({"timestamp": 0, "input_length": 10, "hash_ids": [0]})",
       "missing field \"output_length\""},
      {R"({"timestamp": 0, "input_length": 10, "output_length": 1})", "missing field \"hash_ids\""},
      {R"({"timestamp": "now", "input_length": 10, "output_length": 1, "hash_ids": [0]})",
       "\"timestamp\" must be a number"},
      {R"({"timestamp": 0, "input_length": 10.5, "output_length": 1, "hash_ids": [0]})",
       "\"input_length\" must be an integer"},
      {R"({"timestamp": 0, "input_length": 10, "output_length": -3, "hash_ids": [0]})",
       "\"output_length\" must not be negative"},
      {R"({"timestamp": -1, "input_length": 10, "output_length": 1, "hash_ids": [0]})",
       "\"timestamp\" must not be negative"},
      {R"({"timestamp": 0, "input_length": 0, "output_length": 1, "hash_ids": []})",
       "\"input_length\" must be at least 1"},
      {R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": 0})",
       "\"hash_ids\" must be an array of integers"},
      {R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": ["a"]})",
       "\"hash_ids\" must be an array of integers"},
      {R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [-4]})",
       "negative ids"},
      {R"({"timestamp": 0, "input_length": 513, "output_length": 1, "hash_ids": [0]})",
       "\"hash_ids\" has 1 ids but input_length 513 needs ceil(513/512) = 2"},
      {R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [0, 1]})",
       "has 2 ids but input_length 10 needs ceil(10/512) = 1"},
      // Bounds: each would exhaust memory or overflow int64 further on (kMaxTrace*).
      {R"({"timestamp": 0, "input_length": 9223372036854775807, "output_length": 5, )"
       R"("hash_ids": [1]})",
       "\"input_length\" must be at most 10000000, got 9223372036854775807"},
      {R"({"timestamp": 0, "input_length": 10000001, "output_length": 5, "hash_ids": [1]})",
       "\"input_length\" must be at most 10000000, got 10000001"},
      {R"({"timestamp": 0, "input_length": 18446744073709551615, "output_length": 5, )"
       R"("hash_ids": [1]})",
       "\"input_length\" must be at most 10000000, got 18446744073709551615"},
      {R"({"timestamp": 0, "input_length": 100, "output_length": 9223372036854775807, )"
       R"("hash_ids": [1]})",
       "\"output_length\" must be at most 1000000, got 9223372036854775807"},
      {R"({"timestamp": 1e300, "input_length": 100, "output_length": 5, "hash_ids": [1]})",
       "\"timestamp\" must be at most 1e+11 ms (about 3 years), got 1e+300"},
      {R"({"timestamp": 1e16, "input_length": 100, "output_length": 5, "hash_ids": [1]})",
       "\"timestamp\" must be at most 1e+11 ms"},
      {R"({"timestamp": 18446744073709551615, "input_length": 100, "output_length": 5, )"
       R"("hash_ids": [1]})",
       "\"timestamp\" must be at most 1e+11 ms"},
  };
  for (const BadLine& c : cases) {
    SCOPED_TRACE(c.line);
    const std::string path = WriteFile("bad.jsonl", good + "\n\n" + good + "\n" + c.line + "\n");
    auto records = ReadMooncakeTrace(path);
    ASSERT_FALSE(records.ok());
    EXPECT_EQ(records.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(records.status().message());
    EXPECT_EQ(message.rfind(path + ":4: ", 0), 0u) << message;  // blank line 2 still counts
    EXPECT_NE(message.find(c.problem), std::string::npos) << message;
    // The same through the factory.
    auto workload = MakeTraceWorkload(AllOf(path), path, 1);
    EXPECT_EQ(workload.status().message(), records.status().message());
  }
}

TEST(MooncakeTraceTest, UnreadableFileNamesThePath) {
  auto records = ReadMooncakeTrace("/nonexistent/dir/t.jsonl");
  ASSERT_FALSE(records.ok());
  EXPECT_NE(records.status().message().find("/nonexistent/dir/t.jsonl"), std::string::npos);
  EXPECT_EQ(records.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(records.status().message().find("No such file or directory"), std::string::npos)
      << records.status().message();
  const std::string empty = WriteFile("empty.jsonl", "\n");
  auto workload = MakeTraceWorkload(AllOf(empty), empty, 1);
  EXPECT_NE(workload.status().message().find("no requests"), std::string::npos);
}

TEST(MooncakeTraceTest, UnreadableFileSaysWhy) {
  auto directory = ReadMooncakeTrace(::testing::TempDir());
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(directory.status().message().find("Is a directory"), std::string::npos)
      << directory.status().message();
}

TEST(MooncakeTraceTest, ReadsFilesWhoseSizeIsUnknownToTheirEnd) {
  // /proc files report size 0: the reader must read them to the end, and so find line 1 is not
  // a trace record rather than an empty trace.
  auto records = ReadMooncakeTrace("/proc/self/status");
  ASSERT_FALSE(records.ok());
  EXPECT_NE(records.status().message().find("/proc/self/status:1: invalid JSON"), std::string::npos)
      << records.status().message();
}

TEST(MooncakeTraceTest, RefusesArrivalsBeyondTheRepresentableSpan) {
  const std::string path =
      WriteFile("late.jsonl",
                R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]})"
                "\n"
                R"({"timestamp": 5000, "input_length": 10, "output_length": 1, "hash_ids": [2]})"
                "\n");
  WorkloadOptions options = AllOf(path);
  options.trace_speed = 1e-300;  // 5 s of trace would arrive 5e300 s into the run
  auto slow = MakeTraceWorkload(options, path, 1);
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(slow.status().message().find(path + ":2: timestamp 5000 ms replayed at speed 1e-300"),
            std::string::npos)
      << slow.status().message();
  options.trace_speed = 1e-6;  // 5e6 s: still representable
  EXPECT_TRUE(MakeTraceWorkload(options, path, 1).ok());
}

TEST(MooncakeTraceTest, ParsesRecordsAndIgnoresUnknownFields) {
  auto records = ParseMooncakeTrace(
      "{\"timestamp\": 12.5, \"input_length\": 1024, \"output_length\": 0, \"hash_ids\": [3, 9], "
      "\"extra\": true}\r\n"
      "{\"timestamp\": 4, \"input_length\": 1, \"output_length\": 7, \"hash_ids\": [3]}",
      "inline");
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].timestamp_ms, 12.5);
  EXPECT_EQ((*records)[0].input_length, 1024);
  EXPECT_EQ((*records)[0].hash_ids, (std::vector<int64_t>{3, 9}));
  EXPECT_EQ((*records)[0].line, 1);
  EXPECT_EQ((*records)[1].line, 2);
  EXPECT_EQ((*records)[1].output_length, 7);
}

TEST(MooncakeTraceTest, BlockTextIsExact512TokensAndPartialBlocksArePrefixes) {
  std::string full;
  AppendTraceBlock(1, 42, 512, &full);
  EXPECT_EQ(Tokens(full), 512);
  EXPECT_GT(full.size(), 1800u);
  EXPECT_LT(full.size(), 2600u);
  for (int64_t tokens : {1, 2, 100, 511}) {
    std::string part;
    AppendTraceBlock(1, 42, tokens, &part);
    EXPECT_EQ(Tokens(part), tokens);
    EXPECT_EQ(full.substr(0, part.size()), part);
  }
  std::string other_seed;
  AppendTraceBlock(2, 42, 512, &other_seed);
  EXPECT_NE(other_seed, full);
  std::string other_id;
  AppendTraceBlock(1, 43, 512, &other_id);
  EXPECT_LT(CommonPrefix(full, other_id), 6u);  // the id words differ
}

TEST(MooncakeTraceTest, PromptsShareTextExactlyAsFarAsTheyShareHashIds) {
  // Request 1 and 2 share blocks 0-1; request 3 shares block 0; 4 is a partial prefix of 2's
  // third block; 5 shares nothing.
  const std::string path = WriteFile(
      "sharing.jsonl",
      R"({"timestamp": 0, "input_length": 1500, "output_length": 3, "hash_ids": [0, 1, 2]})"
      "\n"
      R"({"timestamp": 1, "input_length": 1536, "output_length": 3, "hash_ids": [0, 1, 5]})"
      "\n"
      R"({"timestamp": 2, "input_length": 700, "output_length": 3, "hash_ids": [0, 7]})"
      "\n"
      R"({"timestamp": 3, "input_length": 1100, "output_length": 3, "hash_ids": [0, 1, 5]})"
      "\n"
      R"({"timestamp": 4, "input_length": 512, "output_length": 3, "hash_ids": [9]})"
      "\n");
  auto workload = MakeTraceWorkload(AllOf(path), path, 1);
  ASSERT_TRUE(workload.ok()) << workload.status();
  const Drained drained = Drain(**workload);
  ASSERT_EQ(drained.requests.size(), 5u);
  std::vector<std::string> p;
  for (const auto& r : drained.requests) {
    EXPECT_EQ(r.endpoint, request::Endpoint::kCompletions);
    p.push_back(r.prompt);
  }
  EXPECT_EQ(Tokens(p[0]), 1500);
  EXPECT_EQ(Tokens(p[1]), 1536);
  EXPECT_EQ(Tokens(p[2]), 700);
  EXPECT_EQ(Tokens(p[3]), 1100);
  std::string block0;
  std::string block1;
  AppendTraceBlock(1, 0, 512, &block0);
  AppendTraceBlock(1, 1, 512, &block1);
  const size_t two_blocks = block0.size() + block1.size();
  EXPECT_GE(CommonPrefix(p[0], p[1]), two_blocks);
  EXPECT_LT(CommonPrefix(p[0], p[1]), two_blocks + 6);
  EXPECT_GE(CommonPrefix(p[0], p[2]), block0.size());
  EXPECT_LT(CommonPrefix(p[0], p[2]), block0.size() + 6);
  EXPECT_EQ(p[1].substr(0, p[3].size()), p[3]);  // a partial third block is a prefix
  EXPECT_LT(CommonPrefix(p[0], p[4]), 6u);
}

TEST(MooncakeTraceTest, ArrivalsAreScaledJitteredAndSorted) {
  const std::string path =
      WriteFile("ticks.jsonl",
                R"({"timestamp": 3000, "input_length": 10, "output_length": 1, "hash_ids": [1]})"
                "\n"
                R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [2]})"
                "\n"
                R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [3]})"
                "\n"
                R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [4]})"
                "\n");
  WorkloadOptions options = AllOf(path);
  options.trace_speed = 2;
  auto plain = MakeTraceWorkload(options, path, 1);
  ASSERT_TRUE(plain.ok());
  const Drained a = Drain(**plain);
  ASSERT_EQ(a.requests.size(), 4u);
  EXPECT_EQ(a.requests[0].arrival, Duration{0});
  EXPECT_EQ(a.requests[3].arrival, std::chrono::milliseconds(1500));  // 3 s at speed 2
  // Stable: equal timestamps keep the file's order.
  std::string first_of_block2;
  AppendTraceBlock(1, 2, 10, &first_of_block2);
  EXPECT_EQ(a.requests[0].prompt, first_of_block2);

  options.jitter_s = 1.0;
  auto jittered = MakeTraceWorkload(options, path, 1);
  const Drained b = Drain(**jittered);
  ASSERT_EQ(b.requests.size(), 4u);
  for (size_t i = 1; i < b.requests.size(); ++i) {
    EXPECT_GE(b.requests[i].arrival, b.requests[i - 1].arrival);
  }
  EXPECT_NE(b.requests[0].arrival, b.requests[1].arrival);  // the tick is spread out
  EXPECT_LT(b.requests[2].arrival, std::chrono::seconds(1));
  EXPECT_GE(b.requests[3].arrival, std::chrono::milliseconds(1500));

  options.num_requests = 2;  // the first two by arrival
  auto truncated = MakeTraceWorkload(options, path, 1);
  EXPECT_EQ(Drain(**truncated).requests.size(), 2u);
}

TEST(MooncakeTraceTest, RealSyntheticTraceKeepsItsSharingStructure) {
  const std::string path = std::string(WARMROUTE_TRACES_DIR) + "/synthetic_trace.jsonl";
  auto records = ReadMooncakeTrace(path);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3993u);
  // Records in arrival order (the file's timestamps are nondecreasing).
  TraceWorkload workload(AllOf(path), *records, 1);
  ASSERT_EQ(workload.size(), 3993u);

  std::map<int64_t, size_t> block_chars;
  auto chars = [&](int64_t id) {
    auto [it, inserted] = block_chars.emplace(id, 0);
    if (inserted) {
      std::string text;
      AppendTraceBlock(1, id, 512, &text);
      it->second = text.size();
    }
    return it->second;
  };
  // Keep the prompts of requests whose first block is popular (where the sharing is), plus every
  // 50th request, for the pairwise checks; memory bounds how many.
  std::map<int64_t, int> first_block_uses;
  for (const TraceRecord& record : *records) ++first_block_uses[record.hash_ids.front()];
  constexpr size_t kKept = 300;
  std::vector<size_t> kept_index;
  std::vector<std::string> prompts;
  size_t count = 0;
  while (auto r = workload.Next()) {
    const TraceRecord& record = (*records)[count];
    if (count < 20) {
      EXPECT_EQ(Tokens(r->prompt), record.input_length);
    }
    if (prompts.size() < kKept &&
        (first_block_uses[record.hash_ids.front()] >= 10 || count % 50 == 0)) {
      kept_index.push_back(count);
      prompts.push_back(std::move(r->prompt));
    }
    ++count;
  }
  EXPECT_EQ(count, 3993u);
  EXPECT_TRUE(workload.Done());
  EXPECT_EQ(workload.cached_bytes(), 0u);  // every cached block dropped after its last use
  EXPECT_GT(workload.peak_cached_bytes(), 0u);

  int shared_pairs = 0;
  int prefix_pairs = 0;
  for (size_t a = 0; a < prompts.size(); ++a) {
    for (size_t b = a + 1; b < prompts.size(); ++b) {
      const auto& ia = (*records)[kept_index[a]].hash_ids;
      const auto& ib = (*records)[kept_index[b]].hash_ids;
      size_t k = 0;
      while (k < ia.size() && k < ib.size() && ia[k] == ib[k]) ++k;
      size_t expected = 0;
      for (size_t i = 0; i < k; ++i) expected += chars(ia[i]);
      const size_t common = CommonPrefix(prompts[a], prompts[b]);
      if (k < ia.size() && k < ib.size()) {
        // The first k blocks are full in both (each has a block after them); then they differ.
        ASSERT_GE(common, expected) << a << " " << b;
        ASSERT_LT(common, expected + 6) << a << " " << b;
        if (k > 0) ++shared_pairs;
      } else {
        // One id list is a prefix of the other: equal text up to the last shared block, which
        // may be partial in either.
        ASSERT_GE(common, expected - chars(ia[k - 1])) << a << " " << b;
        ASSERT_LE(common, expected) << a << " " << b;
        ++prefix_pairs;
      }
    }
  }
  EXPECT_GT(prefix_pairs, 10);
  EXPECT_GT(shared_pairs, 500);
}

}  // namespace
}  // namespace warmroute::workload
