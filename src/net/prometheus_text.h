// A parser of the Prometheus text exposition format, version 0.0.4 (what vLLM, SGLang,
// llama.cpp's server and prometheus-cpp serve on /metrics), for the gateway's engine scraper.
//
// Accepted, line by line (LF or CRLF):
//   - blank lines, and lines whose first non-blank character is '#' (# HELP, # TYPE, comments):
//     skipped;
//   - samples: name [ '{' label '=' "value" { ',' label '=' "value" } [ ',' ] '}' ] value
//     [ timestamp ], tokens separated by spaces or tabs. Names match [a-zA-Z_:][a-zA-Z0-9_:]*
//     (colons included: vllm:num_requests_running), label names [a-zA-Z_][a-zA-Z0-9_]*. Label
//     values are double-quoted with the escapes \\, \" and \n. The value is a float as Go's
//     ParseFloat reads it (1, -2.5, 1e+06, NaN, +Inf, -Inf, case-insensitive), the optional
//     timestamp an integer of milliseconds (accepted and dropped).
// Anything else is InvalidArgument "line N: <problem>" (N from 1). Arbitrary bytes never crash
// the parser; they are an error at worst.
//
// Usage:
//   absl::StatusOr<std::vector<MetricSample>> samples = ParsePrometheusText(body);
//   if (!samples.ok()) return samples.status();
//   for (const MetricSample& s : *samples) {
//     if (s.name == "vllm:num_requests_running") running += s.value;
//     std::optional<std::string_view> engine = FindLabel(s, "engine");
//   }
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::net {

struct MetricSample {
  std::string name;
  // In the order of the text, escapes resolved. Label names are unique within a sample.
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

// Every sample of `text`, in order. InvalidArgument naming the line and the problem on
// malformed input (a bad name, label, escape, value or timestamp; duplicate label names).
absl::StatusOr<std::vector<MetricSample>> ParsePrometheusText(std::string_view text);

// The value of label `name` of `sample`, if it has one. The view lives as long as `sample`.
std::optional<std::string_view> FindLabel(const MetricSample& sample, std::string_view name);

}  // namespace warmroute::net
