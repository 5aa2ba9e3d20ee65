"""The Grafana dashboard and the Prometheus rules (deploy/grafana/warmroute.json,
deploy/prometheus/alerts.yaml) against a real Prometheus server.

An emulated fleet (3 `warmroute engine` replicas), a `warmroute serve` gateway with tenants and
cluster-wide rate limits on a real `redis-server`, and Debian's `prometheus` scraping the gateway
and the engines every second, with the rules loaded. Under load from two tenants (one of them
over its rate limit), every panel's and every rule's expression is evaluated through
Prometheus's HTTP API and must give a non-empty, finite result: an expression that names a metric
or label that does not exist, or divides by a rate that is never non-zero, fails here. Each
alert's expression is evaluated on both sides of its comparison (the alert itself is not expected
to fire on a healthy fleet). `promtool check rules` and `promtool test rules`
(deploy/prometheus/alerts_test.yaml: each alert firing on its condition) run too.
"""
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import yaml

from emulator_process import EmulatorProcess, free_tcp_port, terminate
from gateway_process import GatewayProcess
from test_gateway import wait_until
from loaded_fleet import TenantLoad, two_tenant_config
from test_tenancy import RedisServer

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "warmroute.json")
RULES = os.path.join(ROOT, "deploy", "prometheus", "alerts.yaml")
RULES_TEST = os.path.join(ROOT, "deploy", "prometheus", "alerts_test.yaml")
PROMETHEUS = os.environ.get("WARMROUTE_PROMETHEUS", "/usr/bin/prometheus")
PROMTOOL = os.environ.get("WARMROUTE_PROMTOOL", "/usr/bin/promtool")
RATE_INTERVAL = "20s"  # what the test puts for Grafana's $__rate_interval (1 s scrapes)


def load_rules():
    with open(RULES) as f:
        return yaml.safe_load(f)


def alert_runbooks():
    return {r["alert"]: r["annotations"]["runbook"]
            for g in load_rules()["groups"] for r in g["rules"] if "alert" in r}


def dashboard_targets():
    """[(panel title, expr)] of every panel of the dashboard."""
    with open(DASHBOARD) as f:
        doc = json.load(f)
    out = []
    for p in doc["panels"]:
        for t in p.get("targets", []):
            out.append((p["title"], t["expr"]))
    return out


_COMPARISON = re.compile(r"(==|!=|>=|<=|>|<)")


def split_comparison(expr):
    """(left, right) of `expr` at its first comparison operator outside parentheses, brackets,
    braces and strings; (expr, None) without one."""
    depth = 0
    quote = None
    i = 0
    while i < len(expr):
        c = expr[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:
            m = _COMPARISON.match(expr, i)
            if m:
                return expr[:i].strip(), expr[m.end():].strip()
        i += 1
    return expr.strip(), None


def is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


class Prometheus:
    """Debian's prometheus in the foreground on a loopback port, scraping `targets` every second
    and evaluating `rule_file` every second."""

    def __init__(self, targets, rule_file):
        self.targets = targets
        self.rule_file = rule_file
        self.port = free_tcp_port()
        self.tmp = tempfile.TemporaryDirectory()
        self.proc = None
        self.log_path = os.path.join(self.tmp.name, "prometheus.log")

    def start(self):
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [self.rule_file],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": addrs}]}
                               for job, addrs in self.targets.items()],
        }
        path = os.path.join(self.tmp.name, "prometheus.yml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={path}",
             f"--storage.tsdb.path={os.path.join(self.tmp.name, 'data')}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)

        def ready():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready",
                                            timeout=1) as r:
                    return r.status == 200
            except OSError:
                return False
        wait_until(ready, timeout=30, interval=0.2, message="prometheus ready")

    def api(self, path, **params):
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as r:
            doc = json.load(r)
        if doc.get("status") != "success":
            raise AssertionError(f"{path} {params}: {doc}")
        return doc["data"]

    def query(self, expr):
        """[(labels, value)] of an instant query."""
        data = self.api("query", query=expr)
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        return [(s["metric"], float(s["value"][1])) for s in data["result"]]

    def stop(self):
        if self.proc is not None:
            terminate(self.proc)
            self.proc = None
            self.log.close()
        self.tmp.cleanup()


class MonitoringTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in (PROMETHEUS, PROMTOOL):
            if not os.access(tool, os.X_OK):
                raise AssertionError(f"{tool} is missing: run scripts/install-deps.sh")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.engine = EmulatorProcess(["--profile", "tiny", "--no-jitter", "--replicas", "3"],
                                     replicas=3)
        cls.engine.__enter__()
        cls.addClassCleanup(lambda: cls.engine.__exit__(None, None, None))
        cls.redis = RedisServer(free_tcp_port())
        cls.redis.start()
        cls.addClassCleanup(cls.redis.stop)
        cls.gw = GatewayProcess(two_tenant_config(
            cls.engine, secret="monitoring-test-secret",
            rate_limits={"redis": f"redis://127.0.0.1:{cls.redis.port}",
                         "redis_timeout_ms": 50}))
        cls.gw.__enter__()
        cls.addClassCleanup(lambda: cls.gw.__exit__(None, None, None))
        # The rules as shipped, but evaluated every second (the recording group's 30 s
        # would leave a short test without samples).
        rules = load_rules()
        for group in rules["groups"]:
            group["interval"] = "1s"
        rule_file = os.path.join(cls.tmp.name, "alerts.yaml")
        with open(rule_file, "w") as f:
            yaml.safe_dump(rules, f)
        cls.prometheus = Prometheus(
            {"warmroute": [f"{cls.gw.host}:{cls.gw.port}"],
             "vllm": [f"{r.host}:{r.port}" for r in cls.engine.replicas]}, rule_file)
        cls.prometheus.start()
        cls.addClassCleanup(cls.prometheus.stop)
        cls.load = TenantLoad(cls.gw)
        cls.load.start()
        cls.addClassCleanup(cls.load.stop)
        # Enough scrapes for every rate window, and 429s and hot prefixes to exist.
        time.sleep(25)

    def assert_finite(self, what, expr):
        result = self.prometheus.query(expr)
        self.assertTrue(result, f"{what}: `{expr}` gives no series")
        for labels, value in result:
            self.assertTrue(math.isfinite(value), f"{what}: `{expr}` gives {value} for {labels}")

    def test_the_load_reached_the_fleet_and_the_limit(self):
        with self.load.lock:
            status = dict(self.load.status)
        self.assertGreater(status.get(200, 0), 50, status)
        self.assertGreater(status.get(429, 0), 5, status)
        targets = self.prometheus.api("targets")["activeTargets"]
        self.assertEqual(len(targets), 4)
        for t in targets:
            self.assertEqual(t["health"], "up", t)

    def test_every_dashboard_panel_has_data(self):
        targets = dashboard_targets()
        self.assertGreaterEqual(len(targets), 20)
        for title, expr in targets:
            with self.subTest(panel=title):
                self.assert_finite(title, expr.replace("$__rate_interval", RATE_INTERVAL))

    def test_every_rule_loads_and_evaluates(self):
        def evaluated():
            groups = self.prometheus.api("rules")["groups"]
            rules = [r for g in groups for r in g["rules"]]
            return rules if rules and all(r.get("lastEvaluation", "").startswith("20")
                                          for r in rules) else None
        rules = wait_until(evaluated, timeout=20, interval=0.5, message="rules evaluated")
        shipped = [r for g in load_rules()["groups"] for r in g["rules"]]
        self.assertEqual(len(rules), len(shipped))
        for rule in rules:
            name = rule["name"]
            with self.subTest(rule=name):
                self.assertEqual(rule["health"], "ok", rule)
                if rule["type"] == "recording":
                    self.assert_finite(name, name)
                    continue
                left, right = split_comparison(rule["query"])
                self.assertIsNotNone(right, f"alert {name} has no comparison")
                for side in (left, right):
                    if not is_number(side):
                        self.assert_finite(name, side)

    def test_the_dashboard_uses_its_datasource_variable(self):
        with open(DASHBOARD) as f:
            doc = json.load(f)
        variables = doc["templating"]["list"]
        self.assertIn({"name": "datasource", "type": "datasource", "query": "prometheus"},
                      [{k: v[k] for k in ("name", "type", "query")} for v in variables])
        ids = [p["id"] for p in doc["panels"]]
        self.assertEqual(len(ids), len(set(ids)))
        for p in doc["panels"]:
            if p["type"] != "row":
                self.assertEqual(p["datasource"]["uid"], "${datasource}", p["title"])

    def test_promtool_checks_and_unit_tests_the_rules(self):
        check = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True,
                               text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        # alerts_test.yaml gives each expected alert's summary; the runbooks come from alerts.yaml.
        with open(RULES_TEST) as f:
            tests = yaml.safe_load(f)
        runbooks = alert_runbooks()
        fired = set()
        for case in tests["tests"]:
            for check_ in case.get("alert_rule_test", []):
                for alert in check_.get("exp_alerts") or []:
                    fired.add(check_["alertname"])
                    alert.setdefault("exp_annotations", {}).setdefault(
                        "runbook", runbooks[check_["alertname"]])
        self.assertEqual(fired, set(runbooks), "every alert has a test in which it fires")
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(RULES, tmp)
            with open(os.path.join(tmp, "alerts_test.yaml"), "w") as f:
                yaml.safe_dump(tests, f)
            run = subprocess.run([PROMTOOL, "test", "rules", "alerts_test.yaml"], cwd=tmp,
                                 capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def test_split_comparison(self):
        self.assertEqual(split_comparison('a{x=~"b>c"} > 0.7 * avg_over_time(a[7d])'),
                         ('a{x=~"b>c"}', "0.7 * avg_over_time(a[7d])"))
        self.assertEqual(split_comparison("sum by (t) (rate(x[5m])) >= 1"),
                         ("sum by (t) (rate(x[5m]))", "1"))
        self.assertEqual(split_comparison("(a > b)"), ("(a > b)", None))


if __name__ == "__main__":
    unittest.main()
