#include "gateway/kv_events/kv_event_subscriber.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "absl/container/flat_hash_map.h"
#include "core/kv_events/backend_event_feed.h"
#include "gateway/kv_events/health_flap_watch.h"

namespace warmroute::gateway {
namespace {

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

class KvEventSubscriber::Loop {
 public:
  Loop(Backends& backends, GatewayMetrics& metrics, const Clock& clock, WantedFeeds wanted,
       KvEventSubscriberOptions options)
      : backends_(backends),
        metrics_(metrics),
        clock_(clock),
        wanted_(std::move(wanted)),
        options_(options) {}

  void Run() {
    TimePoint next_membership{};
    std::vector<zmq::pollitem_t> items;
    struct Ref {
      Feed* feed;
      int rank;
      bool replay;
    };
    std::vector<Ref> refs;
    while (!stop_.load(std::memory_order_relaxed)) {
      TimePoint now = clock_.Now();
      const bool membership = now >= next_membership;
      if (membership) {
        Reconcile();
        next_membership = now + options_.membership_interval;
      }
      items.clear();
      refs.clear();
      for (auto& [backend, feed] : feeds_) {
        feed->received = false;
        for (size_t r = 0; r < feed->ranks.size(); ++r) {
          Rank& rank = feed->ranks[r];
          items.push_back({rank.sub.handle(), 0, ZMQ_POLLIN, 0});
          refs.push_back({feed.get(), static_cast<int>(r), false});
          if (rank.replay) {
            items.push_back({rank.replay->handle(), 0, ZMQ_POLLIN, 0});
            refs.push_back({feed.get(), static_cast<int>(r), true});
          }
        }
      }
      if (items.empty()) {
        std::this_thread::sleep_for(options_.poll_timeout);
        continue;
      }
      try {
        zmq::poll(items, options_.poll_timeout);
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) spdlog::error("kv events: poll: {}", e.what());
        continue;
      }
      for (size_t i = 0; i < items.size(); ++i) {
        if ((items[i].revents & ZMQ_POLLIN) == 0) continue;
        Read(*refs[i].feed, refs[i].rank, refs[i].replay);
      }
      now = clock_.Now();
      for (auto& [backend, feed] : feeds_) {
        if (membership) feed->feed.Tick(now);
        if (membership || feed->received) Apply(*feed, now);
      }
    }
    feeds_.clear();
  }

  void Stop() { stop_.store(true, std::memory_order_relaxed); }

 private:
  struct Rank {
    zmq::socket_t sub;
    std::optional<zmq::socket_t> replay;
  };
  struct Feed {
    Feed(const FeedSpec& s, const kv_events::EventStreamOptions& stream)
        : spec(s),
          feed(s.backend, {.block_size = s.block_size,
                           .dp_ranks = s.kv_events.dp_ranks,
                           .stream = WithReplay(stream, !s.kv_events.replay_endpoint.empty()),
                           .rank_slices = s.rank_slices}) {}
    static kv_events::EventStreamOptions WithReplay(kv_events::EventStreamOptions o, bool replay) {
      o.replay_configured = replay;
      return o;
    }
    FeedSpec spec;
    kv_events::BackendEventFeed feed;
    std::vector<Rank> ranks;
    HealthFlapWatch flaps;
    int64_t logged_errors = 0;
    kv_events::StreamState logged_state = kv_events::StreamState::kStarting;
    bool received = false;
    bool gone = false;  // the backend left the fleet; closed at the next reconcile
  };

  void Reconcile() {
    const SubscriptionChanges changes = plan_.Update(wanted_());
    for (routing::BackendId backend : changes.close) {
      auto it = feeds_.find(backend);
      if (it == feeds_.end()) continue;
      spdlog::info("kv events: unsubscribed from backend {} ({})", it->second->spec.name,
                   it->second->spec.kv_events.endpoint);
      backends_.EndKvEvents(backend);  // a no-op when the backend itself left
      feeds_.erase(it);
    }
    for (const FeedSpec& spec : changes.open) Open(spec);
  }

  void Open(const FeedSpec& spec) {
    auto feed = std::make_unique<Feed>(spec, options_.stream);
    try {
      for (int r = 0; r < spec.kv_events.dp_ranks; ++r) {
        zmq::socket_t sub(context_, zmq::socket_type::sub);
        sub.set(zmq::sockopt::linger, 0);
        sub.set(zmq::sockopt::rcvhwm, options_.receive_hwm);
        sub.set(zmq::sockopt::maxmsgsize, options_.max_message_bytes);
        sub.set(zmq::sockopt::subscribe, spec.kv_events.topic);
        sub.connect(KvEventsEndpointOfRank(spec.kv_events.endpoint, r));
        Rank rank{std::move(sub), std::nullopt};
        if (!spec.kv_events.replay_endpoint.empty()) {
          zmq::socket_t dealer(context_, zmq::socket_type::dealer);
          dealer.set(zmq::sockopt::linger, 0);
          dealer.set(zmq::sockopt::maxmsgsize, options_.max_message_bytes);
          dealer.connect(KvEventsEndpointOfRank(spec.kv_events.replay_endpoint, r));
          rank.replay = std::move(dealer);
        }
        feed->ranks.push_back(std::move(rank));
      }
    } catch (const zmq::error_t& e) {
      // The config validated the endpoints; a failure here is the system's (descriptors).
      spdlog::error("kv events: cannot subscribe to backend {} ({}): {}", spec.name,
                    spec.kv_events.endpoint, e.what());
      return;
    }
    spdlog::info("kv events: subscribed to backend {} ({}{}{}, {} rank(s){}, blocks of {} tokens)",
                 spec.name, spec.kv_events.endpoint,
                 spec.kv_events.replay_endpoint.empty() ? "" : ", replay ",
                 spec.kv_events.replay_endpoint, spec.kv_events.dp_ranks,
                 spec.rank_slices.empty() ? "" : " each in its own slice", spec.block_size);
    feeds_[spec.backend] = std::move(feed);
  }

  void Read(Feed& feed, int rank, bool replay) {
    if (feed.gone) return;
    Rank& r = feed.ranks[static_cast<size_t>(rank)];
    zmq::socket_t& socket = replay ? *r.replay : r.sub;
    for (int n = 0; n < options_.max_messages_per_round; ++n) {
      frames_.clear();
      std::optional<size_t> got;
      try {
        got = zmq::recv_multipart(socket, std::back_inserter(frames_), zmq::recv_flags::dontwait);
      } catch (const zmq::error_t& e) {
        spdlog::warn("kv events: backend {}: receive: {}", feed.spec.name, e.what());
        return;
      }
      if (!got) return;
      views_.clear();
      for (const zmq::message_t& f : frames_) views_.push_back(f.to_string_view());
      feed.received = true;
      const TimePoint now = clock_.Now();
      if (replay) {
        feed.feed.OnReplayFrames(views_, now, rank);
      } else if (views_.size() == 3 && views_[0] != feed.spec.kv_events.topic) {
        continue;  // another topic of the same publisher (SUB filters by prefix)
      } else {
        feed.feed.OnLiveFrames(views_, now, rank);
      }
    }
  }

  void Apply(Feed& feed, TimePoint now) {
    if (feed.gone) return;
    std::optional<int64_t> downs = backends_.ApplyKvEvents(feed.spec.backend, feed.feed);
    if (!downs) {
      feed.gone = true;
      return;
    }
    if (feed.flaps.Observe(*downs)) {
      spdlog::info("kv events: backend {} was found down: its index slice is cleared and rebuilt",
                   feed.spec.name);
      feed.feed.Clear(now);
      (void)backends_.ApplyKvEvents(feed.spec.backend, feed.feed);
    }
    if (!feed.feed.applied_batch_ts().empty()) {
      lags_.clear();
      const double wall = WallSeconds();
      for (double ts : feed.feed.applied_batch_ts()) lags_.push_back(wall - ts);
      metrics_.OnKvEventLags(feed.spec.name, lags_);
    }
    for (const kv_events::ReplayRequest& r : feed.feed.TakeReplayRequests()) {
      Rank& rank = feed.ranks[static_cast<size_t>(r.rank)];
      if (!rank.replay) continue;
      const std::string start = kv_events::EncodeReplayRequest(r.from_seq);
      try {
        const auto more = zmq::send_flags::sndmore | zmq::send_flags::dontwait;
        if (!rank.replay->send(zmq::const_buffer(nullptr, 0), more) ||
            !rank.replay->send(zmq::buffer(start), zmq::send_flags::dontwait)) {
          spdlog::warn("kv events: backend {}: replay request not sent (queue full)",
                       feed.spec.name);
        }
      } catch (const zmq::error_t& e) {
        spdlog::warn("kv events: backend {}: replay request: {}", feed.spec.name, e.what());
      }
    }
    if (feed.feed.error_transitions() > feed.logged_errors) {
      feed.logged_errors = feed.feed.error_transitions();
      spdlog::warn(
          "kv events: backend {}: malformed input dropped ({}); its slice rebuilds "
          "(logged again only after a good message)",
          feed.spec.name, feed.feed.last_error());
    }
    const kv_events::StreamState state = feed.feed.state();
    if (state != feed.logged_state) {
      spdlog::info("kv events: backend {}: {} -> {}", feed.spec.name,
                   kv_events::StreamStateName(feed.logged_state),
                   kv_events::StreamStateName(state));
      feed.logged_state = state;
    }
  }

  Backends& backends_;
  GatewayMetrics& metrics_;
  const Clock& clock_;
  WantedFeeds wanted_;
  KvEventSubscriberOptions options_;
  std::atomic<bool> stop_{false};
  zmq::context_t context_{1};
  SubscriptionPlan plan_;
  absl::flat_hash_map<routing::BackendId, std::unique_ptr<Feed>> feeds_;
  std::vector<zmq::message_t> frames_;
  std::vector<std::string_view> views_;
  std::vector<double> lags_;
};

KvEventSubscriber::KvEventSubscriber(Backends& backends, GatewayMetrics& metrics,
                                     const Clock& clock, WantedFeeds wanted,
                                     KvEventSubscriberOptions options)
    : loop_(std::make_unique<Loop>(backends, metrics, clock, std::move(wanted), options)) {}

KvEventSubscriber::~KvEventSubscriber() { Stop(); }

void KvEventSubscriber::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { loop_->Run(); });
}

void KvEventSubscriber::Stop() {
  loop_->Stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace warmroute::gateway
