// DNS discovery's decisions, sans I/O: given the outcome of each resolution of the configured
// name (a set of host:port, or an error), which discovered backends to add, drain, undrain and
// remove. The driver (dns_discovery.h) resolves on an interval and applies the changes to
// Backends; this class decides, and is tested with a manual clock and no sockets.
//
// The rule:
// - A discovered backend is named "dns:<host>:<port>" ("dns:[fd00::5]:8000" for IPv6), so the
//   same address always gets the same name, on every gateway replica and across restarts.
// - A new address is added; it waits for its first health probe before it takes requests, as a
//   backend added through the admin API does.
// - An address that vanishes is drained at once (no new requests; those in flight finish) and
//   removed when it is still absent at the next successful resolution, one interval later. One
//   interval of grace means that a name served by several DNS servers that briefly disagree, or
//   a Kubernetes endpoint that flaps, does not throw away a backend's cache-aware state; an
//   address that comes back while draining is undrained.
// - A failed resolution (timeout, SERVFAIL, NXDOMAIN, a malformed answer) changes nothing: the
//   last good set stays. So does an answer with no address at all (NOERROR without records): a
//   Kubernetes headless Service scaled to zero answers NXDOMAIN, and a DNS glitch must never
//   empty the fleet; backends that are really gone fail their health probes and are ejected,
//   which answers clients the same 503 an empty fleet would. Both count as failures.
// - The health of the resolution (ok / failing) is reported once per transition, for the log.
// - An address that a backend from the config or the admin API already has is skipped: those
//   backends are not discovery's to touch.
//
// Usage:
//   DiscoveryReconciler reconciler;
//   DiscoveryChanges changes = reconciler.OnResolved(clock.Now(), outcome, taken_addresses);
//   for (const DiscoveredEndpoint& e : changes.add) backends.Add(..., await_first_probe=true);
//   ... drain, undrain, remove by name ...
//
// Thread-safety: not thread-safe; one owner (the driver's io_context thread).
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"

namespace warmroute::gateway {

struct DiscoveredEndpoint {
  std::string host;  // an IP address as text; IPv6 without brackets
  uint16_t port = 0;
  auto operator<=>(const DiscoveredEndpoint&) const = default;
};

// "host:port" ("[v6]:port", the IPv6 address in inet_ntop's form): the key discovery compares
// addresses by.
std::string EndpointAddress(const DiscoveredEndpoint& endpoint);
// "dns:" + EndpointAddress(endpoint).
std::string DiscoveredBackendName(const DiscoveredEndpoint& endpoint);

enum class ResolveTransition {
  kNone,        // as before
  kNowOk,       // the first success, or the first after failures
  kNowFailing,  // the first failure, or the first after successes
};

struct DiscoveryChanges {
  std::vector<DiscoveredEndpoint> add;  // in address order
  std::vector<std::string> drain;       // backend names
  std::vector<std::string> undrain;
  std::vector<std::string> remove;
  ResolveTransition transition = ResolveTransition::kNone;
  bool empty() const { return add.empty() && drain.empty() && undrain.empty() && remove.empty(); }
};

class DiscoveryReconciler {
 public:
  DiscoveryReconciler() = default;
  DiscoveryReconciler(const DiscoveryReconciler&) = delete;
  DiscoveryReconciler& operator=(const DiscoveryReconciler&) = delete;

  // One resolution's outcome at `now`. `taken`: the addresses (EndpointAddress form) of the
  // backends that discovery does not own.
  DiscoveryChanges OnResolved(TimePoint now,
                              const absl::StatusOr<std::vector<DiscoveredEndpoint>>& outcome,
                              const std::set<std::string>& taken);

  // `name` is not in the fleet: the driver could not add it (Backends::Add failed), or it was
  // removed by other means (DELETE /admin/backends/{name}). It is forgotten, and added again at
  // the next resolution that lists it: DNS stays the source of truth (drain a discovered
  // backend to keep it out of rotation).
  void Forget(const std::string& name);

  // Discovery ends (its config was removed by a reload): every discovered backend is to be
  // removed, and the reconciler starts over.
  DiscoveryChanges Stop();

  // Another name is resolved from now on (a reload): the members stay, to be drained and
  // removed if the new name does not list them, and the health starts over, so that the new
  // name's first outcome is a transition.
  void Rename();

  // Whether `name` is a backend this reconciler added and has not removed.
  bool Owns(const std::string& name) const { return members_.contains(name); }
  // The discovered backends present (draining ones included).
  size_t backends() const { return members_.size(); }
  // Their names and addresses.
  std::map<std::string, DiscoveredEndpoint> members() const;
  int64_t resolutions() const { return resolutions_; }
  int64_t failures() const { return failures_; }
  // nullopt until the first outcome.
  std::optional<bool> healthy() const { return healthy_; }
  std::optional<TimePoint> last_success() const { return last_success_; }
  // OK, or why the last resolution failed.
  const absl::Status& last_error() const { return last_error_; }

 private:
  struct Member {
    DiscoveredEndpoint endpoint;
    bool draining = false;
  };
  ResolveTransition SetHealthy(bool healthy);

  std::map<std::string, Member> members_;  // by backend name
  int64_t resolutions_ = 0;
  int64_t failures_ = 0;
  std::optional<bool> healthy_;
  std::optional<TimePoint> last_success_;
  absl::Status last_error_;
};

}  // namespace warmroute::gateway
