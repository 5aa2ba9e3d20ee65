// The common shape of the open-loop generators (support-bot, shared-prefix, unique): a fixed
// number of independent requests at Poisson arrival times. A subclass fills in each request's
// content; this class numbers them, times them and answers Done().
//
// Thread-safety: none; one owner drives a workload.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/workload/sampling.h"
#include "core/workload/workload.h"

namespace warmroute::workload {

class OpenLoopWorkload : public Workload {
 public:
  // `count` requests (REQUIRES: >= 0) at Poisson arrivals of `rate_per_s` (REQUIRES: > 0) drawn
  // from a stream of `seed`.
  OpenLoopWorkload(int64_t count, double rate_per_s, uint64_t seed);

  std::optional<WorkloadRequest> Next() final;
  // Open loop: responses release nothing.
  void OnResponse(uint64_t, std::string_view, Duration) final {}
  bool Done() const final { return next_ >= count_; }

 protected:
  // Fills request `index` (0-based, called once per index in increasing order): everything but
  // id and arrival, which are set already.
  virtual void Fill(int64_t index, WorkloadRequest& request) = 0;

 private:
  const int64_t count_;
  int64_t next_ = 0;
  PoissonArrivals arrivals_;
};

}  // namespace warmroute::workload
