#include "emulator/response_store.h"

#include <string>

#include "gtest/gtest.h"

namespace warmroute::emulator {
namespace {

StoredResponse Response(std::string id, std::string text = "answer") {
  StoredResponse stored;
  stored.response.id = std::move(id);
  stored.response.status = ResponseStatus::kCompleted;
  stored.response.text = std::move(text);
  stored.conversation = {{"system", "Be brief."}, {"user", "Hi"}};
  return stored;
}

TEST(ResponseStoreTest, FindsWhatItStoresUntilErased) {
  ResponseStore store({});
  EXPECT_EQ(store.Find("resp_1"), nullptr);
  EXPECT_TRUE(store.Put(Response("resp_1", "one")));
  ASSERT_NE(store.Find("resp_1"), nullptr);
  EXPECT_EQ(store.Find("resp_1")->response.text, "one");
  EXPECT_EQ(store.Find("resp_1")->conversation.size(), 2u);
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.bytes(), StoredBytes(Response("resp_1", "one")));
  EXPECT_TRUE(store.Erase("resp_1"));
  EXPECT_FALSE(store.Erase("resp_1"));
  EXPECT_EQ(store.Find("resp_1"), nullptr);
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
}

TEST(ResponseStoreTest, PutReplacesTheResponseUnderItsId) {
  ResponseStore store({});
  store.Put(Response("r", "first"));
  store.Put(Response("r", "second, longer"));
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.Find("r")->response.text, "second, longer");
  EXPECT_EQ(store.bytes(), StoredBytes(Response("r", "second, longer")));
}

TEST(ResponseStoreTest, EvictsTheOldestOverTheCount) {
  ResponseStore store({.max_responses = 3, .max_bytes = size_t{1} << 30});
  for (const char* id : {"a", "b", "c"}) store.Put(Response(id));
  store.Put(Response("a", "rewritten"));  // a rewrite makes it the newest
  store.Put(Response("d"));
  EXPECT_EQ(store.size(), 3u);
  EXPECT_EQ(store.Find("b"), nullptr);
  EXPECT_NE(store.Find("a"), nullptr);
  EXPECT_NE(store.Find("c"), nullptr);
  EXPECT_NE(store.Find("d"), nullptr);
}

TEST(ResponseStoreTest, EvictsTheOldestOverTheBytes) {
  const size_t one = StoredBytes(Response("x", std::string(1000, 'w')));
  ResponseStore store({.max_responses = 100, .max_bytes = 2 * one + one / 2});
  store.Put(Response("x", std::string(1000, 'w')));
  store.Put(Response("y", std::string(1000, 'w')));
  EXPECT_EQ(store.size(), 2u);
  store.Put(Response("z", std::string(1000, 'w')));
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.Find("x"), nullptr);
  EXPECT_LE(store.bytes(), store.limits().max_bytes);
  // One response of nearly the whole budget evicts all the others.
  store.Put(Response("big", std::string(2 * one, 'w')));
  EXPECT_EQ(store.size(), 1u);
  EXPECT_NE(store.Find("big"), nullptr);
}

TEST(ResponseStoreTest, AResponseOverTheByteCapIsNotKept) {
  ResponseStore store({.max_responses = 10, .max_bytes = 4096});
  store.Put(Response("r", "small"));
  EXPECT_FALSE(store.Put(Response("r", std::string(8192, 'w'))));
  EXPECT_EQ(store.Find("r"), nullptr);  // nor the older one under that id
  EXPECT_EQ(store.bytes(), 0u);
  ResponseStore none({.max_responses = 0, .max_bytes = 4096});
  EXPECT_FALSE(none.Put(Response("r")));
  EXPECT_EQ(none.size(), 0u);
}

TEST(ResponseStoreTest, StoredBytesCountsTheStringsAndMessages) {
  StoredResponse stored = Response("r", "");
  const size_t base = StoredBytes(stored);
  stored.response.text = std::string(100, 'x');
  stored.response.instructions = std::string(10, 'i');
  stored.conversation.push_back({"user", std::string(50, 'u')});
  EXPECT_GE(StoredBytes(stored), base + 100 + 10 + 50 + 4);
}

}  // namespace
}  // namespace warmroute::emulator
