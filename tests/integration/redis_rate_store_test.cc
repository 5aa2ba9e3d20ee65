// RedisRateStore and RedisConnection against a real redis-server on loopback (label
// "integration"): accuracy of the token bucket over a few seconds, one bucket shared by two
// stores (two gateways), the failure contract (slow, dead and restarted Redis, unanswered
// connect), NOSCRIPT recovery after SCRIPT FLUSH, pipelining and cancelled commands.
//
// The test starts its own redis-server (WARMROUTE_REDIS_SERVER, default /usr/bin/redis-server)
// on a free loopback port, without persistence, and kills it at the end. The accuracy figures
// it prints are those quoted in docs/rate-limits.md.
#include "gateway/tenancy/redis_rate_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "net/redis/redis_connection.h"
#include "net/run_task.h"

extern char** environ;

namespace warmroute::gateway {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using Timer =
    asio::basic_waitable_timer<steady_clock, asio::wait_traits<steady_clock>, net::Executor>;

// A free TCP port on 127.0.0.1 (bound, read back, released).
uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) std::abort();
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

bool Accepting(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return ok;
}

// A redis-server child process in the foreground, without persistence.
class RedisServer {
 public:
  explicit RedisServer(uint16_t port) : port_(port) {}
  ~RedisServer() { Kill(); }

  static std::string Binary() {
    const char* env = std::getenv("WARMROUTE_REDIS_SERVER");
    return env != nullptr ? env : "/usr/bin/redis-server";
  }

  // Starts the server and waits until it accepts connections.
  bool Start() {
    const std::string binary = Binary();
    const std::string port = std::to_string(port_);
    std::vector<std::string> args = {
        binary, "--port",      port, "--bind",     "127.0.0.1", "--save", "",    "--appendonly",
        "no",   "--daemonize", "no", "--loglevel", "warning",   "--dir",  "/tmp"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // The server's start-up banner and warnings would drown the figures the test prints.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    const int spawned = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
      pid_ = -1;
      return false;
    }
    for (int i = 0; i < 500; ++i) {
      if (Accepting(port_)) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGCONT);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  void Pause() { kill(pid_, SIGSTOP); }
  void Resume() { kill(pid_, SIGCONT); }
  uint16_t port() const { return port_; }

 private:
  uint16_t port_;
  pid_t pid_ = -1;
};

struct Counts {
  int64_t allowed = 0;
  int64_t refused = 0;
  int64_t errors = 0;
  steady_clock::time_point first{steady_clock::time_point::max()};
  steady_clock::time_point last{steady_clock::time_point::min()};
  std::vector<double> latencies_us;
};

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(q * static_cast<double>(values.size() - 1))];
}

// Takes from `tenant` back to back until `end`.
net::Task<void> Hammer(RedisRateStore& store, std::string tenant, TenantLimits limits,
                       steady_clock::time_point end, Counts& counts) {
  while (steady_clock::now() < end) {
    const steady_clock::time_point sent = steady_clock::now();
    absl::StatusOr<LimitDecision> d = co_await store.Take(tenant, limits, 1);
    counts.latencies_us.push_back(
        std::chrono::duration<double, std::micro>(steady_clock::now() - sent).count());
    if (!d.ok()) {
      ++counts.errors;
      continue;
    }
    if (d->allowed) {
      ++counts.allowed;
      counts.first = std::min(counts.first, sent);
      counts.last = std::max(counts.last, sent);
    } else {
      ++counts.refused;
    }
  }
}

// Runs `workers` Hammer coroutines per store for `duration`.
void HammerAll(asio::io_context& io, const std::vector<RedisRateStore*>& stores, int workers,
               const std::string& tenant, const TenantLimits& limits, milliseconds duration,
               std::vector<Counts>& counts) {
  counts.assign(stores.size(), Counts{});
  const steady_clock::time_point end = steady_clock::now() + duration;
  int running = 0;
  for (size_t i = 0; i < stores.size(); ++i) {
    for (int w = 0; w < workers; ++w) {
      ++running;
      asio::co_spawn(io, Hammer(*stores[i], tenant, limits, end, counts[i]),
                     [&](std::exception_ptr e) {
                       if (e) std::rethrow_exception(e);
                       --running;
                     });
    }
  }
  io.restart();
  while (running > 0 && io.run_one() > 0) {
  }
}

class RedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(RedisServer::Binary().c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no redis-server at " << RedisServer::Binary();
    }
    server_ = std::make_unique<RedisServer>(FreePort());
    ASSERT_TRUE(server_->Start()) << "redis-server did not start";
  }

  RedisRateStoreOptions Options() const {
    RedisRateStoreOptions options;
    options.endpoint.host = "127.0.0.1";
    options.endpoint.port = server_->port();
    options.key_prefix = "test:rl:";
    return options;
  }

  // For the accuracy checks: a generous command timeout, so that a scheduling hiccup of this
  // shared machine (or a sanitizer build) does not send the store into its back-off.
  RedisRateStoreOptions PatientOptions() const {
    RedisRateStoreOptions options = Options();
    options.command_timeout = milliseconds(1000);
    return options;
  }

  // Options with a short back-off, for the failure checks.
  RedisRateStoreOptions BackoffOptions(milliseconds initial, milliseconds max) const {
    RedisRateStoreOptions options = Options();
    options.backoff_initial = initial;
    options.backoff_max = max;
    return options;
  }

  // One Take of a request under a limit it never reaches, into `out`; how long it took.
  std::chrono::microseconds TimedTake(RedisRateStore& store, std::string_view tenant,
                                      absl::StatusOr<LimitDecision>& out) {
    TenantLimits limits;
    limits.requests = BucketLimit{1000, 1000};
    const steady_clock::time_point start = steady_clock::now();
    out = net::RunTask(io_, store.Take(std::string(tenant), limits, 1));
    return std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - start);
  }

  // One command on a connection of its own (to inspect or disturb the server).
  net::RespValue Admin(std::vector<std::string> args) {
    auto run = [](net::Executor executor, uint16_t port,
                  std::vector<std::string> args) -> net::Task<absl::StatusOr<net::RespValue>> {
      net::RedisEndpoint endpoint{"127.0.0.1", port};
      auto c = co_await net::RedisConnection::Connect(executor, endpoint, milliseconds(1000));
      if (!c.ok()) co_return c.status();
      std::vector<std::string_view> views(args.begin(), args.end());
      absl::StatusOr<net::RespValue> reply =
          co_await (*c)->Command(std::move(views), milliseconds(1000));
      co_return reply;
    };
    absl::StatusOr<net::RespValue> reply =
        net::RunTask(io_, run(io_.get_executor(), server_->port(), std::move(args)));
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.value_or(net::RespValue{});
  }

  asio::io_context io_;
  SystemClock clock_;
  std::unique_ptr<RedisServer> server_;
};

TEST_F(RedisTest, AllowsTheBurstPlusTheRateOverThreeSeconds) {
  RedisRateStore store(io_.get_executor(), PatientOptions(), clock_);
  TenantLimits limits;
  limits.requests = BucketLimit{50, 10};
  std::vector<Counts> counts;
  HammerAll(io_, {&store}, 4, "accuracy", limits, milliseconds(3000), counts);
  const Counts& c = counts[0];
  const double span_s = std::chrono::duration<double>(c.last - c.first).count();
  // The allowed requests between the first and the last allowed one: the burst, then one per
  // 1/rate (the last one is allowed as soon as its token is there).
  const double expected = 10 + 50 * span_s;
  const double calls = static_cast<double>(c.allowed + c.refused);
  std::printf(
      "accuracy: rate 50/s burst 10, 4 coroutines for 3 s: allowed %lld over %.3f s, expected "
      "%.1f (error %+.2f%%); %lld calls (%.0f/s), %lld errors\n",
      static_cast<long long>(c.allowed), span_s, expected,
      100.0 * (static_cast<double>(c.allowed) - expected) / expected,
      static_cast<long long>(c.allowed + c.refused), calls / 3.0, static_cast<long long>(c.errors));
  std::printf("latency of Take with 4 in flight on one connection: p50 %.0f us, p99 %.0f us\n",
              Percentile(c.latencies_us, 0.5), Percentile(c.latencies_us, 0.99));
  EXPECT_EQ(c.errors, 0);
  EXPECT_NEAR(static_cast<double>(c.allowed), 160.0, 160.0 * 0.05);
  EXPECT_NEAR(static_cast<double>(c.allowed), expected, expected * 0.05);
}

TEST_F(RedisTest, TwoStoresShareOneBucket) {
  RedisRateStore gateway_a(io_.get_executor(), PatientOptions(), clock_);
  RedisRateStore gateway_b(io_.get_executor(), PatientOptions(), clock_);
  TenantLimits limits;
  limits.requests = BucketLimit{50, 10};
  std::vector<Counts> counts;
  HammerAll(io_, {&gateway_a, &gateway_b}, 2, "shared", limits, milliseconds(3000), counts);
  const int64_t total = counts[0].allowed + counts[1].allowed;
  std::printf(
      "shared: two stores, rate 50/s burst 10 for 3 s: allowed %lld + %lld = %lld "
      "(single-gateway limit 160)\n",
      static_cast<long long>(counts[0].allowed), static_cast<long long>(counts[1].allowed),
      static_cast<long long>(total));
  EXPECT_EQ(counts[0].errors + counts[1].errors, 0);
  EXPECT_NEAR(static_cast<double>(total), 160.0, 160.0 * 0.05);
  EXPECT_GT(counts[0].allowed, 0);
  EXPECT_GT(counts[1].allowed, 0);
}

TEST_F(RedisTest, PromptTokensAreSharedClampedAndGiveRetryAfter) {
  RedisRateStore gateway_a(io_.get_executor(), Options(), clock_);
  RedisRateStore gateway_b(io_.get_executor(), Options(), clock_);
  TenantLimits limits;
  limits.requests = BucketLimit{1000, 1000};
  limits.prompt_tokens = BucketLimit{100, 1000};
  // A prompt above the burst is clamped to it: allowed on a full bucket, and empties it.
  absl::StatusOr<LimitDecision> d = net::RunTask(io_, gateway_a.Take("tok", limits, 5000));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  // The other gateway sees the empty bucket: 500 tokens at 100/s is 5 s away.
  d = net::RunTask(io_, gateway_b.Take("tok", limits, 500));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->limit, "prompt_tokens");
  EXPECT_GT(d->retry_after, milliseconds(4900));
  EXPECT_LE(d->retry_after, milliseconds(5000));
  // A refusal takes nothing, from either bucket.
  net::RespValue requests = Admin({"HGET", "test:rl:{tok}:req", "tokens"});
  EXPECT_NEAR(std::stod(requests.text), 999, 1e-6);
  // Keys expire once the bucket would be full again: 1000 / 100 s + 1 s.
  net::RespValue ttl = Admin({"PTTL", "test:rl:{tok}:tok"});
  EXPECT_GT(ttl.integer, 10'000);
  EXPECT_LE(ttl.integer, 11'000);
}

TEST_F(RedisTest, FailsFastWhenRedisIsSlowOrDeadAndRecovers) {
  RedisRateStore store(io_.get_executor(), BackoffOptions(milliseconds(500), milliseconds(2000)),
                       clock_);
  absl::StatusOr<LimitDecision> d;
  TimedTake(store, "failover", d);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(store.connected());

  // A hung Redis (stopped: the kernel still accepts, nothing answers): the command timeout.
  server_->Pause();
  auto took = TimedTake(store, "failover", d);
  std::printf("hung redis: Unavailable after %.1f ms (%s)\n", took.count() / 1000.0,
              d.status().ToString().c_str());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(took, milliseconds(100));
  EXPECT_GE(took, milliseconds(45));
  took = TimedTake(store, "failover", d);
  std::printf("during back-off: Unavailable after %.3f ms\n", took.count() / 1000.0);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(took, milliseconds(2));
  EXPECT_EQ(store.failures(), 1);

  // A dead Redis: once the back-off is over, the connect is refused at once.
  server_->Kill();
  std::this_thread::sleep_for(milliseconds(550));
  took = TimedTake(store, "failover", d);
  std::printf("dead redis: Unavailable after %.3f ms (%s)\n", took.count() / 1000.0,
              d.status().ToString().c_str());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(took, milliseconds(100));
  EXPECT_EQ(store.failures(), 2);
  took = TimedTake(store, "failover", d);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(took, milliseconds(2));

  // Restarted: cluster-wide limits come back after the (now 1 s) back-off.
  ASSERT_TRUE(server_->Start());
  const steady_clock::time_point restarted = steady_clock::now();
  for (;;) {
    TimedTake(store, "failover", d);
    if (d.ok() || steady_clock::now() - restarted > std::chrono::seconds(5)) break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  std::printf("restarted redis: limits cluster-wide again after %.0f ms\n",
              std::chrono::duration<double, std::milli>(steady_clock::now() - restarted).count());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);
  EXPECT_TRUE(store.connected());
}

// A stopped Redis accepts connections (the kernel's backlog) and answers nothing: each new
// connection's command times out, and the back-off doubles instead of starting over at each
// connect.
TEST_F(RedisTest, AHungRedisThatAcceptsConnectionsDoublesTheBackoff) {
  RedisRateStore store(io_.get_executor(), BackoffOptions(milliseconds(500), milliseconds(4000)),
                       clock_);
  absl::StatusOr<LimitDecision> d;
  TimedTake(store, "hung", d);
  ASSERT_TRUE(d.ok()) << d.status();
  server_->Pause();
  EXPECT_GE(TimedTake(store, "hung", d), milliseconds(45));  // the command timeout; back-off 500 ms
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  std::this_thread::sleep_for(milliseconds(550));
  EXPECT_GE(TimedTake(store, "hung", d), milliseconds(45));  // connects, times out again: back-off 1000 ms
  EXPECT_EQ(store.failures(), 2);
  std::this_thread::sleep_for(milliseconds(550));
  EXPECT_LT(TimedTake(store, "hung", d), milliseconds(10));  // still backing off (it was 500 ms again)
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store.failures(), 2);
  server_->Resume();
  std::this_thread::sleep_for(milliseconds(500));
  TimedTake(store, "hung", d);
  ASSERT_TRUE(d.ok()) << d.status();
}

// A listener whose accept queue is full: the kernel drops further SYNs, so a connect hangs
// (with backlog 0 Linux queues one connection; the two made here fill it).
class FullListener {
 public:
  FullListener() {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        listen(listener_, 0) != 0) {
      std::abort();
    }
    socklen_t length = sizeof(address);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    for (int i = 0; i < 2; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
      clients_.push_back(fd);
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  ~FullListener() {
    for (int fd : clients_) close(fd);
    close(listener_);
  }
  uint16_t port() const { return port_; }

 private:
  int listener_ = -1;
  uint16_t port_ = 0;
  std::vector<int> clients_;
};

TEST_F(RedisTest, ConnectTimesOutWhenNothingAnswers) {
  FullListener black_hole;
  RedisRateStoreOptions options = Options();
  options.endpoint.port = black_hole.port();
  RedisRateStore store(io_.get_executor(), options, clock_);
  TenantLimits limits;
  limits.requests = BucketLimit{10, 10};
  steady_clock::time_point start = steady_clock::now();
  absl::StatusOr<LimitDecision> d = net::RunTask(io_, store.Take("t", limits, 1));
  auto took = steady_clock::now() - start;
  std::printf("unanswered connect: %s after %.1f ms\n", d.status().ToString().c_str(),
              std::chrono::duration<double, std::milli>(took).count());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_GE(took, milliseconds(95));
  EXPECT_LT(took, milliseconds(150));
  // Requests that arrive during the back-off do not wait for anything.
  start = steady_clock::now();
  d = net::RunTask(io_, store.Take("t", limits, 1));
  took = steady_clock::now() - start;
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(took, milliseconds(2));
}

TEST_F(RedisTest, ReloadsTheScriptAfterScriptFlush) {
  RedisRateStore store(io_.get_executor(), Options(), clock_);
  TenantLimits limits;
  limits.requests = BucketLimit{1, 3};
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<LimitDecision> d = net::RunTask(io_, store.Take("flush", limits, 1));
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(d->allowed);
  }
  EXPECT_EQ(Admin({"SCRIPT", "FLUSH"}).text, "OK");
  absl::StatusOr<LimitDecision> d = net::RunTask(io_, store.Take("flush", limits, 1));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->allowed);  // the third of the burst of 3
  EXPECT_EQ(store.script_reloads(), 1);
  d = net::RunTask(io_, store.Take("flush", limits, 1));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->limit, "requests");
  EXPECT_EQ(store.script_reloads(), 1);  // EVAL cached it again: EVALSHA works
  EXPECT_EQ(store.failures(), 0);
}

net::Task<absl::StatusOr<std::unique_ptr<net::RedisConnection>>> ConnectTo(uint16_t port) {
  net::RedisEndpoint endpoint{"127.0.0.1", port};
  net::Executor executor = co_await asio::this_coro::executor;
  absl::StatusOr<std::unique_ptr<net::RedisConnection>> c =
      co_await net::RedisConnection::Connect(executor, endpoint, milliseconds(1000));
  co_return c;
}

// Many commands from concurrent coroutines on one connection each get their own reply.
net::Task<absl::Status> EchoConcurrently(uint16_t port) {
  absl::StatusOr<std::unique_ptr<net::RedisConnection>> c = co_await ConnectTo(port);
  if (!c.ok()) co_return c.status();
  net::RedisConnection& connection = **c;
  const net::Executor executor = co_await asio::this_coro::executor;
  int running = 0;
  int wrong = 0;
  for (int i = 0; i < 200; ++i) {
    ++running;
    auto one = [](net::RedisConnection& connection, int i) -> net::Task<bool> {
      const std::string value = std::to_string(i);
      std::vector<std::string_view> echo = {"ECHO", value};
      absl::StatusOr<net::RespValue> reply =
          co_await connection.Command(std::move(echo), milliseconds(1000));
      co_return reply.ok() && reply->text == value;
    };
    asio::co_spawn(executor, one(connection, i), [&](std::exception_ptr, bool ok) {
      if (!ok) ++wrong;
      --running;
    });
  }
  Timer poll(executor);
  while (running > 0) {
    poll.expires_after(milliseconds(1));
    co_await poll.async_wait(asio::as_tuple(asio::use_awaitable_t<net::Executor>{}));
  }
  if (wrong > 0) co_return absl::InternalError(std::to_string(wrong) + " wrong replies");
  co_return absl::OkStatus();
}

TEST_F(RedisTest, PipelinedCommandsGetTheirOwnReplies) {
  absl::Status status = net::RunTask(io_, EchoConcurrently(server_->port()));
  EXPECT_TRUE(status.ok()) << status;
}

// A command cancelled from outside leaves the connection usable: its late reply is dropped and
// the next command gets its own reply.
net::Task<absl::Status> CancelOneCommand(uint16_t port, RedisServer* server) {
  using namespace asio::experimental::awaitable_operators;
  absl::StatusOr<std::unique_ptr<net::RedisConnection>> c = co_await ConnectTo(port);
  if (!c.ok()) co_return c.status();
  net::RedisConnection& connection = **c;
  server->Pause();
  const net::Executor executor = co_await asio::this_coro::executor;
  Timer give_up(executor);
  give_up.expires_after(milliseconds(20));
  std::vector<std::string_view> incr = {"INCR", "cancel:counter"};
  auto command = connection.Command(std::move(incr), milliseconds(2000));
  auto timeout = give_up.async_wait(asio::use_awaitable_t<net::Executor>{});
  auto race = std::move(command) || std::move(timeout);
  auto winner = co_await std::move(race);
  server->Resume();
  if (winner.index() != 1) co_return absl::InternalError("the command was not cancelled");
  if (!connection.status().ok()) co_return connection.status();
  std::vector<std::string_view> get = {"GET", "cancel:counter"};
  absl::StatusOr<net::RespValue> reply =
      co_await connection.Command(std::move(get), milliseconds(1000));
  if (!reply.ok()) co_return reply.status();
  if (reply->text != "1") {
    co_return absl::InternalError("GET got " + net::DescribeResp(*reply));
  }
  co_return absl::OkStatus();
}

TEST_F(RedisTest, ACancelledCommandLeavesTheConnectionUsable) {
  absl::Status status = net::RunTask(io_, CancelOneCommand(server_->port(), server_.get()));
  EXPECT_TRUE(status.ok()) << status;
}

TEST_F(RedisTest, DestroyingAStoreCompletesItsPendingTakes) {
  auto store = std::make_unique<RedisRateStore>(io_.get_executor(), Options(), clock_);
  TenantLimits limits;
  limits.requests = BucketLimit{10, 10};
  absl::StatusOr<LimitDecision> d = net::RunTask(io_, store->Take("gone", limits, 1));
  ASSERT_TRUE(d.ok()) << d.status();
  server_->Pause();
  std::optional<absl::StatusOr<LimitDecision>> pending;
  asio::co_spawn(io_, store->Take("gone", limits, 1),
                 [&](std::exception_ptr, absl::StatusOr<LimitDecision> r) { pending = r; });
  for (int i = 0; i < 5; ++i) io_.poll();  // the Take is sent and waits for its reply
  EXPECT_FALSE(pending.has_value());
  store.reset();
  io_.restart();
  for (int i = 0; i < 100 && !pending.has_value(); ++i) io_.run_one();
  server_->Resume();
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->status().code(), absl::StatusCode::kCancelled) << pending->status();
}

}  // namespace
}  // namespace warmroute::gateway
