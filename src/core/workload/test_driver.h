// Test helper: drives a workload the way the simulator does — takes every available request,
// then answers the oldest outstanding one `latency` after its arrival — and records the stream.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "core/workload/workload.h"

namespace warmroute::workload {

struct Drained {
  std::vector<WorkloadRequest> requests;  // in emission order
  std::vector<std::string> answers;       // answers[id]
};

// The answer to request `id`: a few vocabulary-like words, unique per id.
inline std::string AnswerFor(uint64_t id) {
  return "Sure, item " + std::to_string(id) + " is on its way.";
}

inline Drained Drain(Workload& workload, Duration latency = std::chrono::seconds(2),
                     size_t limit = 1000000) {
  Drained out;
  std::deque<WorkloadRequest> outstanding;
  while (out.requests.size() < limit) {
    while (auto request = workload.Next()) {
      out.requests.push_back(*request);
      outstanding.push_back(*request);
    }
    if (outstanding.empty()) break;
    const WorkloadRequest done = outstanding.front();
    outstanding.pop_front();
    if (out.answers.size() <= done.id) out.answers.resize(done.id + 1);
    out.answers[done.id] = AnswerFor(done.id);
    workload.OnResponse(done.id, out.answers[done.id], done.arrival + latency);
  }
  return out;
}

// A stable text form of a request, for stream comparisons.
inline std::string Describe(const WorkloadRequest& r) {
  std::string s = std::to_string(r.id) + "|" + std::to_string(r.arrival.count()) + "|" + r.model +
                  "|" + r.tenant + "|" + std::to_string(static_cast<int>(r.endpoint)) + "|" +
                  std::to_string(r.max_tokens) + "|" + std::to_string(r.session) + "|" +
                  std::to_string(r.turn) + "|" + r.prompt;
  for (const auto& m : r.messages) s += "|" + m.role + ":" + m.content;
  return s;
}

}  // namespace warmroute::workload
