// The common shape of the closed-loop generators (multi-turn, agent): sessions start open-loop
// at Poisson arrivals; a session's turn k+1 is released only when the driver reports turn k's
// answer (OnResponse), at the response time plus a think time, with the real answer appended to
// the history. A subclass writes the first turn and each continuation; this class schedules.
//
// Ordering: Next() returns the earliest pending request. A turn released by OnResponse at `now`
// arrives at or after `now`, but may be earlier than a session start already returned.
//
// Memory: only sessions that have started and not finished are held.
// Thread-safety: none; one owner drives a workload.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/rng.h"
#include "core/workload/sampling.h"
#include "core/workload/workload.h"

namespace warmroute::workload {

class SessionWorkload : public Workload {
 public:
  struct Session {
    explicit Session(uint64_t seed) : rng(seed) {}
    uint64_t index = 0;  // 0-based; WorkloadRequest::session is index + 1
    int turns = 0;       // this session's number of turns
    int turn = 0;        // the turn being sent or awaited
    std::string tenant;
    std::vector<request::ChatMessage> messages;
    int64_t max_tokens = 16;
    uint64_t kind = 0;  // the subclass's own choice, e.g. the agent type
    Rng rng;            // this session's own stream: its content and think times
  };

  // `options.num_requests` turns in all (REQUIRES: >= 0), in sessions of `turns_per_session`
  // (REQUIRES: >= 1; the last session may be shorter), starting at Poisson arrivals of
  // `options.rate_per_s`; think times are exponential with mean `think_time_mean_s` (0: none).
  SessionWorkload(const WorkloadOptions& options, int turns_per_session, double think_time_mean_s,
                  uint64_t seed);

  std::optional<WorkloadRequest> Next() final;
  // Releases the next turn of the answered request's session. An unknown or already answered
  // id is ignored. A driver whose request failed reports it with the answer it got (maybe ""),
  // so the session goes on.
  void OnResponse(uint64_t id, std::string_view answer, Duration now) final;
  bool Done() const final;

 protected:
  // Writes turn 0 of `session` (index, turns and rng set): tenant, messages, max_tokens.
  virtual void Begin(Session& session) = 0;
  // Appends `answer` (turn session.turn - 1's answer) and the next turn's message to the history.
  virtual void Continue(Session& session, std::string_view answer) = 0;

 private:
  struct Pending {
    Duration arrival;
    uint64_t seq;  // release order: ties are broken by it, so the order is deterministic
    uint64_t session;
    bool operator>(const Pending& other) const {
      return arrival != other.arrival ? arrival > other.arrival : seq > other.seq;
    }
  };

  WorkloadRequest Emit(Session& session, Duration arrival);

  const std::string model_;
  const int64_t num_requests_;
  const int turns_per_session_;
  const double think_time_mean_s_;
  const uint64_t seed_;
  const uint64_t num_sessions_;
  uint64_t started_ = 0;
  Duration next_start_{0};
  PoissonArrivals starts_;
  uint64_t next_id_ = 0;
  uint64_t next_seq_ = 0;
  absl::flat_hash_map<uint64_t, Session> sessions_;   // by session index
  absl::flat_hash_map<uint64_t, uint64_t> awaiting_;  // request id -> session index
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> released_;
};

}  // namespace warmroute::workload
