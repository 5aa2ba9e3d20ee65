#include "gateway/observability/dashboard_page.h"

#include "gtest/gtest.h"

namespace warmroute::gateway {
namespace {

TEST(DashboardPageTest, ServesThePageAndTheChartLibraryFromTheBinary) {
  const DashboardAsset* page = FindDashboardAsset("/dashboard");
  ASSERT_NE(page, nullptr);
  EXPECT_EQ(page->content_type, "text/html; charset=utf-8");
  EXPECT_TRUE(page->body.starts_with("<!doctype html>"));
  EXPECT_TRUE(page->body.ends_with("</html>\n"));
  // Everything it loads comes from the gateway itself.
  EXPECT_NE(page->body.find("src=\"/dashboard/uPlot.iife.min.js\""), std::string_view::npos);
  EXPECT_EQ(page->body.find("http://"), std::string_view::npos);
  EXPECT_EQ(page->body.find("https://"), std::string_view::npos);
  const DashboardAsset* js = FindDashboardAsset("/dashboard/uPlot.iife.min.js");
  ASSERT_NE(js, nullptr);
  EXPECT_NE(js->body.find("uPlot"), std::string_view::npos);
  EXPECT_GT(js->body.size(), 40'000u);
  ASSERT_NE(FindDashboardAsset("/dashboard/uPlot.min.css"), nullptr);
  EXPECT_EQ(FindDashboardAsset("/dashboard/other"), nullptr);
  EXPECT_EQ(FindDashboardAsset("/dashboard/data"), nullptr);  // the gateway's, not an asset
}

}  // namespace
}  // namespace warmroute::gateway
