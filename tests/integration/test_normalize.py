"""Prompt normalisation end to end (src/gateway/proxy/normalize.h, config/normalize_config.h):
`warmroute serve` with normalize rules for one tenant, fed the planted-defect request files of
workloads/requests/make_planted.py (timestamp, tools, whitespace).

Two proofs. What the engine received: behind an echo backend (echo_backend.py answers with the
exact bytes it got), the normalised tenant's bodies carry the rewritten system prompt, user
message and tools, everything else unchanged, while the other tenant's arrive byte for byte as
sent; a reload turns the rules on. What it buys: behind a real `warmroute engine`, the
engine-reported cached tokens (usage.prompt_tokens_details.cached_tokens) of each defect file are
a larger share of the prompt with the rule than without.
"""
import base64
import hashlib
import json
import os
import subprocess
import sys
import unittest

from echo_backend import EchoBackend
from emulator_process import EmulatorProcess
from gateway_process import GatewayProcess
from test_gateway import metric_sum, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_PLANTED = os.path.join(HERE, "..", "..", "workloads", "requests", "make_planted.py")
MODEL = "tiny"
SECRET = "integration-test-salt-secret"
KINDS = ("timestamp", "tools", "whitespace")
TIME_LINE = "^Current time: .*$"


def planted(kind, requests, seed=1):
    """The request bodies of make_planted.py KIND (for MODEL, 2 tokens out, no timestamp)."""
    out = subprocess.run([sys.executable, MAKE_PLANTED, kind, "--requests", str(requests),
                          "--seed", str(seed)], check=True, capture_output=True, text=True).stdout
    bodies = []
    for line in out.splitlines():
        body = json.loads(line)
        body.pop("timestamp")
        body["model"] = MODEL
        body["max_tokens"] = 2
        bodies.append(body)
    return bodies


def key(tenant):
    return f"sk-{tenant}"


def tenant(name, **extra):
    return dict({"name": name, "api_keys_sha256": [hashlib.sha256(key(name).encode()).hexdigest()]},
                **extra)


def rules(name):
    return {"tenant": name, "collapse_whitespace": True, "canonical_tools": True,
            "move_to_end": TIME_LINE}


def auth(name):
    return {"Authorization": f"Bearer {key(name)}"}


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class EngineReceivesTest(unittest.TestCase):
    """What the engine gets, byte for byte, from an echo backend."""

    def config(self, echo, normalize):
        doc = {"listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
               "backends": [{"name": "echo", "url": echo.url, "kind": "openai"}],
               "health": {"probe_interval_ms": 100}, "scrape": {"interval_ms": 0},
               "observability": {"access_log": "off"},
               "tenancy": {"salt_secret": SECRET},
               # one cache domain: the echo backend (kind openai) cannot isolate tenants
               "tenants": [tenant("fixed", isolation={"shared_group": "g"}),
                           tenant("plain", isolation={"shared_group": "g"})]}
        if normalize:
            doc["normalize"] = [rules("fixed")]
        return doc

    def send(self, gw, echo, who, body):
        """The bytes `echo` received for `body` sent by `who` (raw JSON bytes)."""
        data = json.dumps(body).encode()
        status, _, answer = gw.request("POST", "/v1/chat/completions", data, headers=auth(who))
        self.assertEqual(status, 200, answer[:300])
        return data, base64.b64decode(json.loads(answer)["body_b64"])

    def test_the_tenants_rules_rewrite_what_the_engine_receives_and_only_its(self):
        with EchoBackend(MODEL) as echo, GatewayProcess(self.config(echo, True)) as gw:
            sent = {kind: planted(kind, 6) for kind in KINDS}
            collapsed = 0  # requests whose system prompt collapse_whitespace changed
            for kind, bodies in sent.items():
                for body in bodies:
                    data, got = self.send(gw, echo, "plain", body)
                    self.assertEqual(got, data, f"{kind}: the other tenant's body changed")
                    data, got = self.send(gw, echo, "fixed", body)
                    collapsed += self.check_normalised(kind, body, got)
            text = gw.metrics_text()
            total = 6 * len(KINDS)
            name = "warmroute_normalize_applied_total"
            self.assertEqual(metric_sum(text, name, tenant="fixed", rule="move_to_end"), 6)
            # Every planted file's tools are unsorted.
            self.assertEqual(metric_sum(text, name, tenant="fixed", rule="canonical_tools"), total)
            self.assertGreater(collapsed, 6)
            self.assertEqual(metric_sum(text, name, tenant="fixed", rule="collapse_whitespace"),
                             collapsed)
            self.assertEqual(metric_sum(text, name, tenant="plain"), 0)

    def check_normalised(self, kind, body, got):
        """Checks `got`, what the engine received for `body` of `kind` with every rule on; True
        when collapse_whitespace changed its system prompt."""
        received = json.loads(got)
        system = body["messages"][0]["content"]
        question = body["messages"][1]["content"]
        got_system = received["messages"][0]["content"]
        got_user = received["messages"][1]["content"]
        # Tools: the same definitions, keys sorted at every depth, minified, as sent upstream.
        self.assertIn(canonical(body["tools"]).encode(), got, kind)
        self.assertEqual(received["tools"], body["tools"], kind)
        if kind == "timestamp":
            time_line, system = system.split("\n", 1)
            self.assertTrue(time_line.startswith("Current time: "))
            self.assertEqual(got_system, system.rstrip("\n"))
            self.assertEqual(got_user, question + "\n" + time_line)
        else:
            self.assertEqual(got_user, question, kind)
        if kind == "whitespace":
            self.assertNotIn("  ", got_system)
            self.assertNotIn("\n\n\n", got_system)
        if kind in ("tools", "whitespace"):
            self.assertEqual(got_system, planted("clean", 1)[0]["messages"][0]["content"]
                             .rstrip("\n"), kind)
        # Everything else as sent.
        for field in ("model", "max_tokens"):
            self.assertEqual(received[field], body[field])
        self.assertEqual(len(received), len(body))
        return got_system != system

    def test_a_reload_turns_the_rules_on(self):
        body = planted("timestamp", 1)[0]
        with EchoBackend(MODEL) as echo, GatewayProcess(self.config(echo, False)) as gw:
            data, got = self.send(gw, echo, "fixed", body)
            self.assertEqual(got, data)
            gw.reload(self.config(echo, True))
            wait_until(lambda: self.send(gw, echo, "fixed", body)[1] != data, timeout=10,
                       message="the reloaded normalize rules")
            _, got = self.send(gw, echo, "fixed", body)
            self.check_normalised("timestamp", body, got)


class HitRateTest(unittest.TestCase):
    """The engine-reported share of cached prompt tokens, with and without the rules."""

    REQUESTS = 10

    def test_each_rule_raises_the_engines_hit_rate_on_its_defect(self):
        names = [f"{which}-{kind}" for kind in KINDS for which in ("fixed", "plain")]
        with EmulatorProcess(["--profile", "tiny", "--no-jitter"]) as engine:
            replica = engine.replicas[0]
            config = {"listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
                      "backends": [{"name": "r0", "url": f"http://{replica.host}:{replica.port}"}],
                      "health": {"probe_interval_ms": 100}, "scrape": {"interval_ms": 100},
                      "observability": {"access_log": "off"},
                      "tenancy": {"salt_secret": SECRET},
                      # isolated: each tenant's cache starts cold
                      "tenants": [tenant(n) for n in names],
                      "normalize": [rules(f"fixed-{kind}") for kind in KINDS]}
            with GatewayProcess(config) as gw:
                for kind in KINDS:
                    rates = {}
                    for which in ("plain", "fixed"):
                        cached = prompt = 0
                        for body in planted(kind, self.REQUESTS):
                            status, _, data = gw.request("POST", "/v1/chat/completions", body,
                                                         headers=auth(f"{which}-{kind}"))
                            self.assertEqual(status, 200, data[:300])
                            usage = json.loads(data)["usage"]
                            cached += usage["prompt_tokens_details"]["cached_tokens"]
                            prompt += usage["prompt_tokens"]
                        rates[which] = cached / prompt
                    print(f"{kind}: hit rate {rates['plain']:.3f} without, "
                          f"{rates['fixed']:.3f} with normalisation")
                    # All but the first request could reuse the whole shared part (system prompt
                    # and tools): most of each prompt.
                    self.assertGreater(rates["fixed"], 0.6, kind)
                    self.assertGreater(rates["fixed"], rates["plain"] + 0.05, kind)


if __name__ == "__main__":
    unittest.main()
