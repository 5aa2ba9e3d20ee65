// Precise mode's I/O: the gateway's subscription to its engines' KV events (docs/precise-mode.md).
//
// One dedicated thread owns every ZMQ socket: per subscribed backend and data-parallel rank, a
// SUB socket connected to the rank's endpoint (subscribed to the configured topic) and, when a
// replay endpoint is configured, a DEALER connected to the rank's replay ROUTER. The thread
// polls them all (zmq_poll, `poll_timeout`), hands each message to the backend's
// kv_events::BackendEventFeed (stream, decode: outside any lock), then applies the feed to the
// Router through Backends::ApplyKvEvents (the writer and the index: a short section under the
// routing lock), sends the replay requests the feed asks for, and reports the batches' lag
// (engine timestamp → applied) to GatewayMetrics. Every `membership_interval` it asks which
// feeds are wanted (SubscriptionPlan: only backends of the current fleet with kv_events; none
// in approximate mode), closes the feeds of removed backends and opens new ones, ticks every
// feed (replay timeouts, ends of rebuilds) and checks health flaps (HealthFlapWatch: the slice
// is cleared when the backend was found down).
//
// Malformed input (a frame count, sequence or payload the feed rejects, a block size or rank
// mismatch) is counted and dropped by the feed; it is logged once per backend each time the
// backend's messages go from fine to malformed, never per frame. A message on the publisher's
// socket with another topic (ZMQ filters by prefix) is ignored. Sockets bound nowhere just
// retry their connection in the background (ZMQ), and nothing is read from an endpoint that no
// backend configures.
//
// Usage:
//   KvEventSubscriber subscriber(backends, metrics, clock, [&] { return WantedFeeds(); });
//   subscriber.Start();
//   ...
//   subscriber.Stop();  // joins the thread, closes the sockets
//
// Thread-safety: Start and Stop from one thread; `wanted` is called on the subscriber's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "core/kv_events/event_stream.h"
#include "gateway/fleet/backends.h"
#include "gateway/kv_events/subscription_plan.h"
#include "gateway/observability/gateway_metrics.h"

namespace warmroute::gateway {

struct KvEventSubscriberOptions {
  std::chrono::milliseconds poll_timeout{20};
  Duration membership_interval = std::chrono::milliseconds(200);
  kv_events::EventStreamOptions stream{};
  // Messages read from one socket per poll round, so that one busy publisher cannot starve the
  // others (the rest stay queued in ZMQ).
  int max_messages_per_round = 512;
  // ZMQ_MAXMSGSIZE: a larger message is dropped by ZMQ (vLLM's batches are far smaller).
  int64_t max_message_bytes = int64_t{64} << 20;
  // ZMQ_RCVHWM of the SUB sockets, as vLLM's publisher's default high-water mark.
  int receive_hwm = 100'000;
};

class KvEventSubscriber {
 public:
  using WantedFeeds = std::function<std::vector<FeedSpec>()>;

  KvEventSubscriber(Backends& backends, GatewayMetrics& metrics, const Clock& clock,
                    WantedFeeds wanted, KvEventSubscriberOptions options = {});
  ~KvEventSubscriber();
  KvEventSubscriber(const KvEventSubscriber&) = delete;
  KvEventSubscriber& operator=(const KvEventSubscriber&) = delete;

  void Start();
  void Stop();

 private:
  class Loop;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

}  // namespace warmroute::gateway
