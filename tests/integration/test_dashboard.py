"""The gateway's live dashboard (GET /dashboard, src/gateway/observability/dashboard_page.h and
dashboard_history.h) in a real browser.

Three `warmroute engine` replicas, a gateway with two tenants and an admin token, and load from
both tenants (one over its rate limit). The data endpoint is checked directly (401 without the
token; with it, every backend, series with points, tenants, hot prefixes), then Debian's
`chromium` opens the page headless (`--dump-dom` after the page's scripts ran) and the test
requires that every chart drew points and that the backend table lists every backend, and saves
a screenshot ($WARMROUTE_DASHBOARD_SCREENSHOT, else a temporary file).
"""
import json
import os
import re
import subprocess
import tempfile
import time
import unittest

from emulator_process import EmulatorProcess
from gateway_process import GatewayProcess
from test_gateway import wait_until
from loaded_fleet import TenantLoad, two_tenant_config

CHROMIUM = os.environ.get("WARMROUTE_CHROMIUM", "/usr/bin/chromium")
TOKEN = "dashboard-admin-token"


def chromium(*args, timeout=90):
    """Runs headless chromium with `args`; (stdout, stderr)."""
    with tempfile.TemporaryDirectory() as profile:
        run = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--disable-extensions", "--disable-background-networking",
             f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, timeout=timeout)
    return run.stdout, run.stderr


class DashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(CHROMIUM, os.X_OK):
            raise AssertionError(f"{CHROMIUM} is missing: run scripts/install-deps.sh")
        cls.engine = EmulatorProcess(["--profile", "tiny", "--no-jitter", "--replicas", "3"],
                                     replicas=3)
        cls.engine.__enter__()
        cls.addClassCleanup(lambda: cls.engine.__exit__(None, None, None))
        cls.names = [f"r{i}" for i in range(3)]
        cls.gw = GatewayProcess(two_tenant_config(
            cls.engine, secret="dashboard-test-secret", admin={"token": TOKEN}))
        cls.gw.__enter__()
        cls.addClassCleanup(lambda: cls.gw.__exit__(None, None, None))
        cls.load = TenantLoad(cls.gw)
        cls.load.start()
        cls.addClassCleanup(cls.load.stop)
        time.sleep(14)  # more samples than a series point covers (10 s)

    def data(self):
        status, _, body = self.gw.request("GET", "/dashboard/data",
                                          headers={"Authorization": f"Bearer {TOKEN}"})
        self.assertEqual(status, 200, body[:300])
        return json.loads(body)

    def test_the_data_needs_the_admin_token_and_holds_the_fleet(self):
        status, headers, body = self.gw.request("GET", "/dashboard/data")
        self.assertEqual(status, 401, body[:300])
        self.assertIn("error", json.loads(body))
        status, _, _ = self.gw.request("GET", "/dashboard/data",
                                       headers={"Authorization": "Bearer wrong"})
        self.assertEqual(status, 401)
        doc = self.data()
        self.assertEqual(sorted(b["name"] for b in doc["backends"]), self.names)
        for b in doc["backends"]:
            self.assertEqual(b["state"], "up", b)
            self.assertIsNotNone(b["kv_usage"], b)
        self.assertGreater(sum(b["requests_per_s"] for b in doc["backends"]), 5)
        self.assertGreaterEqual(len(doc["series"]["t"]), 12)
        self.assertGreater(doc["fleet"]["hit_rate"], 0.3, doc["fleet"])
        self.assertGreater(doc["fleet"]["ttft_p50_s"], 0)
        self.assertTrue(any(v is not None for v in doc["series"]["ttft_p99_s"]))
        self.assertTrue(doc["series"]["reasons"], "routing reasons over time")
        tenants = {t["name"]: t for t in doc["tenants"]}
        self.assertEqual(set(tenants), {"alpha", "metered"})
        self.assertGreater(tenants["metered"]["rate_limited"], 0)
        self.assertEqual(tenants["alpha"]["rate_limited"], 0)
        self.assertTrue(doc["hot_prefixes"])
        for p in doc["hot_prefixes"]:
            self.assertRegex(p["id"], r"^[0-9a-f]{16}$")
            self.assertTrue(set(p["homes"]) <= set(self.names), p)
        self.assertTrue(any(p["homes"] for p in doc["hot_prefixes"]))

    def test_the_page_and_its_chart_library_come_from_the_gateway(self):
        status, headers, body = self.gw.request("GET", "/dashboard")
        self.assertEqual(status, 200)
        self.assertTrue(headers["content-type"].startswith("text/html"))
        page = body.decode()
        for src in re.findall(r'(?:src|href)="([^"]+)"', page):
            self.assertTrue(src.startswith("/dashboard/"), src)
            status, _, asset = self.gw.request("GET", src)
            self.assertEqual(status, 200, src)
            self.assertGreater(len(asset), 1000, src)

    def test_the_page_draws_in_a_real_browser(self):
        url = f"http://{self.gw.host}:{self.gw.port}/dashboard#token={TOKEN}"
        dom, err = chromium("--virtual-time-budget=5000", "--dump-dom", url)
        self.assertIn("data-updates", dom, err[-2000:])
        updates = int(re.search(r'<body[^>]*data-updates="(\d+)"', dom).group(1))
        self.assertGreaterEqual(updates, 1, "the page rendered the data")
        for chart in ("c-hit", "c-ttft", "c-reasons", "c-rps"):
            m = re.search(rf'id="{chart}"[^>]*data-points="(\d+)"|'
                          rf'data-points="(\d+)"[^>]*id="{chart}"', dom)
            self.assertIsNotNone(m, chart)
            self.assertGreater(int(m.group(1) or m.group(2)), 5, f"{chart} drew points")
            # uPlot drew into a canvas inside it.
            self.assertRegex(dom, rf'id="{chart}"[^>]*>.*?<canvas', chart)
        listed = re.findall(r'<tr data-backend="([^"]+)"', dom)
        self.assertEqual(sorted(listed), self.names)
        self.assertIn("<td>metered</td>", dom)
        status = re.search(r'<span class="status" id="status">([^<]*)</span>', dom).group(1)
        self.assertTrue(status.startswith("updated "), status)

    def test_a_screenshot_of_the_page(self):
        path = os.environ.get("WARMROUTE_DASHBOARD_SCREENSHOT")
        with tempfile.TemporaryDirectory() as tmp:
            out = path or os.path.join(tmp, "dashboard.png")
            url = f"http://{self.gw.host}:{self.gw.port}/dashboard#token={TOKEN}"
            _, err = chromium("--virtual-time-budget=5000", "--window-size=1400,940",
                              "--hide-scrollbars", f"--screenshot={out}", url)
            self.assertTrue(os.path.exists(out), err[-2000:])
            with open(out, "rb") as f:
                png = f.read()
            self.assertTrue(png.startswith(b"\x89PNG"))
            self.assertGreater(len(png), 20_000)

    def test_the_switch_turns_it_off(self):
        config = dict(self.gw.config)
        config["observability"] = {"access_log": "off", "dashboard": False}
        self.gw.reload(config)
        try:
            wait_until(lambda: self.gw.request("GET", "/dashboard")[0] == 404, timeout=10,
                       message="the dashboard gone after a reload")
            status, _, _ = self.gw.request("GET", "/dashboard/data",
                                           headers={"Authorization": f"Bearer {TOKEN}"})
            self.assertEqual(status, 404)
        finally:
            self.gw.reload(self.gw.config)
            wait_until(lambda: self.gw.request("GET", "/dashboard")[0] == 200, timeout=10,
                       message="the dashboard back")


if __name__ == "__main__":
    unittest.main()
