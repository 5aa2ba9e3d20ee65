"""Prewarm and handoff in the live gateway (src/gateway/fleet/prewarmer.h), end to end: real
`warmroute engine` replicas (profile tiny, each with its own prefix cache) behind `warmroute
serve`, membership changed through the admin API.

- Join: traffic with a few hot shared prefixes on 2 backends, then a third is added with POST
  /admin/backends. The gateway sends it the hot prefixes (warmroute_prewarm_requests_total
  {reason="join"} rises for it), the client requests it then gets report cached tokens (the
  engine's own usage), and its engine's prefix cache holds the prefixes. With prewarm off, the
  same sequence leaves the new engine cold.
- Discovery: a backend that DNS discovery adds (a real DNS server, as in test_dns_discovery.py)
  is prewarmed the same way.
- Drain: a backend drained with POST /admin/backends/{name}/drain hands the prefixes only it
  holds to the other (reason="handoff"), whose first requests for them then hit. With prewarm off,
  they miss.
"""
import json
import os
import sys
import time
import unittest

from emulator_process import EmulatorProcess
from gateway_process import GatewayProcess
from test_dns_discovery import DNSMASQ, Dnsmasq, engine, free_port, wait_for
from test_gateway import metric_sum, url_of

MODEL = "tiny"
TOKEN = "prewarm-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# Hot prefixes: system prompts longer than the prewarm planner's prefix id (64 blocks of 64
# characters), so that requests differing only in the user message share a prefix id.
# Cached tokens that show a prefix was held (a prefix is about 1,600 tokens; the user message
# and the template's tail are not).
MIN_HIT = 1000
PREFIXES = [f"System prompt {i}: you are support agent number {i}. " * 120 for i in range(6)]


def chat(system, user):
    return {"model": MODEL, "max_tokens": 2,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": user}]}


def cached_tokens(doc):
    return doc["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0) or 0


def config(backends, prewarm):
    return {
        "listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
        "backends": backends,
        "health": {"probe_interval_ms": 100, "probe_timeout_ms": 500},
        "scrape": {"interval_ms": 100},
        "observability": {"access_log": "off"},
        "admin": {"token": TOKEN},
        "prewarm": {"enabled": prewarm, "max_tokens_per_s": 1000000},
    }


class Fleet:
    """Three fresh engine replicas (cold caches) and a gateway in front of the first `serving`."""

    def __init__(self, prewarm, serving=2):
        self.engine = EmulatorProcess(["--profile", "tiny", "--no-jitter", "--replicas", "3"],
                                      replicas=3)
        self.prewarm = prewarm
        self.serving = serving
        self.gw = None

    def __enter__(self):
        self.engine.__enter__()
        backends = [{"name": f"r{i}", "url": url_of(self.engine.replicas[i])}
                    for i in range(self.serving)]
        self.gw = GatewayProcess(config(backends, self.prewarm)).__enter__()
        return self

    def __exit__(self, *exc):
        if self.gw is not None:
            self.gw.__exit__(*exc)
        self.engine.__exit__(*exc)
        return False

    def send(self, system, user):
        """(backend, cached tokens) of one chat request through the gateway."""
        status, headers, data = self.gw.post("/v1/chat/completions", chat(system, user))
        assert status == 200, (status, data[:300])
        return headers["x-warmroute-backend"], cached_tokens(json.loads(data))

    def warm_traffic(self, rounds=3):
        for r in range(rounds):
            for i, system in enumerate(PREFIXES):
                self.send(system, f"question {r} about topic {i}")

    def admin(self, method, path, body=None):
        status, _, data = self.gw.request(method, path, body, headers=AUTH)
        assert status in (200, 201), (status, data[:300])

    def prewarm_requests(self, **labels):
        return metric_sum(self.gw.metrics_text(), "warmroute_prewarm_requests_total", **labels)

    def wait_until_eligible(self, name, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            backends = self.gw.get_json("/admin/backends", headers=AUTH)["backends"]
            if any(b["name"] == name and b["state"] == "up" for b in backends):
                return
            time.sleep(0.05)
        raise AssertionError(f"{name} never came up")

    def wait_for_prewarm(self, settle_s, **labels):
        """The count of ok prewarm requests once it stops rising (or after settle_s)."""
        deadline = time.monotonic() + settle_s
        last, stable_since = -1.0, time.monotonic()
        while time.monotonic() < deadline:
            now = self.prewarm_requests(result="ok", **labels)
            if now != last:
                last, stable_since = now, time.monotonic()
            elif now > 0 and time.monotonic() - stable_since > 0.5:
                break
            time.sleep(0.1)
        return last

    def direct_cached(self, replica, system):
        """Cached tokens the engine replica itself reports for `system` with a new question."""
        doc = self.engine.replicas[replica].post_json("/v1/chat/completions",
                                                      chat(system, "a question sent directly"))
        return cached_tokens(doc)


class JoinTest(unittest.TestCase):
    def run_join(self, prewarm):
        """Adds r2 to a warm 2-backend fleet; returns (ok prewarm requests to r2, {prefix: cached
        tokens of its first client request routed to r2}, {prefix: cached tokens r2 reports
        directly} for every prefix, or in the control for those never routed to r2)."""
        with Fleet(prewarm) as fleet:
            fleet.warm_traffic()
            fleet.admin("POST", "/admin/backends",
                        {"name": "r2", "url": url_of(fleet.engine.replicas[2])})
            fleet.wait_until_eligible("r2")
            prewarmed = fleet.wait_for_prewarm(5 if prewarm else 1.5, backend="r2",
                                               reason="join")
            first_on_r2 = {}
            for r in range(4):
                for i, system in enumerate(PREFIXES):
                    backend, cached = fleet.send(system, f"after the join {r}, topic {i}")
                    if backend == "r2":
                        first_on_r2.setdefault(i, cached)
            held = {i: fleet.direct_cached(2, system) for i, system in enumerate(PREFIXES)
                    if prewarm or i not in first_on_r2}
            self.assertEqual(fleet.prewarm_requests(result="failed"), 0)
            # The figures of docs/prewarm.md ("In the gateway").
            print(f"\njoin, prewarm {'on' if prewarm else 'off'}: {prewarmed:.0f} prewarm requests "
                  f"to r2; cached tokens of the first request per prefix routed to r2: "
                  f"{first_on_r2}; r2 asked directly: {held}", file=sys.stderr)
            return prewarmed, first_on_r2, held

    def test_a_joining_backend_is_prewarmed_and_its_first_requests_hit(self):
        prewarmed, first_on_r2, held = self.run_join(prewarm=True)
        self.assertGreaterEqual(prewarmed, len(PREFIXES))
        self.assertTrue(first_on_r2, "the gateway routed nothing to the new backend")
        self.assertTrue(all(c > MIN_HIT for c in first_on_r2.values()), first_on_r2)
        self.assertTrue(all(c > MIN_HIT for c in held.values()), held)

    def test_without_prewarm_the_joining_backend_starts_cold(self):
        prewarmed, first_on_r2, held = self.run_join(prewarm=False)
        self.assertEqual(prewarmed, 0)
        self.assertTrue(all(c == 0 for c in first_on_r2.values()), first_on_r2)
        self.assertTrue(held, "every prefix went to r2")
        self.assertTrue(all(c == 0 for c in held.values()), held)


class DrainTest(unittest.TestCase):
    def run_drain(self, prewarm):
        """Drains r0 of a warm 2-backend fleet; returns (ok handoff requests to r1, cached tokens
        of r1's first requests for the prefixes r0 served, how many of those there were)."""
        with Fleet(prewarm) as fleet:
            served = {i: set() for i in range(len(PREFIXES))}
            for r in range(3):
                for i, system in enumerate(PREFIXES):
                    backend, _ = fleet.send(system, f"question {r} about topic {i}")
                    served[i].add(backend)
            # The prefixes only r0 holds: a drain hands them over.
            on_r0 = [PREFIXES[i] for i, backends in served.items() if backends == {"r0"}]
            self.assertTrue(on_r0, f"no prefix went to r0 only: {served}")
            fleet.admin("POST", "/admin/backends/r0/drain")
            handed = fleet.wait_for_prewarm(5 if prewarm else 1.5, backend="r1",
                                            reason="handoff")
            first = []
            for system in on_r0:
                backend, cached = fleet.send(system, "the first question after the drain")
                self.assertEqual(backend, "r1")
                first.append(cached)
            self.assertEqual(fleet.prewarm_requests(result="failed"), 0)
            print(f"\ndrain, prewarm {'on' if prewarm else 'off'}: {handed:.0f} handoff requests "
                  f"to r1; cached tokens of r1's first request per prefix only r0 held: {first}",
                  file=sys.stderr)
            return handed, first

    def test_a_drained_backend_hands_its_prefixes_over(self):
        handed, first = self.run_drain(prewarm=True)
        self.assertGreaterEqual(handed, len(first))
        self.assertTrue(all(c > MIN_HIT for c in first), first)

    def test_without_prewarm_a_drain_leaves_its_prefixes_cold(self):
        handed, first = self.run_drain(prewarm=False)
        self.assertEqual(handed, 0)
        self.assertTrue(all(c == 0 for c in first), first)


class DiscoveryJoinTest(unittest.TestCase):
    def test_a_backend_discovery_adds_is_prewarmed(self):
        if not os.path.exists(DNSMASQ):
            self.fail("dnsmasq is missing: run scripts/install-deps.sh")
        port = free_port(["127.0.0.2", "127.0.0.3"])
        dns_port = free_port(["127.0.0.1"])
        a, b = f"dns:127.0.0.2:{port}", f"dns:127.0.0.3:{port}"
        gateway = dict(config([], prewarm=True),
                       discovery={"dns": f"vllm.test:{port}", "interval_ms": 200,
                                  "timeout_ms": 500, "resolver": f"127.0.0.1:{dns_port}"})
        with engine("127.0.0.2", port), engine("127.0.0.3", port) as engine_b, \
                Dnsmasq(dns_port, ["127.0.0.2 vllm.test"]) as dns, \
                GatewayProcess(gateway) as gw:
            def eligible(name):
                doc = gw.get_json("/admin/backends", headers=AUTH)["backends"]
                return any(x["name"] == name and x["eligible"] for x in doc)

            wait_for(lambda: eligible(a), f"{a} to be eligible")
            for r in range(3):
                for i, system in enumerate(PREFIXES):
                    status, _, data = gw.post("/v1/chat/completions", chat(system, f"q{r} t{i}"))
                    self.assertEqual(status, 200, data[:300])
            dns.set_hosts(["127.0.0.2 vllm.test", "127.0.0.3 vllm.test"])
            wait_for(lambda: metric_sum(gw.metrics_text(), "warmroute_prewarm_requests_total",
                                        backend=b, reason="join", result="ok") >= len(PREFIXES),
                     f"{b} to be prewarmed")
            held = [cached_tokens(engine_b.replicas[0].post_json(
                "/v1/chat/completions", chat(system, "a question sent directly")))
                for system in PREFIXES]
            print(f"\ndiscovery join: cached tokens {b} reports directly: {held}",
                  file=sys.stderr)
            self.assertTrue(all(c > MIN_HIT for c in held), held)


if __name__ == "__main__":
    unittest.main()
