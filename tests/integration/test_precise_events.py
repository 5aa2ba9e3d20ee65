"""Precise mode live (src/gateway/kv_events, docs/precise-mode.md): `warmroute serve` subscribes to
the KV events of real `warmroute engine` processes (vLLM's ZMQ publisher and replay endpoint,
`--kv-events-config`), and keeps its prefix index to what the engines report.

What the engines report is the proof: usage.prompt_tokens_details.cached_tokens (in the access
log next to the gateway's predicted_cached_tokens) and the gateway's /metrics and admin listing.

Skipped when the Qwen 3 tokenizer files are absent (the build unpacks them)."""
import hashlib
import json
import socket
import time
import unittest
import uuid

import zmq

from emulator_process import EmulatorProcess, free_tcp_port
from gateway_process import GatewayProcess, run_serve
from test_gateway import metric_sum
from test_precise_keys import QWEN3, access_lines, wait_for

MODEL = "Qwen/Qwen3-8B"
BLOCK = 16
TOKEN = "precise-events-admin"
SKIP = None if QWEN3 else "the Qwen 3 tokenizer files are absent (build the tokenize tests' data)"


def system_prompt(label):
    """About 1,500 tokens, specific to `label` (so that tests do not warm each other)."""
    return " ".join(f"[{label}] Règle {i}: réponds brièvement — 規則 {i}." for i in range(100))


def chat(system, user, **extra):
    return dict({"model": MODEL, "max_tokens": 4,
                 "messages": [{"role": "system", "content": system},
                              {"role": "user", "content": user}]}, **extra)


class Engine:
    """One `warmroute engine` process (one replica) publishing KV events on fixed ports, so that
    it can be restarted where the gateway expects it."""

    def __init__(self, extra_args=(), replay=True):
        self.replay = replay
        self.pick_ports()
        self.extra_args = list(extra_args)
        self.proc = None
        self.started = False

    def pick_ports(self):
        # One block of ports: separate free_tcp_port() calls may hand out the same port twice.
        base = free_tcp_port(3)
        self.http_port = base
        self.pub_port = base + 1
        self.replay_port = base + 2 if self.replay else None

    def kv_events_config(self):
        c = {"enable_kv_cache_events": True, "publisher": "zmq",
             "endpoint": f"tcp://127.0.0.1:{self.pub_port}"}
        if self.replay_port:
            c["replay_endpoint"] = f"tcp://127.0.0.1:{self.replay_port}"
        return json.dumps(c)

    def start(self):
        # The ports were free when picked, but a concurrent test's process may take one before
        # the engine binds it: a first start picks new ones and tries again (a restart keeps
        # its ports, where the gateway expects them).
        for attempt in range(3):
            self.proc = EmulatorProcess(["--profile", "tiny", "--no-jitter", "--model", MODEL,
                                         "--tokenizer", QWEN3, "--kv-events-config",
                                         self.kv_events_config(), *self.extra_args],
                                        port=self.http_port)
            try:
                self.proc.__enter__()
                break
            except RuntimeError as e:
                self.proc = None
                if self.started or attempt == 2 or "Address already in use" not in str(e):
                    raise
                self.pick_ports()
        self.started = True
        return self

    def stop(self):
        if self.proc is not None:
            self.proc.__exit__(None, None, None)
            self.proc = None

    @property
    def replica(self):
        return self.proc.replicas[0]

    def backend(self, name):
        b = {"name": name, "url": f"http://127.0.0.1:{self.http_port}",
             "kv_events": {"endpoint": f"tcp://127.0.0.1:{self.pub_port}"}}
        if self.replay_port:
            b["kv_events"]["replay_endpoint"] = f"tcp://127.0.0.1:{self.replay_port}"
        return b


def gateway_config(backends, **sections):
    doc = {"prefix_key": {"mode": "precise"},
           "models": [{"name": MODEL, "tokenizer": QWEN3, "block_size": BLOCK}],
           "backends": backends,
           "health": {"probe_interval_ms": 100, "probe_timeout_ms": 500},
           "admin": {"token": TOKEN}}
    doc.update(sections)
    return doc


def admin_backends(gw):
    status, _, body = gw.request("GET", "/admin/backends",
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200, body
    return {b["name"]: b for b in json.loads(body)["backends"]}


def chat_lines(gw):
    return [l for l in access_lines(gw) if l["route"] == "chat"]


@unittest.skipIf(SKIP, SKIP)
class PreciseEventsTest(unittest.TestCase):
    def engine(self, *args, **kw):
        e = Engine(*args, **kw).start()
        self.addCleanup(e.stop)
        return e

    def post(self, gw, body, headers=None):
        """Sends a chat; returns (backend, its access-log line)."""
        before = len(chat_lines(gw))
        status, h, data = gw.request("POST", "/v1/chat/completions", body, headers=headers)
        self.assertEqual(status, 200, data[:400])
        line = wait_for(lambda: chat_lines(gw)[before:], what="the access-log line")[0]
        self.assertEqual(line["prefix_key"], "precise", line)
        return h["x-warmroute-backend"], line

    def state(self, gw, backend, state):
        return metric_sum(gw.metrics_text(), "warmroute_kv_event_stream_state", backend=backend,
                          state=state)

    def events(self, gw, backend, result):
        return metric_sum(gw.metrics_text(), "warmroute_kv_events_total", backend=backend,
                          result=result)

    def warm_up(self, gw, backends):
        """ZMQ's slow joiner: requests until every backend's stream has applied an event."""
        for i in range(60):
            if all(self.events(gw, b, "applied") > 0 for b in backends):
                return
            self.post(gw, chat(system_prompt(f"warm-up {uuid.uuid4()}"), f"bonjour {i}"))
            time.sleep(0.1)
        self.fail(f"no KV event applied for {backends}\n{gw.log()[-3000:]}")

    def test_events_keep_the_index_exact_and_a_reset_clears_the_slice(self):
        e0, e1 = self.engine(), self.engine()
        with GatewayProcess(gateway_config([e0.backend("e0"), e1.backend("e1")])) as gw:
            self.warm_up(gw, ["e0", "e1"])
            wait_for(lambda: self.state(gw, "e0", "precise") == 1 and
                     self.state(gw, "e1", "precise") == 1, what="both streams precise")
            system = system_prompt("shared")
            first, line = self.post(gw, chat(system, "Quelle heure est-il à Tōkyō ?"))
            self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"])
            # The second chat shares the long system prompt: it goes where the events say it is
            # held, and the prediction is what the engine reports.
            second, line = self.post(gw, chat(system, "Et à Zürich, s'il te plaît ?"))
            self.assertEqual(second, first)
            self.assertGreater(line["cached_tokens"], 1000)
            self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"])
            listed = admin_backends(gw)[first]["kv_events"]
            self.assertEqual(listed["state"], "precise")
            self.assertGreater(listed["blocks"], line["cached_tokens"] // BLOCK - 1)
            self.assertEqual(listed["malformed"], 0)

            # A reset of that engine's cache: AllBlocksCleared empties its slice, so the same
            # prompt is predicted uncached, as the engine then reports.
            engine = e0 if first == "e0" else e1
            status, data = engine.replica.request("POST", "/reset_prefix_cache")
            self.assertEqual(status, 200, data)
            wait_for(lambda: metric_sum(gw.metrics_text(), "warmroute_kv_event_resets_total",
                                        backend=first, reason="clear") >= 1,
                     what="the reset applied")
            self.assertEqual(admin_backends(gw)[first]["index_entries"], 0)
            third, line = self.post(gw, chat(system, "Et à Zürich, s'il te plaît ?"))
            self.assertEqual(line["predicted_cached_tokens"], 0, line)
            self.assertEqual(line["cached_tokens"], 0, line)
            self.assertEqual(self.state(gw, first, "precise"), 1)

    def test_an_engine_restart_clears_its_slice_and_it_is_precise_again(self):
        e0 = self.engine()
        with GatewayProcess(gateway_config([e0.backend("e0")])) as gw:
            self.warm_up(gw, ["e0"])
            system = system_prompt("restart")
            self.post(gw, chat(system, "un"))
            _, line = self.post(gw, chat(system, "deux"))
            self.assertGreater(line["predicted_cached_tokens"], 1000)

            e0.stop()
            wait_for(lambda: admin_backends(gw)["e0"]["state"] != "up", what="e0 down")
            e0.start()  # the same ports; its sequence numbers start at 0 again
            wait_for(lambda: admin_backends(gw)["e0"]["state"] == "up", what="e0 up again")
            time.sleep(0.5)  # the SUB socket reconnects
            # The new process holds nothing: nothing is predicted, nothing is cached.
            _, line = self.post(gw, chat(system, "trois"))
            self.assertEqual(line["predicted_cached_tokens"], 0, line)
            self.assertEqual(line["cached_tokens"], 0, line)
            metrics = gw.metrics_text()
            self.assertGreaterEqual(
                metric_sum(metrics, "warmroute_kv_event_resets_total", backend="e0",
                           reason="restart") +
                metric_sum(metrics, "warmroute_kv_event_resets_total", backend="e0",
                           reason="clear"), 1)
            wait_for(lambda: self.state(gw, "e0", "precise") == 1,
                     what=f"e0 precise again\n{gw.log()[-2000:]}")
            _, line = self.post(gw, chat(system, "quatre"))
            self.assertGreater(line["cached_tokens"], 1000)
            self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"])

    def test_a_removed_backend_leaves_no_entries(self):
        e0, e1 = self.engine(), self.engine()
        with GatewayProcess(gateway_config([e0.backend("e0"), e1.backend("e1")])) as gw:
            self.warm_up(gw, ["e0", "e1"])
            status, _, body = gw.request("DELETE", "/admin/backends/e1",
                                         headers={"Authorization": f"Bearer {TOKEN}"})
            self.assertEqual(status, 200, body)
            listed = admin_backends(gw)
            self.assertEqual(list(listed), ["e0"])
            metrics = gw.metrics_text()
            self.assertEqual(metric_sum(metrics, "warmroute_prefix_index_entries"),
                             listed["e0"]["index_entries"])
            self.assertNotIn('backend="e1"', "\n".join(
                l for l in metrics.splitlines() if l.startswith("warmroute_kv_event")))
            # e1 goes on publishing; nothing of it comes back.
            for i in range(3):
                e1.replica.chat(e1.replica.model(), system_prompt(f"after removal {i}"),
                                max_tokens=2)
            time.sleep(0.5)
            self.assertEqual(metric_sum(gw.metrics_text(), "warmroute_prefix_index_entries"),
                             admin_backends(gw)["e0"]["index_entries"])

    def test_malformed_frames_are_counted_and_unconfigured_endpoints_never_read(self):
        e0 = self.engine()
        rogue_port = free_tcp_port(2)
        unconfigured_port = rogue_port + 1
        context = zmq.Context.instance()
        rogue = context.socket(zmq.PUB)
        rogue.setsockopt(zmq.LINGER, 0)
        rogue.bind(f"tcp://127.0.0.1:{rogue_port}")
        self.addCleanup(rogue.close)
        listener = socket.socket()
        listener.bind(("127.0.0.1", unconfigured_port))
        listener.listen(4)
        listener.settimeout(0.2)
        self.addCleanup(listener.close)
        # The rogue publisher sits on the endpoint configured for backend "rogue" (whose HTTP
        # side answers nothing).
        rogue_backend = {"name": "rogue", "url": f"http://127.0.0.1:{free_tcp_port()}",
                         "kv_events": {"endpoint": f"tcp://127.0.0.1:{rogue_port}"}}
        with GatewayProcess(gateway_config([e0.backend("e0"), rogue_backend])) as gw:
            bad = [[b"", b"\x00\x01\x02"],                               # two frames
                   [b"", b"\x01\x02\x03", b"\x90"],                      # a 3-byte sequence
                   [b"", (5).to_bytes(8, "big"), b"\xc1\xc1"],           # not msgpack
                   [b"", (6).to_bytes(8, "big"), b"\x92\xcb"]]           # truncated
            sent = 0
            deadline = time.monotonic() + 20
            while self.events(gw, "rogue", "malformed") < 4 and time.monotonic() < deadline:
                for frames in bad:
                    rogue.send_multipart(frames)
                    sent += 1
                time.sleep(0.1)
            self.assertGreaterEqual(self.events(gw, "rogue", "malformed"), 4)
            self.assertTrue(gw.alive())
            # Logged once per transition from good to malformed, not per frame.
            warnings = [l for l in gw.log().splitlines()
                        if "backend rogue: malformed input dropped" in l]
            self.assertGreaterEqual(len(warnings), 1)
            self.assertLess(len(warnings), sent)
            listed = admin_backends(gw)["rogue"]["kv_events"]
            self.assertGreaterEqual(listed["malformed"], 4)
            self.assertNotEqual(listed["last_error"], "")
            # The gateway goes on serving, with e0's events.
            self.warm_up(gw, ["e0"])
            # Nothing ever connected to the endpoint no backend configures.
            with self.assertRaises(socket.timeout):
                listener.accept()

    def test_a_gap_is_repaired_by_replay_and_the_slice_stays_precise(self):
        # Every 3rd message is numbered and kept for replay but not sent (as a PUB socket past
        # its high-water mark drops it).
        e0 = self.engine(["--kv-events-drop-every", "3"])
        with GatewayProcess(gateway_config([e0.backend("e0")])) as gw:
            self.warm_up(gw, ["e0"])
            system = system_prompt("gaps")
            for i in range(6):
                self.post(gw, chat(system, f"question {i}"))
            wait_for(lambda: self.events(gw, "e0", "replayed") >= 1,
                     what=f"a replayed message\n{gw.log()[-2000:]}")
            wait_for(lambda: self.state(gw, "e0", "precise") == 1, what="e0 precise")
            metrics = gw.metrics_text()
            self.assertEqual(metric_sum(metrics, "warmroute_kv_events_total", backend="e0",
                                        result="missed"), 0)
            self.assertEqual(metric_sum(metrics, "warmroute_kv_event_resets_total",
                                        backend="e0", reason="rebuild"), 0)
            _, line = self.post(gw, chat(system, "question finale"))
            self.assertGreater(line["cached_tokens"], 1000)
            self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"])

    def test_salted_tenants_are_never_matched_against_another_domains_blocks(self):
        # The array form carries no salt: the gateway attributes first blocks from its own
        # dispatch records, so a salted tenant's blocks are indexed in its own domain only.
        e0 = self.engine(["--kv-events-encoding", "array"])
        keys = {"alpha": "sk-alpha-events", "beta": "sk-beta-events"}
        tenants = [{"name": n, "api_keys_sha256": [hashlib.sha256(k.encode()).hexdigest()]}
                   for n, k in keys.items()]
        config = gateway_config([e0.backend("e0")],
                                tenancy={"salt_secret": "precise-events-salt-secret"},
                                tenants=tenants)
        auth = {n: {"Authorization": f"Bearer {k}"} for n, k in keys.items()}
        with GatewayProcess(config) as gw:
            for i in range(60):
                if self.events(gw, "e0", "applied") > 0:
                    break
                self.post(gw, chat(system_prompt(f"salt warm-up {i}"), "x"), headers=auth["alpha"])
            system = system_prompt(f"salted {uuid.uuid4()}")
            self.post(gw, chat(system, "alpha one"), headers=auth["alpha"])
            wait_for(lambda: admin_backends(gw)["e0"]["kv_events"]["blocks"] > 0,
                     what="alpha's blocks indexed")
            _, line = self.post(gw, chat(system, "alpha two"), headers=auth["alpha"])
            self.assertGreater(line["cached_tokens"], 1000)
            self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"])
            # Beta sends the same prompt: the engine shares nothing across salts, and the
            # gateway predicts nothing.
            _, line = self.post(gw, chat(system, "alpha two"), headers=auth["beta"])
            self.assertEqual(line["cached_tokens"], 0, line)
            self.assertEqual(line["predicted_cached_tokens"], 0, line)


@unittest.skipIf(SKIP, SKIP)
class PreciseModeConfigTest(unittest.TestCase):
    def test_precise_mode_refuses_backends_without_events_and_models_without_tokenizer(self):
        code, _, err = run_serve({
            "prefix_key": {"mode": "precise"},
            "models": [{"name": MODEL, "tokenizer": QWEN3}, {"name": "m2"}],
            "backends": [{"name": "a", "url": "http://127.0.0.1:9",
                          "kv_events": {"endpoint": "tcp://127.0.0.1:5557"}},
                         {"name": "b", "url": "http://127.0.0.1:10"}]}, ["--check-config"])
        self.assertEqual(code, 2, err)
        self.assertIn("kv_events on every backend (missing on: b)", err)
        self.assertIn("a tokenizer for every model (missing for: m2)", err)

    def test_a_bad_endpoint_names_the_key(self):
        code, _, err = run_serve({"backends": [{"url": "http://127.0.0.1:9",
                                                "kv_events": {"endpoint": "udp://h:1"}}]},
                                 ["--check-config"])
        self.assertEqual(code, 2, err)
        self.assertIn("backends[0].kv_events.endpoint: expected tcp://HOST:PORT, got 'udp://h:1'",
                      err)


if __name__ == "__main__":
    unittest.main()
