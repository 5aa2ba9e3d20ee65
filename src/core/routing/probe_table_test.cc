#include "core/routing/probe_table.h"

#include <cstdint>
#include <unordered_map>

#include "common/rng.h"
#include "gtest/gtest.h"

namespace warmroute::routing {
namespace {

struct TestSlot {
  uint64_t hash;
  uint64_t value;  // 0: empty

  static constexpr TestSlot Empty() { return {.hash = 0, .value = 0}; }
  bool empty() const { return value == 0; }
  uint32_t key() const { return Mix32(hash); }
};

size_t Find(const ProbeTable<TestSlot>& table, uint64_t hash) {
  table.Prefetch(Mix32(hash));
  return table.Find(Mix32(hash), [hash](const TestSlot& s) { return s.hash == hash; });
}

// Random adds and erasures (backward-shift deletion, growth, probe runs wrapping past the end)
// against std::unordered_map: every key present is found with its value, every other is not.
TEST(ProbeTableTest, AgreesWithAMapThroughAddsErasesAndGrowth) {
  ProbeTable<TestSlot> table(16);
  std::unordered_map<uint64_t, uint64_t> model;
  Rng rng(7);
  for (int op = 0; op < 200000; ++op) {
    // Few distinct keys, so that erasures hit; small integers, as tests and KV events send.
    const uint64_t hash = rng.UniformInt(op < 100000 ? 3000 : 300);
    const size_t s = Find(table, hash);
    ASSERT_EQ(s != kNoSlot, model.contains(hash)) << op;
    if (s == kNoSlot) {
      const uint64_t value = static_cast<uint64_t>(op) + 1;
      table.Add({.hash = hash, .value = value});
      model[hash] = value;
    } else {
      ASSERT_EQ(table[s].value, model[hash]) << op;
      table.Erase(s);
      model.erase(hash);
    }
    ASSERT_EQ(table.used(), model.size());
  }
  for (uint64_t hash = 0; hash < 3000; ++hash) {
    const size_t s = Find(table, hash);
    ASSERT_EQ(s != kNoSlot, model.contains(hash)) << hash;
    if (s != kNoSlot) {
      EXPECT_EQ(table[s].value, model[hash]);
    }
  }
}

// The load factor stays at most 0.7 (the bound the lookup cost and the index's memory per entry
// are stated for) and, once grown, at least 0.56.
TEST(ProbeTableTest, LoadStaysBetweenTheStatedBounds) {
  ProbeTable<TestSlot> table(64);
  size_t last_bytes = table.allocated_bytes();
  for (uint64_t i = 1; i <= 100000; ++i) {
    table.Add({.hash = i, .value = i});
    const double slots = static_cast<double>(table.allocated_bytes()) / sizeof(TestSlot);
    const double load = static_cast<double>(table.used()) / slots;
    ASSERT_LE(load, 0.7) << i;
    if (table.allocated_bytes() != last_bytes) {
      EXPECT_GE(load, 0.56) << i;
      last_bytes = table.allocated_bytes();
    }
  }
}

}  // namespace
}  // namespace warmroute::routing
