#include "core/workload/session_workload.h"

#include <algorithm>
#include <utility>

namespace warmroute::workload {
namespace {
constexpr uint64_t kStartSalt = 0x5e55;
constexpr uint64_t kSessionSalt = 0x5e56;
}  // namespace

SessionWorkload::SessionWorkload(const WorkloadOptions& options, int turns_per_session,
                                 double think_time_mean_s, uint64_t seed)
    : model_(options.model),
      num_requests_(std::max<int64_t>(options.num_requests, 0)),
      turns_per_session_(std::max(turns_per_session, 1)),
      think_time_mean_s_(think_time_mean_s),
      seed_(seed),
      num_sessions_(
          static_cast<uint64_t>((num_requests_ + turns_per_session_ - 1) / turns_per_session_)),
      starts_(options.rate_per_s, Rng(StreamSeed(seed, kStartSalt, 0))) {
  if (num_sessions_ > 0) next_start_ = starts_.Next();
}

std::optional<WorkloadRequest> SessionWorkload::Next() {
  const bool can_start = started_ < num_sessions_;
  if (!released_.empty() && (!can_start || released_.top().arrival <= next_start_)) {
    const Pending pending = released_.top();
    released_.pop();
    return Emit(sessions_.at(pending.session), pending.arrival);
  }
  if (!can_start) return std::nullopt;
  const uint64_t index = started_++;
  const Duration arrival = next_start_;
  if (started_ < num_sessions_) next_start_ = starts_.Next();
  auto [it, inserted] = sessions_.try_emplace(index, StreamSeed(seed_, kSessionSalt, index));
  Session& session = it->second;
  session.index = index;
  session.turns = static_cast<int>(std::min<int64_t>(
      turns_per_session_, num_requests_ - static_cast<int64_t>(index) * turns_per_session_));
  session.turn = 0;
  Begin(session);
  return Emit(session, arrival);
}

WorkloadRequest SessionWorkload::Emit(Session& session, Duration arrival) {
  WorkloadRequest request;
  request.id = next_id_++;
  request.arrival = arrival;
  request.model = model_;
  request.tenant = session.tenant;
  request.endpoint = request::Endpoint::kChatCompletions;
  request.messages = session.messages;
  request.max_tokens = session.max_tokens;
  request.session = session.index + 1;
  request.turn = session.turn;
  awaiting_.emplace(request.id, session.index);
  return request;
}

void SessionWorkload::OnResponse(uint64_t id, std::string_view answer, Duration now) {
  const auto it = awaiting_.find(id);
  if (it == awaiting_.end()) return;
  const uint64_t index = it->second;
  awaiting_.erase(it);
  auto session_it = sessions_.find(index);
  Session& session = session_it->second;
  ++session.turn;
  if (session.turn >= session.turns) {
    sessions_.erase(session_it);
    return;
  }
  Continue(session, answer);
  Duration think{0};
  if (think_time_mean_s_ > 0) think = FromSeconds(session.rng.Exponential(think_time_mean_s_));
  released_.push(Pending{now + think, next_seq_++, index});
}

bool SessionWorkload::Done() const {
  return started_ >= num_sessions_ && released_.empty() && awaiting_.empty();
}

}  // namespace warmroute::workload
