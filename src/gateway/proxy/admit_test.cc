// The admit stage without sockets: each refusal a client can get before its request is
// dispatched, and what an admitted request carries. Admit runs on an io_context that never
// touches the network (the admission queue's wait is its only suspension here); the listener's
// own refusals (413, 431) come from the HTTP parser, fed bytes directly.
#include "gateway/proxy/admit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <functional>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "core/routing/policy_registry.h"
#include "gateway/config/config.h"
#include "gateway/proxy/response_ids.h"
#include "net/http1/body_reader.h"
#include "net/http1/request_parser.h"
#include "net/redis/redis_connection.h"
#include "net/run_task.h"

namespace warmroute::gateway {
namespace {

using ::testing::HasSubstr;

constexpr char kChat[] = R"({"model":"m","messages":[{"role":"user","content":"hello"}]})";

BackendConfig Backend(std::string_view json) {
  absl::StatusOr<BackendConfig> config = ParseBackendJson(json);
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

TenantConfig Tenant(std::string name, std::string key) {
  TenantConfig tenant;
  tenant.name = std::move(name);
  tenant.api_key_digests = {Sha256(key)};
  return tenant;
}

net::HttpRequest Post(std::string body, net::HttpHeaders headers = {},
                      std::string path = "/v1/chat/completions") {
  net::HttpRequest request;
  request.method = "POST";
  request.target = request.path = std::move(path);
  request.headers = std::move(headers);
  request.body = std::move(body);
  request.body.reserve(request.body.size() + net::kBodySpareCapacity);
  return request;
}

std::string Field(const net::Response& response, std::string_view name) {
  for (const auto& [key, value] : response.head.headers) {
    if (net::HeaderNameIs(key, name)) return value;
  }
  return "";
}

class AdmitTest : public ::testing::Test {
 protected:
  AdmitTest()
      : backends_(*routing::MakePolicy("round_robin", {}), routing::RouterOptions{}, clock_,
                  /*seed=*/1, EjectionOptions{}),
        access_log_(*AccessLog::Open("off")) {}

  ProxyContext Context() {
    return ProxyContext{.backends = backends_,
                        .admission = *admission_,
                        .limiter = limiter_,
                        .metrics = metrics_,
                        .access_log = *access_log_,
                        .request_sample = nullptr,
                        .sample_rate = 0,
                        .hot_prefixes = hot_prefixes_,
                        .clock = clock_,
                        .next_request_id = next_id_};
  }

  // With tenants "acme" (key "acme-key") and "beta" (key "beta-key"), as `edit` leaves them.
  void UseTenants(const std::function<void(TenancyConfig&)>& edit = {}) {
    TenancyConfig tenancy;
    tenancy.salt_secret = "0123456789abcdef-secret";
    tenancy.tenants = {Tenant("acme", "acme-key"), Tenant("beta", "beta-key")};
    if (edit) edit(tenancy);
    settings_.tenants = std::make_shared<const Tenants>(tenancy);
  }

  // Admits `request` on the route of its method and path.
  AdmitResult Run(net::HttpRequest&& request) {
    kept_.push_back(std::move(request));  // an admitted request's body views into it
    return Run(kept_.back());
  }
  AdmitResult Run(net::HttpRequest& request) {
    call_ = Call();
    call_.id = next_id_++;
    const ProxyContext context = Context();
    const RouteMatch route = MatchRoute(request.method, request.path);
    EXPECT_NE(route.route, nullptr) << request.method << " " << request.path;
    return net::RunTask(io_, Admit(context, settings_, redis_, route, request, call_));
  }

  // The refusal of `result`, as the client gets it. REQUIRES: a Refusal.
  static net::Response Refused(const AdmitResult& result) {
    EXPECT_TRUE(std::holds_alternative<Refusal>(result));
    if (!std::holds_alternative<Refusal>(result)) return {};
    return ResponseOf(std::get<Refusal>(result));
  }
  static std::string Rejection(const AdmitResult& result) {
    return std::string(std::holds_alternative<Refusal>(result) ? std::get<Refusal>(result).rejection
                                                               : "");
  }

  boost::asio::io_context io_;
  ManualClock clock_;
  Backends backends_;
  std::unique_ptr<AdmissionGate> admission_ = std::make_unique<AdmissionGate>(AdmissionOptions{});
  LocalRateLimiter limiter_{clock_};
  GatewayMetrics metrics_;
  std::unique_ptr<AccessLog> access_log_;
  HotPrefixes hot_prefixes_{clock_, HotPrefixes::Options{}};
  std::atomic<uint64_t> next_id_{1};
  ProxySettings settings_;
  std::unique_ptr<RedisRateStore> redis_;  // the worker's cluster-wide store; null: local only
  Call call_;
  std::deque<net::HttpRequest> kept_;
};

TEST_F(AdmitTest, AdmitsARequestWithTheDecisionAndTheBodyAsSent) {
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  net::HttpRequest request = Post(kChat);
  AdmitResult result = Run(request);
  ASSERT_TRUE(std::holds_alternative<Admitted>(result));
  Admitted& admitted = std::get<Admitted>(result);
  EXPECT_EQ(admitted.dispatch.target->name, "r0");
  EXPECT_EQ(admitted.tenant, nullptr);
  EXPECT_EQ(admitted.body.For(EngineKind::kVllm), request.body);
  EXPECT_EQ(call_.model, "m");
  EXPECT_TRUE(call_.dispatched);
  EXPECT_EQ(call_.target->name, "r0");
  EXPECT_EQ(backends_.Snapshot()[0].in_flight, 1);
}

TEST_F(AdmitTest, AnAdmittedRequestThatEndsUnfinishedIsFailedInTheRouter) {
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  {
    AdmitResult result = Run(Post(kChat));
    ASSERT_TRUE(std::holds_alternative<Admitted>(result));
    EXPECT_EQ(backends_.Snapshot()[0].in_flight, 1);
  }  // e.g. the client left before the answer
  EXPECT_EQ(backends_.Snapshot()[0].in_flight, 0);
}

TEST_F(AdmitTest, ATenantsRequestIsSaltedForEnginesThatHonourIt) {
  UseTenants();
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  net::HttpRequest request = Post(kChat, {{"Authorization", "Bearer acme-key"}});
  AdmitResult result = Run(request);
  ASSERT_TRUE(std::holds_alternative<Admitted>(result));
  Admitted& admitted = std::get<Admitted>(result);
  ASSERT_NE(admitted.tenant, nullptr);
  EXPECT_EQ(admitted.tenant->config.name, "acme");
  EXPECT_EQ(call_.tenant, "acme");
  EXPECT_THAT(std::string(admitted.body.For(EngineKind::kVllm)),
              HasSubstr("\"cache_salt\":" + admitted.tenant->cache_salt_json));
  EXPECT_EQ(admitted.body.For(EngineKind::kSglang), request.body);
}

TEST_F(AdmitTest, ATenantsNormalizeRulesRewriteTheBodyBeforeItIsParsedAndKeyed) {
  UseTenants();
  NormalizeEntry entry;
  entry.tenant = "acme";
  entry.collapse_whitespace = true;
  entry.canonical_tools = true;
  settings_.normalize = std::make_shared<const NormalizeConfig>(NormalizeConfig{{entry}});
  settings_.log_prompts = true;  // call_.prompt: what was parsed and keyed
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  const std::string body =
      R"({"model":"m","tools":[{"function":{"name":"f"},"type":"function"}, {"type":"function",)"
      R"("function":{"parameters":{},"name":"g"}}],"messages":[{"role":"system","content":"Be   )"
      R"(brief.  "},{"role":"user","content":"hi"}]})";
  const std::string normalized =
      R"({"model":"m","tools":[{"function":{"name":"f"},"type":"function"},{"function":{"name":"g",)"
      R"("parameters":{}},"type":"function"}],"messages":[{"role":"system","content":"Be brief."},)"
      R"({"role":"user","content":"hi"}]})";

  AdmitResult acme = Run(Post(body, {{"Authorization", "Bearer acme-key"}}));
  ASSERT_TRUE(std::holds_alternative<Admitted>(acme));
  EXPECT_EQ(std::get<Admitted>(acme).body.For(EngineKind::kSglang), normalized);
  EXPECT_EQ(call_.normalized[0], "collapse_whitespace");
  EXPECT_EQ(call_.normalized[1], "canonical_tools");
  EXPECT_THAT(call_.prompt, HasSubstr("Be brief."));
  EXPECT_THAT(call_.prompt, HasSubstr(R"({"function":{"name":"g","parameters":{}})"));

  AdmitResult beta = Run(Post(body, {{"Authorization", "Bearer beta-key"}}));
  ASSERT_TRUE(std::holds_alternative<Admitted>(beta));
  EXPECT_EQ(std::get<Admitted>(beta).body.For(EngineKind::kSglang), body);
  EXPECT_TRUE(call_.normalized[0].empty());
  EXPECT_THAT(call_.prompt, HasSubstr("Be   brief."));
}

TEST_F(AdmitTest, AnUnknownKeyIs401WithWwwAuthenticate) {
  UseTenants();
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  for (const net::HttpHeaders& headers :
       {net::HttpHeaders{{"Authorization", "Bearer wrong"}}, net::HttpHeaders{}}) {
    AdmitResult result = Run(Post(kChat, headers));
    const net::Response response = Refused(result);
    EXPECT_EQ(response.head.status, 401);
    EXPECT_EQ(Field(response, "www-authenticate"), "Bearer");
    EXPECT_THAT(response.body, HasSubstr("AuthenticationError"));
    EXPECT_EQ(Rejection(result), "unauthenticated");
  }
  EXPECT_EQ(backends_.Snapshot()[0].dispatched_total, 0);
}

TEST_F(AdmitTest, TwoAuthorizationHeadersAre400) {
  UseTenants();
  AdmitResult result = Run(
      Post(kChat, {{"Authorization", "Bearer acme-key"}, {"Authorization", "Bearer beta-key"}}));
  EXPECT_EQ(Refused(result).head.status, 400);
  EXPECT_EQ(Rejection(result), "bad_request");
}

TEST_F(AdmitTest, AMalformedBodyIs400NamingTheFieldAndACompressedOne415) {
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  AdmitResult bad = Run(Post(R"({"model":"m","messages":"not a list"})"));
  const net::Response response = Refused(bad);
  EXPECT_EQ(response.head.status, 400);
  EXPECT_THAT(response.body, HasSubstr("\"param\":\"messages\""));
  EXPECT_EQ(Rejection(bad), "bad_request");

  AdmitResult gzip = Run(Post("\x1f\x8b\x08 not json", {{"Content-Encoding", "gzip"}}));
  const net::Response compressed = Refused(gzip);
  EXPECT_EQ(compressed.head.status, 415);
  EXPECT_THAT(compressed.body, HasSubstr("Content-Encoding 'gzip' is not supported"));
}

TEST_F(AdmitTest, AModelTheTenantMayNotUseIs404) {
  UseTenants([](TenancyConfig& t) { t.tenants[0].models = {"other"}; });
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  AdmitResult result = Run(Post(kChat, {{"Authorization", "Bearer acme-key"}}));
  const net::Response response = Refused(result);
  EXPECT_EQ(response.head.status, 404);
  EXPECT_THAT(response.body, HasSubstr("do not have access to it"));
  EXPECT_EQ(Rejection(result), "model_not_allowed");
}

TEST_F(AdmitTest, AModelNoBackendServesIs404) {
  ASSERT_TRUE(backends_
                  .Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000",
                                   "models": ["other"]})"))
                  .ok());
  AdmitResult result = Run(Post(kChat));
  const net::Response response = Refused(result);
  EXPECT_EQ(response.head.status, 404);
  EXPECT_THAT(response.body, HasSubstr("The model `m` does not exist."));
  EXPECT_EQ(Rejection(result), "unknown_model");
}

TEST_F(AdmitTest, ARequestOverItsTenantsRateIs429WithRetryAfter) {
  UseTenants([](TenancyConfig& t) {
    t.tenants[0].limits.requests = BucketLimit{.rate_per_s = 0.5, .burst = 1};
  });
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  net::HttpRequest request = Post(kChat, {{"Authorization", "Bearer acme-key"}});
  EXPECT_TRUE(std::holds_alternative<Admitted>(Run(request)));  // the burst
  AdmitResult result = Run(request);
  const net::Response response = Refused(result);
  EXPECT_EQ(response.head.status, 429);
  EXPECT_EQ(Field(response, "retry-after"), "2");  // one request per 2 s
  EXPECT_THAT(response.body, HasSubstr("Rate limit reached for tenant acme on requests"));
  EXPECT_EQ(Rejection(result), "rate_limited");
  // The other tenant is not limited by acme's bucket.
  EXPECT_TRUE(
      std::holds_alternative<Admitted>(Run(Post(kChat, {{"Authorization", "Bearer beta-key"}}))));
}

// A streamed upload's body, whose first read runs `during_read` (what the worker does meanwhile)
// and returns `body`; then the end.
class UploadReader : public net::BodyReader {
 public:
  UploadReader(std::string body, std::function<void()> during_read)
      : body_(std::move(body)), during_read_(std::move(during_read)) {}
  net::Task<absl::StatusOr<std::string_view>> ReadSome() override {
    if (done_) co_return std::string_view();
    done_ = true;
    if (during_read_) during_read_();
    co_return std::string_view(body_);
  }
  bool done() const override { return done_; }

 private:
  std::string body_;
  std::function<void()> during_read_;
  bool done_ = false;
};

// A reload that drops the worker's Redis store while an upload's model is read: the buckets
// are taken from the store as it is then (none: local limits), never from the one dropped.
TEST_F(AdmitTest, AStoreDroppedWhileAnUploadIsReadIsNotUsed) {
  UseTenants([](TenancyConfig& t) {
    t.tenants[0].limits.requests = BucketLimit{.rate_per_s = 10, .burst = 10};
  });
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  RedisRateStoreOptions options;
  options.endpoint = *net::ParseRedisUrl("redis://127.0.0.1:1");  // nothing listens there
  redis_ = std::make_unique<RedisRateStore>(io_.get_executor(), options, clock_);
  const std::string body =
      "--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n--b--\r\n";
  UploadReader reader(body, [this] { redis_.reset(); });
  net::HttpRequest request = Post("", {{"Authorization", "Bearer acme-key"},
                                       {"Content-Type", "multipart/form-data; boundary=b"}},
                                  "/v1/audio/transcriptions");
  request.body_reader = &reader;
  EXPECT_TRUE(std::holds_alternative<Admitted>(Run(request)));
  EXPECT_EQ(redis_, nullptr);
  // Decided locally without a Redis failure: the dropped store was not asked.
  const std::string text = metrics_.Serialize(backends_, 0);
  EXPECT_THAT(text, HasSubstr("warmroute_rate_limit_redis_fallbacks_total 0"));
}

TEST_F(AdmitTest, ARequestOverItsTenantsConcurrencyIs429UntilOneEnds) {
  UseTenants([](TenancyConfig& t) { t.tenants[0].limits.max_concurrent = 1; });
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  net::HttpRequest request = Post(kChat, {{"Authorization", "Bearer acme-key"}});
  std::optional<AdmitResult> first = Run(request);
  ASSERT_TRUE(std::holds_alternative<Admitted>(*first));
  AdmitResult second = Run(request);
  const net::Response response = Refused(second);
  EXPECT_EQ(response.head.status, 429);
  EXPECT_EQ(Field(response, "retry-after"), "1");
  EXPECT_THAT(response.body, HasSubstr("on concurrent (1 requests at once)"));
  first.reset();  // the first request ends: its slot is free again
  EXPECT_TRUE(std::holds_alternative<Admitted>(Run(request)));
}

TEST_F(AdmitTest, AFullAdmissionQueueIs429) {
  admission_ =
      std::make_unique<AdmissionGate>(AdmissionOptions{.max_in_flight = 1, .max_queue = 0});
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  AdmitResult first = Run(Post(kChat));
  ASSERT_TRUE(std::holds_alternative<Admitted>(first));
  AdmitResult second = Run(Post(kChat));
  const net::Response response = Refused(second);
  EXPECT_EQ(response.head.status, 429);
  EXPECT_THAT(response.body, HasSubstr("admission queue is full"));
  EXPECT_EQ(Rejection(second), "queue_full");
}

TEST_F(AdmitTest, NoBackendIs503AndNoEligibleBackendIs503NamingTheModel) {
  AdmitResult none = Run(Post(kChat));
  net::Response response = Refused(none);
  EXPECT_EQ(response.head.status, 503);
  EXPECT_THAT(response.body, HasSubstr("the gateway has no backends"));
  EXPECT_EQ(Rejection(none), "no_backend");

  // Every backend draining (a down one would still be tried: panic mode, backends.h).
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  ASSERT_TRUE(backends_.SetDraining("r0", true).ok());
  AdmitResult down = Run(Post(kChat));
  response = Refused(down);
  EXPECT_EQ(response.head.status, 503);
  EXPECT_THAT(response.body, HasSubstr("no healthy backend can serve model `m`"));
  EXPECT_EQ(Rejection(down), "no_backend");
}

TEST_F(AdmitTest, AModelRouteGoesWhereTheLeastWorkIsAmongTheModelsBackends) {
  ASSERT_TRUE(backends_
                  .Add(Backend(R"({"name": "chat0", "url": "http://10.0.0.1:8000",
                                   "models": ["m"]})"))
                  .ok());
  ASSERT_TRUE(backends_
                  .Add(Backend(R"({"name": "emb0", "url": "http://10.0.0.2:8000",
                                   "models": ["bge"]})"))
                  .ok());
  ASSERT_TRUE(backends_
                  .Add(Backend(R"({"name": "emb1", "url": "http://10.0.0.3:8000",
                                   "models": ["bge"]})"))
                  .ok());
  net::HttpRequest request =
      Post(R"({"model":"bge","input":["a","b"]})", {}, "/v1/embeddings");
  AdmitResult first = Run(request);
  ASSERT_TRUE(std::holds_alternative<Admitted>(first));
  AdmitResult second = Run(request);
  ASSERT_TRUE(std::holds_alternative<Admitted>(second));
  const std::string a = std::get<Admitted>(first).dispatch.target->name;
  const std::string b = std::get<Admitted>(second).dispatch.target->name;
  EXPECT_TRUE(a == "emb0" || a == "emb1") << a;
  EXPECT_NE(a, b);  // the second goes to the idle one
  EXPECT_EQ(std::get<Admitted>(second).dispatch.reason, routing::Reason::kLeastLoad);
  EXPECT_EQ(call_.model, "bge");
  EXPECT_EQ(std::get<Admitted>(second).body.For(EngineKind::kVllm), request.body);  // as sent

  AdmitResult unknown = Run(Post(R"({"model":"e5","input":"x"})", {}, "/v1/embeddings"));
  EXPECT_EQ(Refused(unknown).head.status, 404);
  AdmitResult bad = Run(Post(R"({"model":5})", {}, "/tokenize"));
  EXPECT_EQ(Refused(bad).head.status, 400);
}

TEST_F(AdmitTest, ATenantsModelsAndKeyApplyToEveryRoute) {
  UseTenants([](TenancyConfig& t) { t.tenants[0].models = {"m"}; });
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  const net::HttpHeaders acme = {{"Authorization", "Bearer acme-key"}};
  EXPECT_EQ(Refused(Run(Post(R"({"model":"bge","input":"x"})", acme, "/v1/embeddings")))
                .head.status,
            404);
  EXPECT_EQ(Refused(Run(Post(R"({"model":"m","input":"x"})", {}, "/v1/embeddings"))).head.status,
            401);
  EXPECT_EQ(Refused(Run(Post(R"({"model":"bge","input":"hi"})", acme, "/v1/responses")))
                .head.status,
            404);
  AdmitResult ok = Run(Post(R"({"model":"m","input":"x"})", acme, "/v1/embeddings"));
  ASSERT_TRUE(std::holds_alternative<Admitted>(ok));
  EXPECT_EQ(call_.tenant, "acme");
  // No cache_salt on a route whose body engines do not cache.
  EXPECT_EQ(std::get<Admitted>(ok).body.For(EngineKind::kVllm), R"({"model":"m","input":"x"})");
}

TEST_F(AdmitTest, AFollowUpGoesToTheBackendItsResponseIdNames) {
  for (const char* name : {"r0", "r1", "r2"}) {
    ASSERT_TRUE(backends_
                    .Add(Backend(absl::StrCat(R"({"name": ")", name, R"(", "url": "http://10.0.0.)",
                                              name[1] - '0' + 1, R"(:8000"})")))
                    .ok());
  }
  Rng rng(3);
  const std::string id = NewResponseId("r2", rng);
  for (int i = 0; i < 3; ++i) {
    AdmitResult result = Run(
        Post(absl::StrCat(R"({"model":"m","input":"next","previous_response_id":")", id, R"("})"),
             {}, "/v1/responses"));
    ASSERT_TRUE(std::holds_alternative<Admitted>(result));
    EXPECT_EQ(std::get<Admitted>(result).dispatch.target->name, "r2");
    EXPECT_EQ(std::get<Admitted>(result).dispatch.reason, routing::Reason::kPinned);
  }
  net::HttpRequest get;
  get.method = "GET";
  get.target = get.path = "/v1/responses/" + id;
  AdmitResult fetched = Run(get);
  ASSERT_TRUE(std::holds_alternative<Admitted>(fetched));
  EXPECT_EQ(std::get<Admitted>(fetched).dispatch.target->name, "r2");
  EXPECT_FALSE(std::get<Admitted>(fetched).usage_format.has_value());  // no new prefill

  // Its backend gone: a 404 naming the response, never another backend's answer.
  ASSERT_TRUE(backends_.Remove("r2").ok());
  AdmitResult gone =
      Run(Post(absl::StrCat(R"({"model":"m","input":"next","previous_response_id":")", id, R"("})"),
               {}, "/v1/responses"));
  const net::Response response = Refused(gone);
  EXPECT_EQ(response.head.status, 404);
  EXPECT_THAT(response.body, HasSubstr(id));
  EXPECT_THAT(response.body, HasSubstr("\"param\":\"previous_response_id\""));
  EXPECT_EQ(Rejection(gone), "response_gone");
  EXPECT_EQ(Refused(Run(get)).head.status, 404);
}

TEST_F(AdmitTest, ANewResponseAsksForAnIdOnlyWhenTheClientDidNot) {
  ASSERT_TRUE(backends_.Add(Backend(R"({"name": "r0", "url": "http://10.0.0.1:8000"})")).ok());
  AdmitResult fresh = Run(Post(R"({"model":"m","input":"hi"})", {}, "/v1/responses"));
  ASSERT_TRUE(std::holds_alternative<Admitted>(fresh));
  EXPECT_TRUE(std::get<Admitted>(fresh).body.issues_response_ids());
  EXPECT_EQ(std::get<Admitted>(fresh).usage_format, net::UsageFormat::kResponses);
  AdmitResult own =
      Run(Post(R"({"model":"m","input":"hi","request_id":"mine"})", {}, "/v1/responses"));
  ASSERT_TRUE(std::holds_alternative<Admitted>(own));
  EXPECT_FALSE(std::get<Admitted>(own).body.issues_response_ids());
  // A chat request is never given one.
  AdmitResult chat = Run(Post(kChat));
  EXPECT_FALSE(std::get<Admitted>(chat).body.issues_response_ids());
}

// Before admit: requests over the listener's limits are refused by the HTTP parser.
TEST(ListenerRefusalTest, ABodyOverTheLimitIs413AndAHeadOverItIs431) {
  net::Http1RequestParser::Error error = net::Http1RequestParser::Error::kNone;
  net::Http1RequestParser body_limited(/*header_limit=*/1024, /*body_limit=*/10);
  body_limited.Put("POST /v1/chat/completions HTTP/1.1\r\nHost: g\r\nContent-Length: 11\r\n\r\n",
                   error);
  ASSERT_EQ(error, net::Http1RequestParser::Error::kBodyTooLarge);
  net::Response response = body_limited.RefusalOf(error);
  EXPECT_EQ(response.head.status, 413);
  EXPECT_THAT(response.body, HasSubstr("request body exceeds the limit of 10 bytes"));

  net::Http1RequestParser head_limited(/*header_limit=*/64, /*body_limit=*/1 << 20);
  head_limited.Put("POST /v1/chat/completions HTTP/1.1\r\nHost: g\r\nX-Long: " +
                       std::string(100, 'x') + "\r\n\r\n",
                   error);
  ASSERT_EQ(error, net::Http1RequestParser::Error::kHeaderTooLarge);
  response = head_limited.RefusalOf(error);
  EXPECT_EQ(response.head.status, 431);
  EXPECT_THAT(response.body, HasSubstr("RequestHeaderFieldsTooLargeError"));
}

}  // namespace
}  // namespace warmroute::gateway
