#include "gateway/observability/dashboard_history.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <string_view>

#include "common/json_writer.h"

namespace warmroute::gateway {
namespace {

std::string_view Label(const net::MetricSample& s, std::string_view name) {
  std::optional<std::string_view> v = net::FindLabel(s, name);
  return v.has_value() ? *v : std::string_view();
}

// A bucket's upper bound ("0.5", "+Inf"); nullopt when it is not a number.
std::optional<double> BucketBound(std::string_view le) {
  if (le == "+Inf" || le == "Inf" || le == "inf" || le == "+inf") {
    return std::numeric_limits<double>::infinity();
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(le.data(), le.data() + le.size(), v);
  if (ec != std::errc() || end != le.data() + le.size() || std::isnan(v)) return std::nullopt;
  return v;
}

void AddBucket(const net::MetricSample& s, std::map<double, double>& buckets) {
  if (std::optional<double> le = BucketBound(Label(s, "le"))) buckets[*le] += s.value;
}

double Delta(double before, double after) { return std::max(0.0, after - before); }

// after - before per bucket bound of `after`, each at least 0 (cumulative again, monotone).
std::map<double, double> HistogramDelta(const std::map<double, double>& before,
                                        const std::map<double, double>& after) {
  std::map<double, double> out;
  double floor = 0;
  for (const auto& [le, count] : after) {
    const auto it = before.find(le);
    floor = std::max(floor, Delta(it == before.end() ? 0 : it->second, count));
    out[le] = floor;
  }
  return out;
}

// Nulls stand for "nothing to say" (a ratio over nothing, a quantile of no observation).
void Ratio(JsonWriter& w, double num, double den) {
  if (den > 0) {
    w.Double(num / den);
  } else {
    w.Null();
  }
}

void Quantile(JsonWriter& w, double q, const std::map<double, double>& before,
              const std::map<double, double>& after) {
  const double v = HistogramQuantile(q, before, after);
  if (v >= 0) {
    w.Double(v);
  } else {
    w.Null();
  }
}

std::string Hex(uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

}  // namespace

double HistogramQuantile(double q, const std::map<double, double>& before,
                         const std::map<double, double>& after) {
  const std::map<double, double> d = HistogramDelta(before, after);
  if (d.empty()) return -1;
  const double total = d.rbegin()->second;
  if (total <= 0) return -1;
  const double rank = q * total;
  double lower = 0, below = 0;
  for (const auto& [le, count] : d) {
    if (count >= rank) {
      if (std::isinf(le)) return lower;
      const double in_bucket = count - below;
      if (in_bucket <= 0) return le;
      return lower + (le - lower) * ((rank - below) / in_bucket);
    }
    lower = le;
    below = count;
  }
  return lower;
}

DashboardHistory::DashboardHistory(Options options) : options_(options) {
  options_.samples = std::max<size_t>(options_.samples, 2);
}

void DashboardHistory::Record(const DashboardInput& input) {
  Tick tick;
  tick.wall_s = input.wall_s;
  for (const DashboardBackendState& b : input.backends) tick.backends[b.name].state = b.state;
  for (const net::MetricSample& s : input.metrics) {
    const std::string_view name = s.name;
    if (!name.starts_with("warmroute_")) continue;
    const std::string_view backend = Label(s, "backend");
    // Series of a backend the fleet no longer has (or not yet) are not shown.
    const auto per_backend = [&]() -> Backend* {
      const auto it = tick.backends.find(std::string(backend));
      return it == tick.backends.end() ? nullptr : &it->second;
    };
    if (name == "warmroute_requests_total") {
      tick.reasons[std::string(Label(s, "reason"))] += s.value;
      if (Backend* b = per_backend()) b->requests += s.value;
    } else if (name == "warmroute_prompt_tokens_total") {
      if (Backend* b = per_backend()) b->prompt += s.value;
    } else if (name == "warmroute_reported_cached_tokens_total") {
      if (Backend* b = per_backend()) b->reported += s.value;
    } else if (name == "warmroute_predicted_cached_tokens_total") {
      if (Backend* b = per_backend()) b->predicted += s.value;
    } else if (name == "warmroute_backend_in_flight") {
      if (Backend* b = per_backend()) b->in_flight = s.value;
    } else if (name == "warmroute_backend_outstanding_prefill_tokens") {
      if (Backend* b = per_backend()) b->prefill = s.value;
    } else if (name == "warmroute_backend_healthy") {
      if (Backend* b = per_backend()) b->healthy = s.value;
    } else if (name == "warmroute_backend_kv_cache_usage_ratio") {
      if (Backend* b = per_backend()) b->kv_usage = s.value;
    } else if (name == "warmroute_time_to_first_token_seconds_bucket") {
      AddBucket(s, tick.ttft);
    } else if (name == "warmroute_tenant_requests_total") {
      tick.tenants[std::string(Label(s, "tenant"))].requests += s.value;
    } else if (name == "warmroute_rate_limited_total") {
      tick.tenants[std::string(Label(s, "tenant"))].limited += s.value;
    } else if (name == "warmroute_tenant_time_to_first_token_seconds_bucket") {
      AddBucket(s, tick.tenants[std::string(Label(s, "tenant"))].ttft);
    }
  }
  ticks_.push_back(std::move(tick));
  while (ticks_.size() > options_.samples) ticks_.pop_front();
  hot_ = input.hot_prefixes;
}

std::string DashboardHistory::Json() const {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  if (ticks_.empty()) {
    w.Key("now_s").Null().Key("window_s").Int(0);
    w.Key("interval_s").Double(options_.interval_s);
    w.Key("fleet").BeginObject().EndObject();
    w.Key("series").BeginObject().Key("t").BeginArray().EndArray().EndObject();
    w.Key("backends").BeginArray().EndArray();
    w.Key("hot_prefixes").BeginArray().EndArray();
    w.Key("tenants").BeginArray().EndArray();
    w.EndObject();
    return out;
  }
  const Tick& first = ticks_.front();
  const Tick& last = ticks_.back();
  const double span = last.wall_s - first.wall_s;

  // Fleet sums of a backend counter's increase between two ticks, over the backends in both.
  struct Sums {
    double requests = 0, prompt = 0, reported = 0, predicted = 0;
  };
  const auto sums = [](const Tick& a, const Tick& b) {
    Sums s;
    for (const auto& [name, after] : b.backends) {
      const auto it = a.backends.find(name);
      if (it == a.backends.end()) continue;
      const Backend& before = it->second;
      s.requests += Delta(before.requests, after.requests);
      s.prompt += Delta(before.prompt, after.prompt);
      s.reported += Delta(before.reported, after.reported);
      s.predicted += Delta(before.predicted, after.predicted);
    }
    return s;
  };

  w.Key("now_s").Double(last.wall_s);
  w.Key("window_s").Double(span);
  w.Key("interval_s").Double(options_.interval_s);

  const Sums whole = sums(first, last);
  w.Key("fleet").BeginObject();
  w.Key("hit_rate");
  Ratio(w, whole.reported, whole.prompt);
  w.Key("predicted_hit_rate");
  Ratio(w, whole.predicted, whole.prompt);
  w.Key("ttft_p50_s");
  Quantile(w, 0.5, first.ttft, last.ttft);
  w.Key("ttft_p99_s");
  Quantile(w, 0.99, first.ttft, last.ttft);
  w.Key("requests_per_s");
  Ratio(w, whole.requests, span);
  w.Key("prompt_tokens").Double(whole.prompt);
  w.EndObject();

  // Series: point i covers ticks [i - kSmoothing, i] (from the first tick for the first points).
  std::set<std::string> reasons;  // every reason seen in the span
  for (const Tick& t : ticks_) {
    for (const auto& [reason, _] : t.reasons) reasons.insert(reason);
  }
  w.Key("series").BeginObject();
  const auto series = [&](std::string_view key, auto&& value) {
    w.Key(key).BeginArray();
    for (size_t i = 0; i < ticks_.size(); ++i) {
      if (i == 0) {
        w.Null();
        continue;
      }
      value(ticks_[i - std::min(i, kSmoothing)], ticks_[i]);
    }
    w.EndArray();
  };
  w.Key("t").BeginArray();
  for (const Tick& t : ticks_) w.Double(t.wall_s);
  w.EndArray();
  series("hit_rate", [&](const Tick& a, const Tick& b) {
    const Sums s = sums(a, b);
    Ratio(w, s.reported, s.prompt);
  });
  series("predicted_hit_rate", [&](const Tick& a, const Tick& b) {
    const Sums s = sums(a, b);
    Ratio(w, s.predicted, s.prompt);
  });
  series("ttft_p50_s", [&](const Tick& a, const Tick& b) { Quantile(w, 0.5, a.ttft, b.ttft); });
  series("ttft_p99_s", [&](const Tick& a, const Tick& b) { Quantile(w, 0.99, a.ttft, b.ttft); });
  series("requests_per_s", [&](const Tick& a, const Tick& b) {
    Ratio(w, sums(a, b).requests, b.wall_s - a.wall_s);
  });
  w.Key("reasons").BeginObject();
  for (const std::string& reason : reasons) {
    series(reason, [&](const Tick& a, const Tick& b) {
      const auto before = a.reasons.find(reason);
      const auto after = b.reasons.find(reason);
      const double d = Delta(before == a.reasons.end() ? 0 : before->second,
                             after == b.reasons.end() ? 0 : after->second);
      Ratio(w, d, b.wall_s - a.wall_s);
    });
  }
  w.EndObject();
  w.EndObject();

  const Tick& recent = ticks_[ticks_.size() - 1 - std::min(ticks_.size() - 1, kSmoothing)];
  w.Key("backends").BeginArray();
  for (const auto& [name, b] : last.backends) {
    w.BeginObject();
    w.Key("name").String(name);
    w.Key("state").String(b.state);
    w.Key("healthy").Bool(b.healthy > 0);
    w.Key("in_flight").Double(b.in_flight);
    w.Key("outstanding_prefill_tokens").Double(b.prefill);
    w.Key("kv_usage");
    if (b.kv_usage >= 0) {
      w.Double(b.kv_usage);
    } else {
      w.Null();
    }
    const auto since = [&, &name = name](const Tick& t) {  // clang 14: no capture of a binding
      const auto it = t.backends.find(name);
      return it == t.backends.end() ? Backend{} : it->second;
    };
    const Backend start = since(first);
    w.Key("hit_rate");
    Ratio(w, Delta(start.reported, b.reported), Delta(start.prompt, b.prompt));
    const Backend lately = since(recent);
    w.Key("requests_per_s");
    Ratio(w, Delta(lately.requests, b.requests), last.wall_s - recent.wall_s);
    w.EndObject();
  }
  w.EndArray();

  double all_requests = 0;
  for (const DashboardHotPrefix& p : hot_) all_requests += p.requests_per_s;
  const Sums lately = sums(recent, last);
  const double fleet_rate =
      last.wall_s > recent.wall_s ? lately.requests / (last.wall_s - recent.wall_s) : 0;
  w.Key("hot_prefixes").BeginArray();
  for (const DashboardHotPrefix& p : hot_) {
    w.BeginObject();
    w.Key("id").String(Hex(p.id));
    w.Key("requests_per_s").Double(p.requests_per_s);
    w.Key("share");
    Ratio(w, p.requests_per_s, std::max(fleet_rate, all_requests));
    w.Key("homes").BeginArray();
    for (const std::string& h : p.homes) w.String(h);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();

  w.Key("tenants").BeginArray();
  for (const auto& [name, t] : last.tenants) {
    const auto it = first.tenants.find(name);
    const Tenant start = it == first.tenants.end() ? Tenant{} : it->second;
    w.BeginObject();
    w.Key("name").String(name);
    w.Key("requests").Double(Delta(start.requests, t.requests));
    w.Key("rate_limited").Double(Delta(start.limited, t.limited));
    w.Key("ttft_p50_s");
    Quantile(w, 0.5, start.ttft, t.ttft);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

}  // namespace warmroute::gateway
