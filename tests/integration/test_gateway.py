"""`warmroute serve` end to end: the gateway in front of real `warmroute engine` replicas and of
fault-injecting backends (fault_backend.py), on loopback.

Covers the proxy's contracts (src/gateway/proxy/proxy.h, gateway.h, admin_api.h, config.h): routed
bodies equal the engine's own, prefix affinity with reported cached tokens, the usage chunk the
gateway adds and drops, retries, mid-stream failures, cancellation of abandoned requests,
timeouts, bad input, health and outlier ejection, the admin API, config errors and SIGHUP
reload, /metrics and /v1/models.
"""
import functools
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import uuid

from emulator_process import EmulatorProcess, free_tcp_port
from fault_backend import FaultBackend
from gateway_process import GatewayProcess, parse_response, run_serve

MODEL = "tiny"
REASONS = {"cache_hit", "cold_home", "spill_hot", "least_load", "hash", "round_robin", "random"}
LONG_SYSTEM = "You are a patient tutor who explains every step with care. " * 12

ENGINE = None  # three `--profile tiny` replicas shared by the tests


def setUpModule():
    global ENGINE
    ENGINE = EmulatorProcess(["--profile", "tiny", "--no-jitter", "--replicas", "3"], replicas=3)
    ENGINE.__enter__()


def tearDownModule():
    if ENGINE is not None:
        ENGINE.__exit__(None, None, None)


def url_of(replica):
    return f"http://{replica.host}:{replica.port}"


def replica_backend(i, **extra):
    return dict({"name": f"r{i}", "url": url_of(ENGINE.replicas[i])}, **extra)


def base_config(backends, **sections):
    """A gateway config for tests: 2 threads, fast probes, no access log noise."""
    config = {
        "listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
        "backends": backends,
        "health": {"probe_interval_ms": 100, "probe_timeout_ms": 500},
        "scrape": {"interval_ms": 100},
        "observability": {"access_log": "off"},
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = dict(config[key], **value)
        else:
            config[key] = value
    return config


def chat(content, stream=False, max_tokens=4, system=None, **extra):
    messages = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": content})
    body = {"model": MODEL, "messages": messages, "max_tokens": max_tokens, **extra}
    if stream:
        body["stream"] = True
    return body


def strip_volatile(obj):
    """A response object without the fields that differ between two identical requests."""
    if isinstance(obj, dict):
        return {k: strip_volatile(v) for k, v in obj.items() if k not in ("id", "created")}
    if isinstance(obj, list):
        return [strip_volatile(v) for v in obj]
    return obj


def error_of(test, body, status_type=None):
    """The OpenAI-style error object of `body` (asserts its shape)."""
    doc = json.loads(body)
    test.assertIn("error", doc, body)
    err = doc["error"]
    test.assertIsInstance(err.get("message"), str)
    test.assertTrue(err["message"])
    test.assertIn("type", err)
    if status_type is not None:
        test.assertEqual(err["type"], status_type, body)
    return err


def metric_sum(text, name, **labels):
    """Sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m.group(3))
    return total


def requests_running(replica):
    """The replica's vllm:num_requests_running."""
    return metric_sum(replica.metrics_text(), "vllm:num_requests_running")


def wait_metric(gw, name, predicate, timeout=2.0, **labels):
    """Polls /metrics until predicate(sum of `name`{labels}) holds; returns that sum. (A request
    is recorded when its handler ends, just after the client got the response.)"""
    last = []

    def check():
        last[:] = [metric_sum(gw.metrics_text(), name, **labels)]
        return predicate(last[0])
    try:
        wait_until(check, timeout=timeout, message=name)
    except AssertionError:
        raise AssertionError(f"{name}{labels} = {last[0]} never satisfied the test")
    return last[0]


def wait_until(predicate, timeout=5.0, interval=0.02, message="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


def backend_states(gw, token):
    doc = gw.get_json("/admin/backends", headers={"Authorization": f"Bearer {token}"})
    return {b["name"]: b for b in doc["backends"]}


def direct(replica, path, body):
    status, data = replica.request("POST", path, body)
    return status, data


def direct_stream(replica, path, body):
    """The raw de-chunked SSE body of a request sent straight to a replica."""
    sock = socket.create_connection((replica.host, replica.port), timeout=10)
    data = json.dumps(body).encode()
    sock.sendall((f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode() + data)
    raw = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        raw += chunk
    sock.close()
    return parse_response(raw)


def sse_events(body):
    out = []
    for block in body.decode().split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data: "):
                out.append(line[6:])
    return out


class StreamReader:
    """A streaming request on a raw socket, read incrementally (to act mid-stream)."""

    def __init__(self, gw, body, path="/v1/chat/completions"):
        self.sock = gw.open_raw(timeout=10)
        gw.send_raw_request(self.sock, path, body)
        self.raw = b""

    def read_until(self, needle, timeout=5):
        deadline = time.monotonic() + timeout
        while needle not in self.raw:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{needle!r} not received; got {self.raw[-500:]!r}")
            self.sock.settimeout(remaining)
            data = self.sock.recv(65536)
            if not data:
                raise AssertionError(f"closed before {needle!r}; got {self.raw[-500:]!r}")
            self.raw += data

    def read_to_close(self, timeout=5):
        """True when the server closed the connection within `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return False
            except OSError:
                return True
            if not data:
                return True
            self.raw += data

    def close(self):
        self.sock.close()


# --- 1, 2, 11, 12: routing, usage, metrics, models ------------------------------------------

def wait_for_close(sock, start, timeout=5):
    """(seconds from `start` until the peer closed or reset `sock`, or None if it had not after
    `timeout` s; the bytes received until then)."""
    sock.settimeout(timeout)
    received = b""
    while True:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            return None, received
        except OSError:
            data = b""
        if not data:
            return time.monotonic() - start, received
        received += data


class RoutedTrafficTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gw = GatewayProcess(base_config([replica_backend(0), replica_backend(1)]))
        cls.gw.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.gw.__exit__(None, None, None)

    def replica_named(self, name):
        self.assertIn(name, ("r0", "r1"))
        return ENGINE.replicas[int(name[1:])]

    def test_non_streaming_bodies_equal_the_engines(self):
        cases = [("/v1/chat/completions", chat("Say hi.", max_tokens=5)),
                 ("/v1/completions", {"model": MODEL, "prompt": "Once upon", "max_tokens": 5})]
        for path, body in cases:
            with self.subTest(path=path):
                status, headers, data = self.gw.post(path, body)
                self.assertEqual(status, 200, data)
                self.assertIn(headers.get("x-warmroute-backend"), ("r0", "r1"))
                self.assertIn(headers.get("x-warmroute-reason"), REASONS)
                self.assertTrue(headers.get("content-type", "").startswith("application/json"))
                replica = self.replica_named(headers["x-warmroute-backend"])
                d_status, d_data = direct(replica, path, body)
                self.assertEqual(d_status, 200)
                self.assertEqual(strip_volatile(json.loads(data)),
                                 strip_volatile(json.loads(d_data)))

    def test_streaming_bodies_equal_the_engines(self):
        cases = [
            ("/v1/chat/completions", chat("Say hi.", stream=True, max_tokens=5)),
            ("/v1/chat/completions", chat("Say hi.", stream=True, max_tokens=5,
                                          stream_options={"include_usage": True})),
            ("/v1/completions", {"model": MODEL, "prompt": "Once upon", "max_tokens": 5,
                                 "stream": True}),
        ]
        for path, body in cases:
            with self.subTest(path=path, body=body):
                resp = self.gw.stream(path, body)
                self.assertEqual(resp.status, 200, resp.body)
                self.assertTrue(resp.closed)
                self.assertTrue(resp.headers["content-type"].startswith("text/event-stream"))
                self.assertIn(resp.headers.get("x-warmroute-reason"), REASONS)
                replica = self.replica_named(resp.headers.get("x-warmroute-backend"))
                d_status, _, d_body = direct_stream(replica, path, body)
                self.assertEqual(d_status, 200)
                got = [strip_volatile(json.loads(e)) if e != "[DONE]" else e
                       for e in resp.events()]
                want = [strip_volatile(json.loads(e)) if e != "[DONE]" else e
                        for e in sse_events(d_body)]
                self.assertEqual(got, want)
                self.assertEqual(got[-1], "[DONE]")

    def test_engine_4xx_is_relayed_unchanged(self):
        for stream in (False, True):
            with self.subTest(stream=stream):
                body = chat("Too long an answer.", max_tokens=10_000_000, stream=stream)
                status, headers, data = self.gw.post("/v1/chat/completions", body)
                self.assertEqual(status, 400, data)
                replica = self.replica_named(headers.get("x-warmroute-backend"))
                d_status, d_data = direct(replica, "/v1/chat/completions", body)
                self.assertEqual(d_status, 400)
                self.assertEqual(json.loads(data), json.loads(d_data))
        # A client error is not the backend's failure: nothing was retried.
        self.assertEqual(metric_sum(self.gw.metrics_text(), "warmroute_retries_total"), 0)

    def test_repeated_long_prompt_goes_to_the_same_backend_and_hits_the_cache(self):
        for stream in (False, True):
            with self.subTest(stream=stream):
                system = f"{uuid.uuid4().hex} {LONG_SYSTEM}"
                body = chat("Explain osmosis.", system=system, max_tokens=3,
                            stream_options={"include_usage": True} if stream else None)
                if not stream:
                    del body["stream_options"]
                else:
                    body["stream"] = True
                backends, usages, reasons = [], [], []
                for _ in range(2):
                    if stream:
                        resp = self.gw.stream("/v1/chat/completions", body)
                        self.assertEqual(resp.status, 200)
                        usage = [e["usage"] for e in resp.json_events() if e.get("usage")]
                        self.assertEqual(len(usage), 1)
                        usages.append(usage[0])
                        headers = resp.headers
                    else:
                        status, headers, data = self.gw.post("/v1/chat/completions", body)
                        self.assertEqual(status, 200, data)
                        usages.append(json.loads(data)["usage"])
                    backends.append(headers["x-warmroute-backend"])
                    reasons.append(headers["x-warmroute-reason"])
                self.assertEqual(backends[0], backends[1])
                self.assertGreater(usages[0]["prompt_tokens"], 64)
                self.assertEqual(usages[0]["prompt_tokens_details"]["cached_tokens"], 0)
                self.assertGreater(usages[1]["prompt_tokens_details"]["cached_tokens"], 0)
                self.assertEqual(reasons[1], "cache_hit")

    def test_usage_chunk_added_by_the_gateway_is_dropped_and_feeds_the_loop(self):
        before = metric_sum(self.gw.metrics_text(), "warmroute_reported_cached_tokens_total")
        system = f"{uuid.uuid4().hex} {LONG_SYSTEM}"
        body = chat("Name a colour.", system=system, stream=True, max_tokens=3)
        for _ in range(2):  # the second one is served from the prefix cache
            resp = self.gw.stream("/v1/chat/completions", body)
            self.assertEqual(resp.status, 200)
            events = resp.json_events()
            self.assertTrue(events)
            self.assertFalse([e for e in events if "usage" in e and e["usage"] is not None],
                             "the client did not ask for usage")
            self.assertEqual(resp.events()[-1], "[DONE]")
        # The dropped usage chunk still reached the metrics (the closed loop is fed).
        wait_metric(self.gw, "warmroute_reported_cached_tokens_total", lambda v: v > before)
        # A client that asked for usage gets it exactly once.
        body["stream_options"] = {"include_usage": True}
        resp = self.gw.stream("/v1/chat/completions", body)
        with_usage = [e for e in resp.json_events() if e.get("usage")]
        self.assertEqual(len(with_usage), 1)
        self.assertGreater(with_usage[0]["usage"]["prompt_tokens_details"]["cached_tokens"], 0)
        # A client that turned usage off explicitly is left alone (no usage chunk either).
        body["stream_options"] = {"include_usage": False}
        resp = self.gw.stream("/v1/chat/completions", body)
        self.assertFalse([e for e in resp.json_events() if e.get("usage")])

    def test_metrics_pass_promtool_and_have_the_documented_families(self):
        status, _, data = self.gw.post("/v1/chat/completions", chat("Count to two."))
        self.assertEqual(status, 200)
        wait_metric(self.gw, "warmroute_e2e_request_latency_seconds_count", lambda v: v >= 1)
        text = self.gw.metrics_text()
        proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual((proc.stdout + proc.stderr).strip(), "")
        self.assertRegex(text, r'warmroute_requests_total\{[^}]*backend="r[01]"[^}]*\} ')
        self.assertRegex(text, r'warmroute_requests_total\{[^}]*code="200"[^}]*\} ')
        self.assertRegex(text, r'warmroute_requests_total\{[^}]*reason="[a-z_]+"[^}]*\} ')
        self.assertGreaterEqual(metric_sum(text, "warmroute_requests_total", code="200"), 1)
        for family in ("warmroute_time_to_first_token_seconds",
                       "warmroute_e2e_request_latency_seconds"):
            self.assertIn(f"# TYPE {family} histogram", text)
            self.assertGreaterEqual(metric_sum(text, family + "_count"), 1)
            self.assertIn(family + '_bucket{', text)
        for gauge in ("warmroute_prefix_index_entries", "warmroute_prefix_index_bytes"):
            self.assertRegex(text, rf"(?m)^{gauge} \S+$")
        self.assertGreater(metric_sum(text, "warmroute_prefix_index_entries"), 0)
        # The routing lock's contention (counted by AdaptiveMutex; its unit tests check the
        # counting): exported as counters, present from the start.
        for counter in ("warmroute_routing_lock_waits_total",
                        "warmroute_routing_lock_wait_seconds_total"):
            self.assertIn(f"# TYPE {counter} counter", text)
            self.assertRegex(text, rf"(?m)^{counter} \S+$")
        self.assertEqual(metric_sum(text, "warmroute_backend_healthy", backend="r0"), 1)
        self.assertEqual(metric_sum(text, "warmroute_backend_healthy", backend="r1"), 1)

    def test_head_gets_no_body_and_the_connection_stays_usable(self):
        conn = self.gw.connection(timeout=5)
        try:
            for path in ("/health", "/v1/models"):
                with self.subTest(path=path):
                    status, _, data = self.gw.request("HEAD", path, conn=conn)
                    self.assertEqual(status, 200)
                    self.assertEqual(data, b"")
                    status, _, data = self.gw.request("GET", path, conn=conn)
                    self.assertEqual(status, 200)
                    json.loads(data)
        finally:
            conn.close()

    def test_models_lists_the_union_of_the_backends_models(self):
        with FaultBackend("ok", model="other-model") as fault:
            config = base_config([replica_backend(0),  # discovered from its /v1/models
                                  {"name": "f", "url": fault.url, "kind": "openai",
                                   "models": ["configured-model"]}])
            with GatewayProcess(config) as gw:
                def ids():
                    doc = gw.get_json("/v1/models")
                    self.assertEqual(doc["object"], "list")
                    return sorted(m["id"] for m in doc["data"])
                wait_until(lambda: MODEL in ids(), message="model discovery")
                self.assertEqual(ids(), ["configured-model", MODEL])
                self.assertTrue(all(m["object"] == "model"
                                    for m in gw.get_json("/v1/models")["data"]))

    def test_models_are_asked_again_after_a_garbage_answer_and_after_a_restart(self):
        with FaultBackend("ok", models_data="not a list") as fault:
            # (base_config probes every 100 ms)
            config = base_config([{"name": "f", "url": fault.url, "kind": "openai"}])
            with GatewayProcess(config) as gw:
                ids = lambda: [m["id"] for m in gw.get_json("/v1/models")["data"]]
                wait_until(lambda: "GET /v1/models" in gw.log(), message="model discovery")
                self.assertEqual(ids(), [])  # meanwhile: any model
                fault.models_data = [{"id": "first-model"}]
                wait_until(lambda: ids() == ["first-model"], timeout=5,
                           message="the models once the backend lists them")
                self.assertEqual(gw.log().count("it is sent requests for any model"), 1)
                # A restart (probes fail, then succeed) with another model.
                fault.health_status = 503
                wait_until(lambda: "health probe failed" in gw.log(), message="a failed probe")
                fault.models_data = [{"id": "second-model"}]
                fault.health_status = 200
                wait_until(lambda: ids() == ["second-model"], timeout=5,
                           message="the restarted backend's models")
                status, _, data = gw.post("/v1/chat/completions", chat("Hi.", model="first-model"))
                self.assertEqual(status, 404, data)

    def test_model_entries_without_a_usable_id_are_ignored(self):
        # An empty id taken for a model would leave the backend serving only the model "", and
        # every request naming a model would get 404.
        data = [{"id": 5}, {"id": None}, {}, 7, {"id": ""}]
        with FaultBackend("ok", models_data=data) as fault:
            config = base_config([{"name": "f", "url": fault.url, "kind": "openai"}])
            with GatewayProcess(config) as gw:
                wait_until(lambda: "GET /v1/models" in gw.log() or
                           gw.get_json("/v1/models")["data"], message="model discovery")
                self.assertEqual(gw.get_json("/v1/models")["data"], [])
                self.assertIn("ignored 5 entries without a non-empty string id", gw.log())
                for model in (MODEL, "any-model"):
                    status, _, data = gw.post("/v1/chat/completions", chat("Hi.", model=model))
                    self.assertEqual(status, 200, data)


# --- 3: retries ---------------------------------------------------------------------------------

def fault_entry(name, fault, **extra):
    return dict({"name": name, "url": fault.url, "kind": "openai", "models": [MODEL]}, **extra)


def no_ejection(**extra):
    return dict({"probe_interval_ms": 60000, "eject_after_failures": 1000}, **extra)


class RetryTest(unittest.TestCase):
    def test_failed_dispatch_is_retried_on_a_healthy_backend(self):
        for kind in ("refused", "error500", "reset"):
            with self.subTest(kind=kind), FaultBackend("ok" if kind == "refused" else kind) as bad:
                config = base_config(
                    [fault_entry("bad", bad), replica_backend(0, models=[MODEL])],
                    policy={"name": "round_robin"}, health=no_ejection(), retries=2)
                with GatewayProcess(config) as gw:
                    if kind == "refused":
                        # Its first probe passed; then nothing listens (next probe in 60 s).
                        wait_until(lambda: gw.alive() and self._probed(bad), message="probe")
                        bad.close_listener()
                    for i in range(6):
                        status, headers, data = gw.post("/v1/chat/completions",
                                                        chat(f"Retry {i}"))
                        self.assertEqual(status, 200, data)
                        self.assertEqual(headers["x-warmroute-backend"], "r0")
                    self.assertGreaterEqual(metric_sum(gw.metrics_text(),
                                                       "warmroute_retries_total", backend="bad"), 1)
                    wait_metric(gw, "warmroute_requests_total", lambda v: v == 6, code="200")
                    if kind != "refused":
                        self.assertGreaterEqual(bad.posts, 1)

    @staticmethod
    def _probed(fault):
        return fault.probes > 0

    def test_at_most_two_retries_then_the_engines_5xx_is_relayed(self):
        faults = [FaultBackend("error500", name=f"f{i}") for i in range(4)]
        try:
            config = base_config([fault_entry(f"f{i}", f) for i, f in enumerate(faults)],
                                 policy={"name": "round_robin"}, health=no_ejection(), retries=2)
            with GatewayProcess(config) as gw:
                status, _, data = gw.post("/v1/chat/completions", chat("All fail."))
                self.assertEqual(status, 500, data)
                err = error_of(self, data)
                self.assertIn("injected failure", err["message"])  # the engine's own body
                self.assertEqual(sum(f.posts for f in faults), 3)  # 1 try + 2 retries
                text = gw.metrics_text()
                self.assertEqual(metric_sum(text, "warmroute_retries_total"), 2)
        finally:
            for f in faults:
                f.stop()

    def gateway_before_bad_and_r0(self, bad):
        """A gateway round-robin over `bad` and r0, retries 2. `bad` also serves the model
        "bad-only", so that a request for it has no alternate to go to."""
        return GatewayProcess(base_config(
            [fault_entry("bad", bad, models=[MODEL, "bad-only"]),
             replica_backend(0, models=[MODEL])],
            policy={"name": "round_robin"}, health=no_ejection(), retries=2))

    def assert_all_served_by_r0(self, gw, bodies):
        """Each of `bodies` gets 200 from r0, some after a retry away from `bad`."""
        for body in bodies:
            status, headers, data = gw.post("/v1/chat/completions", body)
            self.assertEqual(status, 200, data)
            self.assertEqual(headers["x-warmroute-backend"], "r0")
            if not body.get("stream"):
                self.assertEqual(json.loads(data)["object"], "chat.completion")
        self.assertGreaterEqual(
            metric_sum(gw.metrics_text(), "warmroute_retries_total", backend="bad"), 1)

    def test_a_5xx_whose_body_stalls_is_retried_without_waiting_idle_stream(self):
        with FaultBackend("error500_stall") as bad:
            config = base_config(
                [fault_entry("bad", bad, models=[MODEL, "bad-only"]),
                 replica_backend(0, models=[MODEL])],
                policy={"name": "round_robin"}, health=no_ejection(), retries=2,
                timeouts={"idle_stream_ms": 30000})
            with GatewayProcess(config) as gw:
                for i in range(2):  # round robin: one of them goes to bad first
                    start = time.monotonic()
                    status, headers, data = gw.post("/v1/chat/completions", chat(f"Stall {i}"))
                    self.assertEqual(status, 200, data)
                    self.assertEqual(headers["x-warmroute-backend"], "r0")
                    self.assertLess(time.monotonic() - start, 5)  # not idle_stream's 30 s
                self.assertEqual(bad.posts, 1)
                # With no alternate: the 500, what arrived of its body quoted, after about 1 s.
                start = time.monotonic()
                status, _, data = gw.post("/v1/chat/completions", chat("Stall.", model="bad-only"))
                self.assertEqual(status, 500, data)
                self.assertLess(time.monotonic() - start, 5)
                self.assertIn("backend bad answered 500", error_of(self, data)["message"])

    def test_invalid_final_status_is_retried_else_answered_502(self):
        # 999 and 600 are no HTTP status, and the gateway never asks an engine to upgrade: none
        # is relayed.
        for mode, code in (("status_999", 999), ("status_600", 600), ("switch_101", 101)):
            with self.subTest(mode=mode), FaultBackend(mode) as bad, \
                    self.gateway_before_bad_and_r0(bad) as gw:
                self.assert_all_served_by_r0(
                    gw, [chat(f"Invalid {i}", stream=i % 2 == 1) for i in range(4)])
                for stream in (False, True):
                    status, headers, data = gw.post(
                        "/v1/chat/completions", chat("Nowhere else.", stream=stream,
                                                     model="bad-only"))
                    self.assertEqual(status, 502, data)
                    self.assertTrue(headers["content-type"].startswith("application/json"))
                    err = error_of(self, data, "BadGatewayError")
                    self.assertEqual(err["code"], 502)
                    self.assertIn("backend bad", err["message"])
                    self.assertIn(str(code), err["message"])
                self.assertTrue(gw.alive())

    def test_non_streaming_body_that_breaks_off_is_retried(self):
        # Nothing reached the client yet: the request goes to the next alternate.
        for mode in ("cl_short", "chunked_trunc"):
            with self.subTest(mode=mode), FaultBackend(mode) as bad, \
                    self.gateway_before_bad_and_r0(bad) as gw:
                self.assert_all_served_by_r0(gw, [chat(f"Cut short {i}") for i in range(4)])
                # With no alternate: 503 naming the backend.
                posts = bad.posts
                status, _, data = gw.post("/v1/chat/completions",
                                          chat("Nowhere else.", model="bad-only"))
                self.assertEqual(status, 503, data)
                err = error_of(self, data, "ServiceUnavailableError")
                self.assertIn("backend bad broke off", err["message"])
                self.assertEqual(bad.posts, posts + 1)

    def test_engine_errors_that_are_no_openai_error_are_wrapped_into_one(self):
        # (An engine's OpenAI error is relayed unchanged: test_engine_4xx_is_relayed_unchanged,
        # test_at_most_two_retries_then_the_engines_5xx_is_relayed.)
        cases = {  # mode: (status, type, what the message quotes)
            "error500_html": (500, "InternalServerError", ": oops"),
            "error500_huge": (500, "InternalServerError", ": " + "x" * 200 + "…"),
            "error500_stream": (500, "InternalServerError", " with an event stream"),
            "error400_text": (400, "BadRequestError", ": bad bad"),
        }
        faults = {mode: FaultBackend(mode, name=mode) for mode in cases}
        try:
            # Each backend serves a model named after its mode: no alternate to retry on.
            config = base_config([fault_entry(m, f, models=[m]) for m, f in faults.items()],
                                 health=no_ejection(), timeouts={"idle_stream_ms": 3000})
            with GatewayProcess(config) as gw:
                for mode, (code, error_type, quoted) in cases.items():
                    for stream in (False, True):
                        with self.subTest(mode=mode, stream=stream):
                            start = time.monotonic()
                            status, headers, data = gw.post(
                                "/v1/chat/completions", chat("Fail.", stream=stream, model=mode))
                            self.assertLess(time.monotonic() - start, 2)  # nothing waited for
                            self.assertEqual(status, code, data[:300])
                            self.assertEqual(headers["content-type"], "application/json")
                            err = error_of(self, data, error_type)
                            self.assertEqual(err["code"], code)
                            self.assertEqual(err["message"],
                                             f"backend {mode} answered {code}{quoted}")
        finally:
            for f in faults.values():
                f.stop()

    def test_all_backends_unreachable_gives_503(self):
        for kind in ("refused", "reset"):
            with self.subTest(kind=kind):
                faults = [FaultBackend("ok" if kind == "refused" else kind) for _ in range(2)]
                try:
                    config = base_config([fault_entry(f"f{i}", f) for i, f in enumerate(faults)],
                                         policy={"name": "round_robin"}, health=no_ejection())
                    with GatewayProcess(config) as gw:
                        if kind == "refused":
                            wait_until(lambda: all(f.probes > 0 for f in faults), message="probes")
                            for f in faults:
                                f.close_listener()
                        status, _, data = gw.post("/v1/chat/completions", chat("Nobody home."))
                        self.assertEqual(status, 503, data)
                        error_of(self, data, "ServiceUnavailableError")
                finally:
                    for f in faults:
                        f.stop()


# --- 4, 5, 6: mid-stream failures, cancellation, timeouts --------------------------------------

class StreamFailureTest(unittest.TestCase):
    def assert_stream_error(self, resp, data_events):
        self.assertEqual(resp.status, 200)
        self.assertTrue(resp.closed, "the gateway must close the connection, not hang")
        events = resp.json_events()
        self.assertGreaterEqual(len(events), data_events + 1, resp.body)
        self.assertTrue(all("choices" in e for e in events[:data_events]))
        self.assertIn("error", events[-1], resp.body)
        self.assertTrue(events[-1]["error"]["message"])
        self.assertNotIn("[DONE]", resp.events())

    def test_fault_backend_dying_mid_stream_ends_with_an_sse_error(self):
        with FaultBackend("stream_die", events=2) as bad:
            config = base_config([fault_entry("bad", bad)], health=no_ejection())
            with GatewayProcess(config) as gw:
                resp = gw.stream("/v1/chat/completions", chat("Die.", stream=True), timeout=10)
                self.assert_stream_error(resp, data_events=2)
                self.assertLess(resp.elapsed, 5)
                # The gateway still serves.
                bad.set_mode("ok")
                status, _, _ = gw.post("/v1/chat/completions", chat("After."))
                self.assertEqual(status, 200)

    def test_events_before_a_malformed_chunk_are_relayed_then_the_error(self):
        # The event and the bad chunk arrive in one read.
        with FaultBackend("stream_bad_chunk") as bad:
            config = base_config([fault_entry("bad", bad)], health=no_ejection())
            with GatewayProcess(config) as gw:
                resp = gw.stream("/v1/chat/completions", chat("Bad chunk.", stream=True))
                self.assert_stream_error(resp, data_events=1)
                self.assertEqual(resp.json_events()[0]["choices"][0]["delta"]["content"], "a")
                self.assertIn("bad chunk", resp.json_events()[-1]["error"]["message"])

    def test_killed_engine_mid_stream_ends_with_an_sse_error(self):
        with EmulatorProcess(["--profile", "tiny", "--no-jitter"]) as engine:
            config = base_config([{"name": "e", "url": url_of(engine.replicas[0])}],
                                 health=no_ejection())
            with GatewayProcess(config) as gw:
                reader = StreamReader(gw, chat("Talk a lot.", stream=True, max_tokens=20000))
                try:
                    reader.read_until(b"data: ")
                    engine._proc.kill()
                    self.assertTrue(reader.read_to_close(timeout=5), "the client's stream hung")
                    status, _, body = parse_response(reader.raw)
                finally:
                    reader.close()
                self.assertEqual(status, 200)
                events = [json.loads(e) for e in sse_events(body) if e != "[DONE]"]
                self.assertIn("error", events[-1], body[-500:])
                self.assertNotIn("[DONE]", sse_events(body))

    def assert_closed_upstream_soon(self, backend, closed):
        """`backend` (a FaultBackend) saw its connection closed within 100 ms of `closed`."""
        wait_until(lambda: backend.closed_at, timeout=2, interval=0.002,
                   message="the backend to see the close")
        delay = backend.closed_at[0] - closed
        self.assertLess(delay, 0.1, f"upstream cancelled after {delay * 1e3:.0f} ms")

    def test_client_disconnect_cancels_the_upstream_request(self):
        with FaultBackend("stream_slow", events=1, interval=0.02) as slow:
            config = base_config([fault_entry("slow", slow)], health=no_ejection())
            with GatewayProcess(config) as gw:
                reader = StreamReader(gw, chat("Stream forever.", stream=True))
                reader.read_until(b"tok1")
                closed = time.monotonic()
                reader.close()
                self.assert_closed_upstream_soon(slow, closed)

    def test_client_disconnect_aborts_the_engines_request(self):
        config = base_config([replica_backend(2)], health=no_ejection())
        running = functools.partial(requests_running, ENGINE.replicas[2])

        with GatewayProcess(config) as gw:
            reader = StreamReader(gw, chat("Talk a lot.", stream=True, max_tokens=20000))
            reader.read_until(b"data: ")
            reader.read_until(b'"content":" ')  # decoding has started
            self.assertEqual(running(), 1)
            closed = time.monotonic()
            reader.close()
            wait_until(lambda: running() == 0, timeout=2, interval=0.005,
                       message="vllm:num_requests_running to drop to 0")
            delay = time.monotonic() - closed
            self.assertLess(delay, 0.1, f"the engine still ran it {delay * 1e3:.0f} ms later")

    def test_client_disconnect_aborts_a_non_streaming_request(self):
        config = base_config([replica_backend(2)], health=no_ejection())
        running = functools.partial(requests_running, ENGINE.replicas[2])

        with GatewayProcess(config) as gw:
            sock = gw.open_raw()
            gw.send_raw_request(sock, "/v1/chat/completions", chat("Long.", max_tokens=20000))
            wait_until(lambda: running() == 1, timeout=2, message="the engine to start it")
            closed = time.monotonic()
            sock.close()
            wait_until(lambda: running() == 0, timeout=2, interval=0.005,
                       message="vllm:num_requests_running to drop to 0")
            delay = time.monotonic() - closed
            self.assertLess(delay, 0.1, f"the engine still ran it {delay * 1e3:.0f} ms later")

    def test_client_that_pipelines_a_request_and_leaves_aborts_the_engines_request(self):
        # Bytes the client sends while its request runs (a pipelined request) do not end the
        # watch: the FIN behind them still cancels the request (net/http1/http_server.cc, Watch).
        # Pipelined in the same write as the request, and 50 ms later (after the watch's first
        # peek has started).
        config = base_config([replica_backend(2)], health=no_ejection())
        running = functools.partial(requests_running, ENGINE.replicas[2])

        data = json.dumps(chat("Long.", max_tokens=20000)).encode()
        request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
                   ).encode() + data
        pipelined = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        with GatewayProcess(config) as gw:
            for at_once in (True, False):
                sock = gw.open_raw()
                sock.sendall(request + pipelined if at_once else request)
                wait_until(lambda: running() == 1, timeout=2, message="the engine to start it")
                if not at_once:
                    time.sleep(0.05)
                    sock.sendall(pipelined)
                time.sleep(0.05)
                closed = time.monotonic()
                sock.close()
                wait_until(lambda: running() == 0, timeout=2, interval=0.005,
                           message=f"vllm:num_requests_running to drop to 0 (at once: {at_once})")
                delay = time.monotonic() - closed
                self.assertLess(delay, 0.1, f"the engine still ran it {delay * 1e3:.0f} ms later "
                                f"(at once: {at_once})")

    def test_sigterm_drains_requests_in_progress_then_exits(self):
        # A rolling restart: SIGTERM stops accepting and closes idle keep-alive connections, but
        # a stream in progress runs to its end (listen.shutdown_grace_ms, default 30 s); then the
        # gateway exits 0.
        config = base_config([replica_backend(2)], health=no_ejection())
        with GatewayProcess(config) as gw:
            idle = gw.connection()
            status, _, _ = gw.request("POST", "/v1/chat/completions", chat("Hi."), conn=idle)
            self.assertEqual(status, 200)
            reader = StreamReader(gw, chat("Talk.", stream=True, max_tokens=1500))
            try:
                reader.read_until(b"data: ")
                signalled = time.monotonic()
                gw._proc.send_signal(signal.SIGTERM)

                def refused():
                    try:
                        socket.create_connection((gw.host, gw.port), timeout=1).close()
                        return False
                    except OSError:
                        return True

                wait_until(refused, timeout=2, message="new connections to be refused")
                idle.sock.settimeout(2)
                self.assertEqual(idle.sock.recv(100), b"", "the idle connection stays open")
                self.assertTrue(reader.read_to_close(timeout=30), "the stream hung")
                status, _, body = parse_response(reader.raw)
            finally:
                reader.close()
                idle.close()
            self.assertEqual(status, 200)
            self.assertEqual(sse_events(body)[-1], "[DONE]", body[-300:])
            self.assertEqual(gw._proc.wait(timeout=5), 0)
            self.assertLess(time.monotonic() - signalled, 25)
            self.assertIn("drained: stopping", gw.log())

    def test_what_outlasts_the_shutdown_grace_is_cut_and_a_second_signal_stops_at_once(self):
        config = base_config([replica_backend(2)], health=no_ejection(),
                             listen={"shutdown_grace_ms": 300})
        for second_signal in (False, True):
            with GatewayProcess(config) as gw:
                reader = StreamReader(gw, chat("Talk a lot.", stream=True, max_tokens=20000))
                try:
                    reader.read_until(b"data: ")
                    signalled = time.monotonic()
                    gw._proc.send_signal(signal.SIGTERM)
                    if second_signal:
                        time.sleep(0.05)
                        gw._proc.send_signal(signal.SIGTERM)
                    self.assertTrue(reader.read_to_close(timeout=5), "the stream hung")
                finally:
                    reader.close()
                self.assertEqual(gw._proc.wait(timeout=5), 0)
                elapsed = time.monotonic() - signalled
                if second_signal:
                    self.assertLess(elapsed, 0.25)
                else:
                    self.assertGreaterEqual(elapsed, 0.29)
                    self.assertIn("shutdown grace period over; cutting open connections: 1",
                                  gw.log())

    def test_client_that_leaves_at_once_cancels_the_upstream_request(self):
        # The server starts watching a client for a close only after a short delay
        # (net/http1/http_server.cc, kWatchDelay): a client that sends its request and leaves at once
        # must still get the upstream request cancelled within 100 ms. The backend never
        # answers, so nothing but that watch can notice.
        with FaultBackend("hang") as hang:
            config = base_config([fault_entry("hang", hang)], health=no_ejection())
            with GatewayProcess(config) as gw:
                sock = gw.open_raw()
                gw.send_raw_request(sock, "/v1/chat/completions", chat("Wait."))
                closed = time.monotonic()
                sock.close()
                self.assert_closed_upstream_soon(hang, closed)

    def test_first_byte_timeout_gives_504_without_retry(self):
        hangs = [FaultBackend("hang") for _ in range(2)]
        try:
            config = base_config([fault_entry(f"h{i}", h) for i, h in enumerate(hangs)],
                                 health=no_ejection(), timeouts={"first_byte_ms": 300}, retries=2)
            with GatewayProcess(config) as gw:
                start = time.monotonic()
                status, _, data = gw.post("/v1/chat/completions", chat("Hang."), timeout=10)
                elapsed = time.monotonic() - start
                self.assertEqual(status, 504, data)
                error_of(self, data, "GatewayTimeoutError")
                self.assertGreaterEqual(elapsed, 0.29)
                self.assertLess(elapsed, 2.0)
                self.assertEqual(sum(h.posts for h in hangs), 1, "a first-byte timeout is not retried")
                # The abandoned upstream request was closed.
                wait_until(lambda: sum(len(h.closed_at) for h in hangs) == 1, timeout=2,
                           message="the hung upstream connection to be closed")
        finally:
            for h in hangs:
                h.stop()

    def test_idle_stream_timeout_ends_the_stream_with_an_sse_error(self):
        with FaultBackend("stream_hang", events=1) as stuck:
            config = base_config([fault_entry("stuck", stuck)], health=no_ejection(),
                                 timeouts={"idle_stream_ms": 300})
            with GatewayProcess(config) as gw:
                resp = gw.stream("/v1/chat/completions", chat("Stall.", stream=True), timeout=10)
                self.assert_stream_error(resp, data_events=1)
                self.assertGreaterEqual(resp.elapsed, 0.29)
                self.assertLess(resp.elapsed, 3)

    def test_an_idle_gateways_access_log_reaches_its_file_within_two_seconds(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "access.log")
            config = base_config([replica_backend(0)], observability={"access_log": path})
            with GatewayProcess(config) as gw:
                for i in range(3):
                    status, _, data = gw.post("/v1/chat/completions", chat(f"Logged {i}."))
                    self.assertEqual(status, 200, data)
                # No more traffic: the lines must not wait for the next request.
                def lines():
                    with open(path) as f:
                        return [json.loads(line) for line in f]
                wait_until(lambda: len(lines()) == 3, timeout=2.5,
                           message="the 3 access-log lines in the file")
                self.assertEqual([r["status"] for r in lines()], [200, 200, 200])

    def test_slowloris_connection_is_closed_after_the_header_timeout(self):
        config = base_config([replica_backend(0)], listen={"header_timeout_ms": 300})
        with GatewayProcess(config) as gw:
            sock = gw.open_raw()
            try:
                start = time.monotonic()
                sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                closed, _ = wait_for_close(sock, start)
                self.assertIsNotNone(closed, "the half-sent request was never cut")
                self.assertGreaterEqual(closed, 0.25)
                self.assertLess(closed, 2.5)
            finally:
                sock.close()
            status, _, _ = gw.post("/v1/chat/completions", chat("Still there?"))
            self.assertEqual(status, 200)

    def test_a_body_that_stops_arriving_is_cut_after_the_body_timeout(self):
        config = base_config([replica_backend(0)], listen={"body_timeout_ms": 400})
        with GatewayProcess(config) as gw:
            sock = gw.open_raw()
            try:
                body = json.dumps(chat("Half a question")).encode()
                sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Type: application/json\r\nContent-Length: " +
                             str(len(body)).encode() + b"\r\n\r\n" + body[:len(body) // 2])
                closed, received = wait_for_close(sock, time.monotonic())
                self.assertIsNotNone(closed, "the half-sent body was never cut")
                self.assertGreaterEqual(closed, 0.35)
                self.assertLess(closed, 3)
                self.assertEqual(received, b"")  # nothing was dispatched, nothing answered
            finally:
                sock.close()
            self.assertEqual(metric_sum(gw.metrics_text(), "warmroute_requests_total"), 0)
            status, _, _ = gw.post("/v1/chat/completions", chat("Still there?"))
            self.assertEqual(status, 200)


# --- 7: bad input -------------------------------------------------------------------------------

class BadInputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gw = GatewayProcess(base_config(
            [replica_backend(0, models=[MODEL]), replica_backend(1, models=[MODEL])],
            listen={"body_limit_mb": 1}))
        cls.gw.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.gw.__exit__(None, None, None)

    def assert_still_serves(self):
        status, _, data = self.gw.post("/v1/chat/completions", chat("Fine?"))
        self.assertEqual(status, 200, data)

    def test_malformed_bodies_get_400_naming_the_parameter(self):
        cases = [
            (b'{"model": "tiny", "messages": [', None),
            (b"not json at all", None),
            (json.dumps({"model": MODEL, "messages": "hello"}).encode(), "messages"),
            (json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x"}],
                         "max_tokens": "many"}).encode(), "max_tokens"),
            (json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x"}],
                         "stream": "yes"}).encode(), "stream"),
            (json.dumps({"model": MODEL}).encode(), "messages"),
            (json.dumps({"model": 7, "messages": [{"role": "user", "content": "x"}]}).encode(),
             "model"),
        ]
        for body, param in cases:
            with self.subTest(body=body[:60]):
                status, headers, data = self.gw.post("/v1/chat/completions", body)
                self.assertEqual(status, 400, data)
                self.assertTrue(headers.get("content-type", "").startswith("application/json"))
                err = error_of(self, data, "BadRequestError")
                if param is not None:
                    self.assertEqual(err.get("param"), param, data)
                self.assert_still_serves()
        status, _, data = self.gw.post("/v1/completions", {"model": MODEL})
        self.assertEqual(status, 400, data)
        self.assertEqual(error_of(self, data, "BadRequestError").get("param"), "prompt")

    def test_request_without_model_gets_the_default_model(self):
        # `model` is optional, as in vLLM: the engine serves its own model, even when the
        # backends are configured with an explicit model list.
        body = chat("No model named.")
        del body["model"]
        status, headers, data = self.gw.post("/v1/chat/completions", body)
        self.assertEqual(status, 200, data)
        self.assertEqual(json.loads(data)["model"], MODEL)

    def test_body_over_the_limit_gets_413(self):
        body = json.dumps(chat("x" * (1 << 20) + "y" * 100_000)).encode()
        sock = self.gw.open_raw()
        raw = b""
        try:
            sock.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                          f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
                         .encode())
            try:
                sock.sendall(body)
            except OSError:
                pass  # the gateway may answer and close before reading it all
            sock.settimeout(5)
            while True:
                try:
                    data = sock.recv(65536)
                except OSError:
                    break
                if not data:
                    break
                raw += data
        finally:
            sock.close()
        status, _, payload = parse_response(raw)
        self.assertEqual(status, 413, raw[:300])
        error_of(self, payload, "RequestTooLargeError")
        self.assert_still_serves()

    def test_unknown_model_gets_404(self):
        body = chat("Hi")
        body["model"] = "no-such-model"
        status, _, data = self.gw.post("/v1/chat/completions", body)
        self.assertEqual(status, 404, data)
        err = error_of(self, data, "NotFoundError")
        self.assertEqual(err.get("param"), "model")
        self.assertIn("no-such-model", err["message"])
        self.assert_still_serves()

    def test_unknown_route_and_wrong_method(self):
        status, _, data = self.gw.request("GET", "/v2/nothing")
        self.assertEqual(status, 404, data)
        error_of(self, data)
        for method, path, allow in (("GET", "/v1/chat/completions", "POST"),
                                    ("PUT", "/v1/chat/completions", "POST"),
                                    ("POST", "/v1/models", "GET, HEAD"),
                                    ("DELETE", "/health", "GET, HEAD")):
            with self.subTest(method=method, path=path):
                status, headers, data = self.gw.request(method, path,
                                                        b"{}" if method == "PUT" else None)
                self.assertEqual(status, 405, data)
                self.assertEqual(headers.get("allow"), allow)
                err = error_of(self, data, "MethodNotAllowedError")  # the type and code of a 405
                self.assertEqual(err["code"], 405)
                self.assertIn(method, err["message"])
        self.assert_still_serves()

    def test_no_healthy_backend_gets_503(self):
        port = free_tcp_port()  # nothing listens there
        config = base_config([{"name": "dead", "url": f"http://127.0.0.1:{port}"}])
        with GatewayProcess(config) as gw:
            wait_until(lambda: gw.request("GET", "/health")[0] == 503, message="probe failure")
            status, _, data = gw.post("/v1/chat/completions", chat("Anyone?"))
            self.assertEqual(status, 503, data)
            error_of(self, data, "ServiceUnavailableError")

    def test_full_admission_queue_gets_429(self):
        with FaultBackend("stream_slow", events=1, interval=0.02) as slow:
            config = base_config([fault_entry("slow", slow)], health=no_ejection(),
                                 admission={"max_in_flight": 1, "max_queue": 0})
            with GatewayProcess(config) as gw:
                reader = StreamReader(gw, chat("Hold the slot.", stream=True))
                try:
                    reader.read_until(b"tok0")
                    status, _, data = gw.post("/v1/chat/completions", chat("Me too."))
                    self.assertEqual(status, 429, data)
                    error_of(self, data, "RateLimitError")
                finally:
                    reader.close()
                slow.set_mode("ok")
                # The slot is released once the first request is cancelled (its handler ends
                # just after the upstream connection closed).
                wait_until(lambda: slow.closed_at, timeout=2, message="the cancellation")
                rejected = [429]

                def admitted():
                    status = gw.post("/v1/chat/completions", chat("Now?"))[0]
                    if status == 429:
                        rejected.append(status)
                    return status == 200
                wait_until(admitted, timeout=3, message="a request to be admitted again")
                wait_metric(gw, "warmroute_request_rejections_total",
                            lambda v: v == len(rejected), reason="queue_full")
                self.assertLessEqual(len(rejected), 2)

    def test_queued_request_waits_for_a_slot_or_times_out_with_429(self):
        with FaultBackend("stream_slow", events=1, interval=0.02) as slow:
            config = base_config([fault_entry("slow", slow)], health=no_ejection(),
                                 admission={"max_in_flight": 1, "max_queue": 1,
                                            "queue_timeout_ms": 300})
            with GatewayProcess(config) as gw:
                reader = StreamReader(gw, chat("Hold the slot.", stream=True))
                try:
                    reader.read_until(b"tok0")
                    start = time.monotonic()
                    status, _, data = gw.post("/v1/chat/completions", chat("Queued."))
                    elapsed = time.monotonic() - start
                    self.assertEqual(status, 429, data)
                    error_of(self, data, "RateLimitError")
                    self.assertGreaterEqual(elapsed, 0.29)
                    self.assertLess(elapsed, 2)
                    wait_metric(gw, "warmroute_request_rejections_total", lambda v: v == 1,
                                reason="queue_timeout")
                    # A queued client that leaves is withdrawn from the queue.
                    queued = StreamReader(gw, chat("Leaving."))

                    def queue_length():
                        return metric_sum(gw.metrics_text(), "warmroute_admission_queue_length")
                    wait_until(lambda: queue_length() == 1, message="the request to queue")
                    queued.close()
                    wait_until(lambda: queue_length() == 0, timeout=1,
                               message="the queue to empty")
                    # A queued request gets the slot when the holder leaves.
                    slow.set_mode("ok")
                    result = {}
                    waiter = threading.Thread(target=lambda: result.update(
                        r=gw.post("/v1/chat/completions", chat("Next."))))
                    waiter.start()
                    time.sleep(0.1)
                    self.assertNotIn("r", result, "the second request was not queued")
                finally:
                    reader.close()
                waiter.join(timeout=5)
                self.assertEqual(result["r"][0], 200, result)


# --- 8: health and outlier ejection ------------------------------------------------------------

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class HealthTest(unittest.TestCase):
    def test_health_follows_backend_eligibility(self):
        with FaultBackend("ok") as fault:
            config = base_config([fault_entry("f", fault)])
            with GatewayProcess(config) as gw:
                status, _, data = gw.request("GET", "/health")
                self.assertEqual(status, 200, data)
                self.assertEqual(json.loads(data)["eligible"], 1)
                fault.stop()  # its connections close and nothing listens any more
                wait_until(lambda: gw.request("GET", "/health")[0] == 503, timeout=3,
                           message="/health to turn 503")

    def test_failing_backend_is_ejected_and_readmitted_after_backoff(self):
        with FaultBackend("error500") as bad:
            config = base_config(
                [fault_entry("bad", bad), replica_backend(0, models=[MODEL])],
                policy={"name": "round_robin"}, retries=2, admin={"token": TOKEN},
                health={"probe_interval_ms": 100, "eject_after_failures": 2,
                        "backoff_initial_ms": 800, "backoff_max_ms": 800})
            with GatewayProcess(config) as gw:
                for i in range(6):
                    status, _, _ = gw.post("/v1/chat/completions", chat(f"Eject {i}"))
                    self.assertEqual(status, 200)
                    if backend_states(gw, TOKEN)["bad"]["state"] == "ejected":
                        break
                states = backend_states(gw, TOKEN)
                self.assertEqual(states["bad"]["state"], "ejected")
                self.assertFalse(states["bad"]["eligible"])
                self.assertGreaterEqual(states["bad"]["ejections"], 1)
                posts = bad.posts
                for i in range(4):
                    status, headers, _ = gw.post("/v1/chat/completions", chat(f"Away {i}"))
                    self.assertEqual(status, 200)
                    self.assertEqual(headers["x-warmroute-backend"], "r0")
                self.assertEqual(bad.posts, posts, "an ejected backend got requests")
                bad.set_mode("ok")

                def back():
                    gw.post("/v1/chat/completions", chat("Back?"))
                    return bad.posts > posts
                wait_until(back, timeout=3, interval=0.05, message="re-admission")
                self.assertEqual(backend_states(gw, TOKEN)["bad"]["state"], "up")


# --- 9: admin API -------------------------------------------------------------------------------

class AdminApiTest(unittest.TestCase):
    def test_admin_requires_the_token(self):
        config = base_config([replica_backend(0)], admin={"token": TOKEN})
        with GatewayProcess(config) as gw:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                            {"Authorization": f"Bearer {TOKEN}x"}):
                with self.subTest(headers=headers):
                    status, resp_headers, data = gw.request("GET", "/admin/backends",
                                                            headers=headers)
                    self.assertEqual(status, 401, data)
                    error_of(self, data, "AuthenticationError")
                    self.assertEqual(resp_headers.get("www-authenticate"), "Bearer")
            for auth in (AUTH, {"Authorization": f"bearer {TOKEN}"},
                         {"Authorization": f"BEARER {TOKEN}"}):  # the scheme's case is free
                status, _, data = gw.request("GET", "/admin/backends", headers=auth)
                self.assertEqual(status, 200, data)
                self.assertEqual([b["name"] for b in json.loads(data)["backends"]], ["r0"])
            status, _, data = gw.request("HEAD", "/admin/backends", headers=AUTH)
            self.assertEqual((status, data), (200, b""))
            # A method a route does not take: 405 and Allow; an unknown action: 404.
            for method, path, allow in (("PUT", "/admin/backends", "GET, HEAD, POST"),
                                        ("POST", "/admin/config", "GET, HEAD"),
                                        ("GET", "/admin/backends/r0", "DELETE"),
                                        ("GET", "/admin/backends/r0/drain", "POST")):
                with self.subTest(method=method, path=path):
                    status, resp_headers, data = gw.request(method, path, headers=AUTH)
                    self.assertEqual(status, 405, data)
                    self.assertEqual(resp_headers.get("allow"), allow)
                    self.assertEqual(error_of(self, data, "MethodNotAllowedError")["code"], 405)
            status, _, data = gw.request("POST", "/admin/backends/r0/reboot", headers=AUTH)
            self.assertEqual(status, 404, data)
            status, _, data = gw.request("GET", "/admin/config", headers=AUTH)
            self.assertEqual(status, 200)
            self.assertNotIn(TOKEN.encode(), data)
            self.assertEqual(json.loads(data)["admin"]["token"], "<redacted>")
        # Without a token the API does not exist.
        with GatewayProcess(base_config([replica_backend(0)])) as gw:
            status, _, _ = gw.request("GET", "/admin/backends", headers=AUTH)
            self.assertEqual(status, 404)

    def test_an_added_backend_takes_requests_only_once_a_probe_passed(self):
        # It accepts connections but answers nothing, and its /health fails: no request may wait
        # on it for first_byte_ms.
        with FaultBackend("hang") as hung:
            hung.health_status = 503
            config = base_config([replica_backend(0)], policy={"name": "round_robin"},
                                 admin={"token": TOKEN},
                                 health=no_ejection(probe_interval_ms=100),
                                 timeouts={"first_byte_ms": 3000})
            with GatewayProcess(config) as gw:
                status, _, data = gw.post("/admin/backends", {"name": "hung", "url": hung.url},
                                          headers=AUTH)
                self.assertEqual(status, 201, data)
                self.assertIn(backend_states(gw, TOKEN)["hung"]["state"],
                              ("probe_pending", "probe_failed"))
                for i in range(4):
                    start = time.monotonic()
                    status, headers, data = gw.post("/v1/chat/completions", chat(f"Now {i}"))
                    self.assertEqual(status, 200, data)
                    self.assertEqual(headers["x-warmroute-backend"], "r0")
                    self.assertLess(time.monotonic() - start, 2)
                self.assertEqual(hung.posts, 0)
                # Once its probe passes, it takes its share.
                hung.health_status = 200
                wait_until(lambda: backend_states(gw, TOKEN)["hung"]["state"] == "up",
                           message="the added backend's first good probe")

    def test_add_drain_undrain_remove(self):
        with FaultBackend("stream_finite", events=12, interval=0.05) as slow:
            config = base_config([fault_entry("slow", slow)], health=no_ejection(),
                                 policy={"name": "round_robin"}, admin={"token": TOKEN})
            with GatewayProcess(config) as gw:
                # An in-flight stream on "slow".
                reader = StreamReader(gw, chat("Keep going.", stream=True))
                reader.read_until(b"tok0")
                # Add r0: it then takes traffic.
                status, _, data = gw.post("/admin/backends",
                                          {"url": url_of(ENGINE.replicas[0]), "name": "r0"},
                                          headers=AUTH)
                self.assertEqual(status, 201, data)
                status, _, data = gw.post("/admin/backends", {"url": url_of(ENGINE.replicas[0])},
                                          headers=AUTH)
                self.assertEqual(status, 409, data)
                status, _, data = gw.post("/admin/backends", {"url": "ftp://x"}, headers=AUTH)
                self.assertEqual(status, 400, data)
                self.assertIn("url", error_of(self, data)["message"])
                wait_until(lambda: backend_states(gw, TOKEN)["r0"]["state"] == "up",
                           message="r0's first probe")
                # Drain "slow": nothing new goes there, the in-flight stream goes on.
                status, _, data = gw.post("/admin/backends/slow/drain", None, headers=AUTH)
                self.assertEqual(status, 200, data)
                self.assertEqual(backend_states(gw, TOKEN)["slow"]["state"], "draining")
                posts = slow.posts
                for i in range(4):
                    status, headers, data = gw.post("/v1/chat/completions", chat(f"New {i}"))
                    self.assertEqual(status, 200, data)
                    self.assertEqual(headers["x-warmroute-backend"], "r0")
                self.assertEqual(slow.posts, posts)
                # The in-flight stream finishes normally.
                try:
                    self.assertTrue(reader.read_to_close(timeout=5))
                finally:
                    reader.close()
                status, headers, body = parse_response(reader.raw)
                self.assertEqual(status, 200)
                self.assertEqual(headers.get("x-warmroute-backend"), "slow")
                events = sse_events(body)
                self.assertEqual(events[-1], "[DONE]")
                self.assertEqual(sum(1 for e in events if "tok" in e), 12)
                self.assertEqual(slow.closed_at, [])
                # Remove r0: with "slow" draining nothing is eligible.
                status, _, data = gw.request("DELETE", "/admin/backends/r0", headers=AUTH)
                self.assertEqual(status, 200, data)
                self.assertNotIn("r0", backend_states(gw, TOKEN))
                status, _, data = gw.request("DELETE", "/admin/backends/r0", headers=AUTH)
                self.assertEqual(status, 404, data)
                status, _, data = gw.post("/v1/chat/completions", chat("Anyone?"))
                self.assertEqual(status, 503, data)
                # Undrain: "slow" serves again.
                slow.set_mode("ok")
                status, _, data = gw.post("/admin/backends/slow/undrain", None, headers=AUTH)
                self.assertEqual(status, 200, data)
                status, headers, data = gw.post("/v1/chat/completions", chat("Back."))
                self.assertEqual(status, 200, data)
                self.assertEqual(headers["x-warmroute-backend"], "slow")
                # Removing a backend lets its in-flight stream finish.
                slow.set_mode("stream_finite")
                reader = StreamReader(gw, chat("Last one.", stream=True))
                try:
                    reader.read_until(b"tok0")
                    status, _, data = gw.request("DELETE", "/admin/backends/slow", headers=AUTH)
                    self.assertEqual(status, 200, data)
                    self.assertEqual(backend_states(gw, TOKEN), {})
                    self.assertTrue(reader.read_to_close(timeout=5))
                finally:
                    reader.close()
                self.assertEqual(sse_events(parse_response(reader.raw)[2])[-1], "[DONE]")
                status, _, data = gw.post("/v1/chat/completions", chat("Nobody?"))
                self.assertEqual(status, 503, data)  # no backend at all: unavailable
                self.assertIn("no backends", json.loads(data)["error"]["message"])


# --- 10: config errors and reload ---------------------------------------------------------------

class ConfigTest(unittest.TestCase):
    def test_invalid_config_exits_2_naming_the_key(self):
        cases = [
            ("listen: [1, 2\n", "YAML"),
            (json.dumps({"listen": {"prot": 8080}}), "listen.prot"),
            (json.dumps({"timeouts": {"connect_ms": -3}}), "timeouts.connect_ms"),
            (json.dumps({"backends": [{"url": "ftp://x"}]}), "backends[0].url"),
            (json.dumps({"retries": 5}), "retries"),
            (json.dumps({"policy": {"name": "no_such_policy"}}), "policy"),
        ]
        for text, key in cases:
            with self.subTest(key=key):
                code, out, err = run_serve(text, ["--port", "0"])
                self.assertEqual(code, 2, out + err)
                self.assertIn(key, err)
                self.assertNotIn("listening", out)

    def test_sighup_adds_a_backend_without_dropping_keep_alive_connections(self):
        config = base_config([replica_backend(0)], policy={"name": "round_robin"},
                             admin={"token": TOKEN})
        with GatewayProcess(config) as gw:
            conn = gw.connection()
            try:
                status, headers, _ = gw.request("POST", "/v1/chat/completions", chat("One"),
                                                conn=conn)
                self.assertEqual(status, 200)
                self.assertEqual(headers["x-warmroute-backend"], "r0")
                local = conn.sock.getsockname()
                gw.reload(base_config([replica_backend(0), replica_backend(1)],
                                      policy={"name": "round_robin"}, admin={"token": TOKEN}))
                # (a backend a reload adds takes requests once its first probe passed)
                wait_until(lambda: backend_states(gw, TOKEN).get("r1", {}).get("state") == "up",
                           timeout=3, message="the reload and r1's first probe")
                seen = set()
                for i in range(4):
                    status, headers, _ = gw.request("POST", "/v1/chat/completions",
                                                    chat(f"Two {i}"), conn=conn)
                    self.assertEqual(status, 200)
                    seen.add(headers["x-warmroute-backend"])
                self.assertEqual(seen, {"r0", "r1"})
                self.assertEqual(conn.sock.getsockname(), local, "the connection was dropped")
            finally:
                conn.close()

    def test_reload_applies_changed_backend_capacity_and_response_headers(self):
        def config(capacity, headers):
            return base_config([replica_backend(0, kv_capacity_tokens=capacity)],
                               admin={"token": TOKEN},
                               observability={"access_log": "off", "response_headers": headers})
        with GatewayProcess(config(4096, True)) as gw:
            self.assertEqual(backend_states(gw, TOKEN)["r0"]["kv_capacity_tokens"], 4096)
            wait_until(lambda: [m["id"] for m in gw.get_json("/v1/models")["data"]] == [MODEL],
                       timeout=3, message="model discovery")
            _, headers, _ = gw.post("/v1/chat/completions", chat("Before"))
            self.assertEqual(headers.get("x-warmroute-backend"), "r0")
            gw.reload(config(8192, False))
            # Meanwhile requests keep flowing: a replaced backend never leaves the fleet.
            statuses = []
            while backend_states(gw, TOKEN)["r0"]["kv_capacity_tokens"] != 8192:
                statuses.append(gw.post("/v1/chat/completions", chat("During"))[0])
                self.assertLess(len(statuses), 200, "the reload never applied the new capacity")
            self.assertEqual(set(statuses) - {200}, set())
            # The replacement's models are discovered again.
            wait_until(lambda: [m["id"] for m in gw.get_json("/v1/models")["data"]] == [MODEL],
                       timeout=3, message="the replaced backend's models")
            status, headers, _ = gw.post("/v1/chat/completions", chat("After"))
            self.assertEqual(status, 200)
            self.assertNotIn("x-warmroute-backend", headers)
            self.assertNotIn("x-warmroute-reason", headers)

    def test_sighup_right_after_the_ready_line_reloads(self):
        config = base_config([replica_backend(0)], admin={"token": TOKEN})
        for _ in range(10):
            with GatewayProcess(config, hup_on_ready=True) as gw:
                time.sleep(0.02)
                self.assertTrue(gw.alive(), "SIGHUP killed the gateway: " + gw.log())
                wait_until(lambda: "reload: config" in gw.log(), timeout=3, message="the reload")
                self.assertEqual(gw.request("GET", "/health")[0], 200)

    def test_reload_swapping_two_backends_addresses(self):
        def config(a, b):
            return base_config([{"name": "x", "url": url_of(ENGINE.replicas[a])},
                                {"name": "y", "url": url_of(ENGINE.replicas[b])}],
                               admin={"token": TOKEN})
        with GatewayProcess(config(0, 1)) as gw:
            gw.reload(config(1, 0))
            want = {"x": url_of(ENGINE.replicas[1]), "y": url_of(ENGINE.replicas[0])}
            wait_until(lambda: {n: b["url"] for n, b in backend_states(gw, TOKEN).items()} == want,
                       timeout=3, message="the swapped addresses")
            for i in range(4):
                status, _, data = gw.post("/v1/chat/completions", chat(f"Swap {i}"))
                self.assertEqual(status, 200, data)

    def test_invalid_file_on_reload_keeps_the_running_config(self):
        config = base_config([replica_backend(0)], admin={"token": TOKEN})
        with GatewayProcess(config) as gw:
            before = gw.get_json("/admin/config", headers=AUTH)
            gw.reload(json.dumps({"backends": [{"url": url_of(ENGINE.replicas[1])}],
                                  "retries": 9}))
            wait_until(lambda: "running config stays" in gw.log(), timeout=3,
                       message="the reload error in the log")
            self.assertIn("retries", gw.log())
            self.assertTrue(gw.alive())
            self.assertEqual(gw.get_json("/admin/config", headers=AUTH), before)
            self.assertEqual(list(backend_states(gw, TOKEN)), ["r0"])
            status, headers, _ = gw.post("/v1/chat/completions", chat("Still"))
            self.assertEqual(status, 200)
            self.assertEqual(headers["x-warmroute-backend"], "r0")

    def test_admin_config_shows_what_runs(self):
        config = base_config([replica_backend(0)], admin={"token": TOKEN},
                             policy={"name": "round_robin"})
        with GatewayProcess(config) as gw:
            status, _, data = gw.post("/admin/backends",
                                      {"name": "r1", "url": url_of(ENGINE.replicas[1])},
                                      headers=AUTH)
            self.assertEqual(status, 201, data)
            shown = gw.get_json("/admin/config", headers=AUTH)
            self.assertEqual([b["name"] for b in shown["backends"]], ["r0", "r1"])
            # A reload: r1 (not in the file) goes; the policy needs a restart, so it stays.
            reloaded = dict(config, policy={"name": "least_request"}, retries=1)
            gw.reload(reloaded)
            wait_until(lambda: gw.get_json("/admin/config", headers=AUTH)["retries"] == 1,
                       timeout=3, message="the reload")
            shown = gw.get_json("/admin/config", headers=AUTH)
            self.assertEqual([b["name"] for b in shown["backends"]], ["r0"])
            self.assertEqual(shown["policy"]["name"], "round_robin")
            self.assertIn("policy changed; it takes effect after a restart", gw.log())

    def test_a_reload_that_would_remove_every_backend_is_refused(self):
        # An empty file is what a reload may find while a tool rewrites the config.
        config = base_config([replica_backend(0)], admin={"token": TOKEN})
        with GatewayProcess(config) as gw:
            before = gw.get_json("/admin/config", headers=AUTH)
            gw.reload("")
            wait_until(lambda: "lists no backends" in gw.log(), timeout=3,
                       message="the refused reload in the log")
            self.assertIn("running config stays", gw.log())
            self.assertEqual(gw.get_json("/admin/config", headers=AUTH), before)
            status, headers, _ = gw.post("/v1/chat/completions", chat("Still"))
            self.assertEqual(status, 200)
            self.assertEqual(headers["x-warmroute-backend"], "r0")


if __name__ == "__main__":
    unittest.main()
