// The live dashboard's page and the chart library it uses (uPlot, third_party/uplot), compiled
// into the binary so that the gateway serves them itself and the page asks no other host:
//   /dashboard                      the page (observability/dashboard/dashboard.html)
//   /dashboard/uPlot.iife.min.js    uPlot
//   /dashboard/uPlot.min.css        uPlot's styles
// The page polls GET /dashboard/data (DashboardHistory::Json) every 2 s.
//
// Usage:
//   if (const DashboardAsset* a = FindDashboardAsset(path)) reply(a->content_type, a->body);
//
// Thread-safety: constant data.
#pragma once

#include <string_view>

namespace warmroute::gateway {

struct DashboardAsset {
  std::string_view path;
  std::string_view content_type;
  std::string_view body;
};

// The asset served at `path`, or nullptr.
const DashboardAsset* FindDashboardAsset(std::string_view path);

}  // namespace warmroute::gateway
