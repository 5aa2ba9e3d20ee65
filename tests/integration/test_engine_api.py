"""Integration tests of `warmroute engine`: the vLLM-compatible emulator over real sockets.

Each test class starts the binary ($WARMROUTE_BIN) on ephemeral loopback ports, learns them
from the "replica N listening on HOST:PORT" lines, polls /health until ready, and checks that
SIGTERM ends it with exit code 0. Standard library only.
"""

import http.client
import json
import os
import re
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

BIN = os.environ.get("WARMROUTE_BIN", "warmroute")
LISTENING = re.compile(r"^replica (\d+) listening on ([\d.]+):(\d+)$")

# A long, English-like user message (about 4 characters per token).
LONG_TEXT = " ".join(
    f"Paragraph {i}: the quick brown fox jumps over the lazy dog while the engine caches blocks."
    for i in range(90))


class Engine:
    """A running `warmroute engine` process."""

    def __init__(self, *args, replicas=1):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [BIN, "engine", "--port", "0", "--replicas", str(replicas), *args],
            stdout=subprocess.PIPE, stderr=self.log)
        self.ports = {}
        deadline = time.monotonic() + 20
        buffered = b""
        while len(self.ports) < replicas:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("engine did not start: " + self.stderr())
            ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                continue
            buffered += chunk
            *lines, buffered = buffered.split(b"\n")
            for line in lines:
                m = LISTENING.match(line.decode())
                if m:
                    self.ports[int(m.group(1))] = int(m.group(3))
        for port in self.ports.values():
            wait_healthy(port)

    def port(self, replica=0):
        return self.ports[replica]

    def stderr(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self):
        """SIGTERM; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        return self.proc.returncode


def wait_healthy(port, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        try:
            status, _, _ = request(port, "GET", "/health")
            if status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"port {port} never became healthy")
        time.sleep(0.05)


def request(port, method, path, body=None, headers=None, timeout=30):
    """One request on a fresh connection: (status, headers, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        conn.request(method, path, body=body,
                     headers=headers or {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def post_json(port, path, body):
    status, _, data = request(port, "POST", path, body)
    return status, json.loads(data) if data else None


def stream(port, path, body, timeout=60):
    """Streams a request: (response headers, [(seconds since sending, payload str)])."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        start = time.monotonic()
        conn.request("POST", path, body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise AssertionError(f"status {resp.status}: {resp.read()!r}")
        events = []
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            if not line.startswith(b"data: "):
                raise AssertionError(f"not an SSE data line: {line!r}")
            events.append((time.monotonic() - start, line[6:].decode()))
        return dict(resp.getheaders()), events
    finally:
        conn.close()


def metrics(port):
    status, _, data = request(port, "GET", "/metrics")
    assert status == 200
    values = {}
    for line in data.decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name = re.split(r"[{ ]", line, maxsplit=1)[0]
        values.setdefault(name, float(line.rsplit(" ", 1)[1]))
    return values


def chat(content, **kw):
    body = {"messages": [{"role": "user", "content": content}]}
    body.update(kw)
    return body


def cached_of(usage):
    return usage["prompt_tokens_details"]["cached_tokens"]


def expected_cached(prompt_tokens, block=16):
    # vLLM recomputes at least the last prompt token: whole blocks of the first n - 1 tokens.
    return (prompt_tokens - 1) // block * block


class EngineTestCase(unittest.TestCase):
    ARGS = ("--profile", "tiny")
    REPLICAS = 1

    @classmethod
    def setUpClass(cls):
        cls.engine = Engine(*cls.ARGS, replicas=cls.REPLICAS)

    @classmethod
    def tearDownClass(cls):
        code = cls.engine.stop()
        if code != 0:
            raise AssertionError(f"engine exited with {code}: {cls.engine.stderr()}")

    @property
    def port(self):
        return self.engine.port(0)


class ApiShapeTest(EngineTestCase):
    ARGS = ("--profile", "tiny", "--model", "emu-model")

    def test_models_lists_the_served_model_in_vllm_shape(self):
        status, headers, data = request(self.port, "GET", "/v1/models")
        self.assertEqual(status, 200)
        self.assertIn("application/json", headers["Content-Type"])
        body = json.loads(data)
        self.assertEqual(body["object"], "list")
        self.assertEqual(len(body["data"]), 1)
        model = body["data"][0]
        self.assertEqual(model["id"], "emu-model")
        self.assertEqual(model["object"], "model")
        self.assertEqual(model["owned_by"], "vllm")
        self.assertEqual(model["root"], "emu-model")
        self.assertIsNone(model["parent"])
        self.assertEqual(model["max_model_len"], 32768)
        self.assertIsInstance(model["created"], int)

    def test_health_version_and_metrics(self):
        status, _, data = request(self.port, "GET", "/health")
        self.assertEqual((status, data), (200, b""))
        status, _, data = request(self.port, "GET", "/version")
        self.assertEqual(status, 200)
        self.assertIn("version", json.loads(data))
        status, headers, data = request(self.port, "GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"))
        self.assertIn('vllm:num_requests_running{engine="0",model_name="emu-model"}', data.decode())

    def test_chat_completion_non_streaming(self):
        status, body = post_json(self.port, "/v1/chat/completions",
                                 chat("Say something.", model="emu-model", max_tokens=7))
        self.assertEqual(status, 200, body)
        self.assertRegex(body["id"], r"^chatcmpl-[0-9a-f]{32}$")
        self.assertEqual(body["object"], "chat.completion")
        self.assertEqual(body["model"], "emu-model")
        choice = body["choices"][0]
        self.assertEqual(choice["index"], 0)
        self.assertEqual(choice["message"]["role"], "assistant")
        self.assertEqual(choice["finish_reason"], "length")
        self.assertEqual(len(choice["message"]["content"].split()), 7)
        usage = body["usage"]
        self.assertEqual(usage["completion_tokens"], 7)
        self.assertEqual(usage["total_tokens"], usage["prompt_tokens"] + 7)
        self.assertIn("cached_tokens", usage["prompt_tokens_details"])

    def test_missing_model_means_the_served_model_and_max_tokens_defaults_to_16(self):
        status, body = post_json(self.port, "/v1/chat/completions", chat("Hi there."))
        self.assertEqual(status, 200, body)
        self.assertEqual(body["model"], "emu-model")
        self.assertEqual(body["usage"]["completion_tokens"], 16)

    def test_chat_stream_is_vllm_shaped_with_usage_chunk_before_done(self):
        body = chat("Tell me a story.", max_tokens=5, stream=True, seed=11,
                    stream_options={"include_usage": True})
        headers, events = stream(self.port, "/v1/chat/completions", body)
        self.assertTrue(headers["Content-Type"].startswith("text/event-stream"))
        payloads = [p for _, p in events]
        self.assertEqual(payloads[-1], "[DONE]")
        self.assertEqual(payloads.count("[DONE]"), 1)
        chunks = [json.loads(p) for p in payloads[:-1]]
        ids = {c["id"] for c in chunks}
        self.assertEqual(len(ids), 1)
        self.assertRegex(ids.pop(), r"^chatcmpl-[0-9a-f]{32}$")
        for c in chunks:
            self.assertEqual(c["object"], "chat.completion.chunk")
            self.assertEqual(c["model"], "emu-model")
        first = chunks[0]["choices"][0]
        self.assertEqual(first["delta"], {"role": "assistant", "content": ""})
        content = chunks[1:-1]
        self.assertEqual(len(content), 5)
        for c in content[:-1]:
            self.assertIsNone(c["choices"][0]["finish_reason"])
        self.assertEqual(content[-1]["choices"][0]["finish_reason"], "length")
        usage_chunk = chunks[-1]
        self.assertEqual(usage_chunk["choices"], [])
        self.assertEqual(usage_chunk["usage"]["completion_tokens"], 5)
        streamed = "".join(c["choices"][0]["delta"]["content"] for c in content)
        # The same seed gives the same text without streaming.
        body.update(stream=False)
        del body["stream_options"]
        status, whole = post_json(self.port, "/v1/chat/completions", body)
        self.assertEqual(status, 200)
        self.assertEqual(whole["choices"][0]["message"]["content"], streamed)
        self.assertEqual(whole["usage"]["prompt_tokens"], usage_chunk["usage"]["prompt_tokens"])

    def test_stream_without_include_usage_has_no_usage_chunk(self):
        _, events = stream(self.port, "/v1/chat/completions",
                           chat("Short.", max_tokens=3, stream=True))
        payloads = [p for _, p in events]
        self.assertEqual(payloads[-1], "[DONE]")
        chunks = [json.loads(p) for p in payloads[:-1]]
        self.assertEqual(len(chunks), 4)  # role + 3 tokens
        for c in chunks:
            self.assertNotIn("usage", c)
            self.assertEqual(len(c["choices"]), 1)

    def test_completions_with_a_text_prompt(self):
        status, body = post_json(self.port, "/v1/completions",
                                 {"prompt": "Once upon a time", "max_tokens": 4})
        self.assertEqual(status, 200, body)
        self.assertRegex(body["id"], r"^cmpl-[0-9a-f]{32}$")
        self.assertEqual(body["object"], "text_completion")
        self.assertEqual(body["choices"][0]["finish_reason"], "length")
        self.assertEqual(len(body["choices"][0]["text"].split()), 4)
        self.assertGreater(body["usage"]["prompt_tokens"], 0)

    def test_completions_with_token_ids_count_them_as_the_prompt(self):
        ids = list(range(300, 340))
        status, body = post_json(self.port, "/v1/completions", {"prompt": ids, "max_tokens": 2})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["usage"]["prompt_tokens"], 40)
        status, body = post_json(self.port, "/v1/completions", {"prompt": ids, "max_tokens": 2})
        self.assertEqual(cached_of(body["usage"]), expected_cached(40))

    def test_completions_stream_carries_text(self):
        _, events = stream(self.port, "/v1/completions",
                           {"prompt": "Hello", "max_tokens": 3, "stream": True,
                            "stream_options": {"include_usage": True}})
        payloads = [p for _, p in events]
        self.assertEqual(payloads[-1], "[DONE]")
        chunks = [json.loads(p) for p in payloads[:-1]]
        self.assertEqual(len(chunks), 4)  # 3 tokens + usage
        for c in chunks[:3]:
            self.assertEqual(c["object"], "text_completion")
            self.assertTrue(c["choices"][0]["text"].startswith(" "))
        self.assertEqual(chunks[2]["choices"][0]["finish_reason"], "length")
        self.assertEqual(chunks[3]["choices"], [])
        self.assertEqual(chunks[3]["usage"]["completion_tokens"], 3)

    def test_keep_alive_connection_serves_many_requests(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            for _ in range(5):
                conn.request("POST", "/v1/completions",
                             body=json.dumps({"prompt": "x y z", "max_tokens": 1}),
                             headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                self.assertEqual(resp.status, 200)
                json.loads(resp.read())
        finally:
            conn.close()

    def test_pipelined_requests_are_answered_in_order(self):
        body = json.dumps({"prompt": "a b", "max_tokens": 2}).encode()
        one = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
        health = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(one + one + health)
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        self.assertEqual(data.count(b"HTTP/1.1 200 OK"), 3, data)
        self.assertEqual(data.count(b'"object":"text_completion"'), 2, data)

    def read_until_closed(self, sock):
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk

    def test_a_chunked_request_body_is_reassembled(self):
        # The server's request parser (net/http1/http_server.cc) joins the chunks into one body.
        body = json.dumps({"prompt": "one two three", "max_tokens": 1}).encode()
        half = len(body) // 2
        chunks = b"%x;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, body[:half], len(body) - half,
                                                            body[half:])
        head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(head + chunks)
            data = self.read_until_closed(sock)
        self.assertTrue(data.startswith(b"HTTP/1.1 200"), data[:300])
        usage = json.loads(data.split(b"\r\n\r\n", 1)[1])["usage"]
        self.assertEqual(usage["prompt_tokens"], post_json(
            self.port, "/v1/completions", {"prompt": "one two three", "max_tokens": 1})[1]
            ["usage"]["prompt_tokens"])

    def test_expect_100_continue_is_answered_before_the_body(self):
        body = json.dumps({"prompt": "a b", "max_tokens": 1}).encode()
        head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Expect: 100-Continue\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
                % len(body))
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(head)
            interim = sock.recv(65536)
            self.assertTrue(interim.startswith(b"HTTP/1.1 100 Continue\r\n"), interim)
            sock.sendall(body)
            data = self.read_until_closed(sock)
        self.assertTrue(data.startswith(b"HTTP/1.1 200"), data[:300])

    def test_http_1_0_without_keep_alive_gets_its_connection_closed(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(b"GET /health HTTP/1.0\r\n\r\n")
            data = self.read_until_closed(sock)  # returns only once the server closed
        self.assertIn(b" 200 ", data.split(b"\r\n", 1)[0])
        self.assertIn(b"Connection: close", data)

    def test_malformed_http_is_400(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            data = sock.recv(65536)
        self.assertTrue(data.startswith(b"HTTP/1.1 400"), data)

    def test_many_concurrent_streams_all_complete(self):
        results = [None] * 64
        errors = []

        def run(i):
            try:
                _, events = stream(self.port, "/v1/chat/completions",
                                   chat(f"Request number {i}.", max_tokens=20, stream=True))
                results[i] = [p for _, p in events]
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(results))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        self.assertEqual(errors, [])
        for payloads in results:
            self.assertEqual(payloads[-1], "[DONE]")
            self.assertEqual(len(payloads), 1 + 20 + 1)


class ErrorTest(EngineTestCase):
    ARGS = ("--profile", "tiny", "--max-model-len", "512", "--kv-capacity-tokens", "256",
            "--body-limit-mb", "1")

    def assertError(self, status, data, want_status, want_type, want_param="unset"):
        self.assertEqual(status, want_status, data)
        body = json.loads(data)
        error = body["error"]
        self.assertIsInstance(error["message"], str)
        self.assertTrue(error["message"])
        self.assertEqual(error["type"], want_type)
        self.assertEqual(error["code"], want_status)
        self.assertIn("param", error)
        if want_param != "unset":
            self.assertEqual(error["param"], want_param)

    def post_raw(self, path, body):
        status, _, data = request(self.port, "POST", path, body)
        return status, data

    def test_malformed_json_is_400(self):
        status, data = self.post_raw("/v1/chat/completions", '{"messages": [')
        self.assertError(status, data, 400, "BadRequestError")

    def test_wrong_types_are_400_naming_the_parameter(self):
        status, data = self.post_raw("/v1/chat/completions",
                                     chat("hi", max_tokens="many"))
        self.assertError(status, data, 400, "BadRequestError", "max_tokens")
        status, data = self.post_raw("/v1/chat/completions", {"messages": "hi"})
        self.assertError(status, data, 400, "BadRequestError", "messages")
        status, data = self.post_raw("/v1/completions", {"prompt": "hi", "stream": "yes"})
        self.assertError(status, data, 400, "BadRequestError", "stream")

    def test_missing_messages_or_prompt_is_400(self):
        status, data = self.post_raw("/v1/chat/completions", {"model": "tiny"})
        self.assertError(status, data, 400, "BadRequestError", "messages")
        status, data = self.post_raw("/v1/completions", {"model": "tiny"})
        self.assertError(status, data, 400, "BadRequestError", "prompt")

    def test_n_other_than_one_is_400_naming_n(self):
        # The emulator generates one choice: it must not answer n=2 with one choice.
        status, data = self.post_raw("/v1/chat/completions", chat("hi", n=2))
        self.assertError(status, data, 400, "BadRequestError", "n")
        self.assertIn("n must be 1, got 2", json.loads(data)["error"]["message"])
        status, data = self.post_raw("/v1/completions", {"prompt": "hi", "n": 0})
        self.assertError(status, data, 400, "BadRequestError", "n")
        status, data = self.post_raw("/v1/completions", {"prompt": "hi", "n": 1, "max_tokens": 2})
        self.assertEqual(status, 200, data)
        self.assertEqual(len(json.loads(data)["choices"]), 1)

    def test_unknown_model_is_404(self):
        status, data = self.post_raw("/v1/chat/completions", chat("hi", model="gpt-9"))
        self.assertError(status, data, 404, "NotFoundError", "model")
        self.assertIn("The model `gpt-9` does not exist.", json.loads(data)["error"]["message"])

    def test_body_over_the_limit_is_413(self):
        big = json.dumps(chat("word " * (300 * 1024)))  # 1.5 MB > 1 MiB
        status, data = self.post_raw("/v1/chat/completions", big)
        self.assertError(status, data, 413, "RequestTooLargeError")
        # The server still serves.
        status, _, _ = request(self.port, "GET", "/health")
        self.assertEqual(status, 200)

    def test_prompt_over_max_model_len_is_400(self):
        status, data = self.post_raw("/v1/completions",
                                     {"prompt": list(range(1000, 1600)), "max_tokens": 1})
        self.assertError(status, data, 400, "BadRequestError", "prompt")
        self.assertIn("512", json.loads(data)["error"]["message"])

    def test_prompt_larger_than_the_kv_capacity_is_400(self):
        status, data = self.post_raw("/v1/completions",
                                     {"prompt": list(range(1000, 1300)), "max_tokens": 1})
        self.assertError(status, data, 400, "BadRequestError", "prompt")
        status, data = self.post_raw("/v1/chat/completions", chat("word " * 300, max_tokens=1))
        self.assertError(status, data, 400, "BadRequestError", "messages")

    def test_token_id_outside_the_vocabulary_is_400(self):
        status, data = self.post_raw("/v1/completions", {"prompt": [5, 999999999]})
        self.assertError(status, data, 400, "BadRequestError", "prompt")

    def test_unknown_path_and_wrong_method_are_404(self):
        status, _, data = request(self.port, "GET", "/v1/nothing")
        self.assertError(status, data, 404, "NotFoundError")
        status, _, data = request(self.port, "GET", "/v1/chat/completions")
        self.assertError(status, data, 404, "NotFoundError")

    def test_reset_prefix_cache_when_idle(self):
        status, _, _ = request(self.port, "POST", "/reset_prefix_cache")
        self.assertEqual(status, 200)


class PrefixCacheTest(EngineTestCase):
    # A profile with real GPU timings, no jitter, at twice the real duration so TTFTs are
    # comfortably measurable. 8B on H100: step = 6 ms + 35 us per prefill token (+ tiny terms).
    TIME_SCALE = 2.0
    ARGS = ("--profile", "llama-3.1-8b-h100", "--no-jitter", "--time-scale", str(TIME_SCALE))

    def ttft_and_usage(self, body):
        body = dict(body, stream=True, stream_options={"include_usage": True})
        _, events = stream(self.port, "/v1/chat/completions", body)
        usage = json.loads(events[-2][1])["usage"]
        return events[0][0], usage

    def test_second_identical_request_is_cached_and_faster(self):
        body = chat(LONG_TEXT, max_tokens=4)
        ttft1, usage1 = self.ttft_and_usage(body)
        ttft2, usage2 = self.ttft_and_usage(body)
        n = usage1["prompt_tokens"]
        self.assertGreater(n, 1000)
        self.assertEqual(cached_of(usage1), 0)
        self.assertEqual(cached_of(usage2), expected_cached(n))
        self.assertGreater(cached_of(usage2), 0)
        # The emulated prefill times (seconds of wall time), from the profile's coefficients.
        a, b = 6e-3, 35e-6
        want1 = (a + b * n) * self.TIME_SCALE
        want2 = (a + b * (n - cached_of(usage2))) * self.TIME_SCALE
        self.assertGreaterEqual(ttft1, 0.95 * want1)
        self.assertLess(ttft1, want1 + 0.25)
        self.assertLess(ttft2, ttft1)
        self.assertAlmostEqual(ttft2 / ttft1, want2 / want1, delta=0.15)

    def test_multi_turn_history_hits_the_generated_blocks(self):
        first = [{"role": "user", "content": "Plan a short trip to the mountains, please."}]
        status, r1 = post_json(self.port, "/v1/chat/completions",
                               {"messages": first, "max_tokens": 40})
        self.assertEqual(status, 200, r1)
        answer = r1["choices"][0]["message"]["content"]
        n1 = r1["usage"]["prompt_tokens"]
        second = first + [{"role": "assistant", "content": answer},
                          {"role": "user", "content": "And what should I pack?"}]
        status, r2 = post_json(self.port, "/v1/chat/completions",
                               {"messages": second, "max_tokens": 4})
        self.assertEqual(status, 200, r2)
        # Beyond the first prompt: the blocks of the generated answer were cached too.
        self.assertGreater(cached_of(r2["usage"]), n1)
        self.assertLess(cached_of(r2["usage"]), r2["usage"]["prompt_tokens"])

    def test_cache_salt_isolates_prefixes(self):
        body = chat(LONG_TEXT[:2000] + " salted", max_tokens=1, cache_salt="tenant-a")
        _, r1 = post_json(self.port, "/v1/chat/completions", body)
        _, r2 = post_json(self.port, "/v1/chat/completions", dict(body, cache_salt="tenant-b"))
        _, r3 = post_json(self.port, "/v1/chat/completions", body)
        self.assertEqual(cached_of(r2["usage"]), 0)
        self.assertGreater(cached_of(r3["usage"]), 0)


class DisconnectTest(EngineTestCase):
    ARGS = ("--profile", "tiny")

    def test_client_disconnect_mid_stream_aborts_and_frees_blocks(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("POST", "/v1/chat/completions",
                     body=json.dumps(chat(LONG_TEXT[:500], max_tokens=20000, stream=True)),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        for _ in range(6):  # a few events
            self.assertTrue(resp.readline())
        m = metrics(self.port)
        self.assertEqual(m["vllm:num_requests_running"], 1)
        self.assertGreater(m["vllm:kv_cache_usage_perc"], 0)
        conn.sock.shutdown(2)
        conn.close()
        deadline = time.monotonic() + 5
        while True:
            m = metrics(self.port)
            if m["vllm:num_requests_running"] == 0 and m["vllm:kv_cache_usage_perc"] == 0:
                break
            self.assertLess(time.monotonic(), deadline, m)
            time.sleep(0.02)
        # The engine is free again: reset_prefix_cache needs every block released.
        status, _, _ = request(self.port, "POST", "/reset_prefix_cache")
        self.assertEqual(status, 200)

    def test_client_disconnect_while_waiting_non_streaming_aborts(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("POST", "/v1/completions",
                     body=json.dumps({"prompt": "a b c", "max_tokens": 20000}),
                     headers={"Content-Type": "application/json"})
        deadline = time.monotonic() + 5
        while metrics(self.port)["vllm:num_requests_running"] != 1:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.01)
        conn.sock.shutdown(2)
        conn.close()
        while metrics(self.port)["vllm:num_requests_running"] != 0:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.02)


class ReplicasTest(EngineTestCase):
    ARGS = ("--profile", "tiny", "--threads", "2")
    REPLICAS = 3

    def test_each_replica_has_its_own_cache(self):
        ports = [self.engine.port(i) for i in range(3)]
        self.assertEqual(len(set(ports)), 3)
        body = chat(LONG_TEXT[:1500], max_tokens=1)
        _, r = post_json(ports[0], "/v1/chat/completions", body)
        self.assertEqual(cached_of(r["usage"]), 0)
        _, r = post_json(ports[0], "/v1/chat/completions", body)
        self.assertGreater(cached_of(r["usage"]), 0)  # warm on replica 0
        for port in ports[1:]:
            _, r = post_json(port, "/v1/chat/completions", body)
            self.assertEqual(cached_of(r["usage"]), 0)  # cold on the others
        _, r = post_json(ports[1], "/v1/chat/completions", body)
        self.assertGreater(cached_of(r["usage"]), 0)

    def test_metrics_are_labelled_per_engine(self):
        for i in range(3):
            _, _, data = request(self.engine.port(i), "GET", "/metrics")
            self.assertIn(f'engine="{i}"', data.decode())


class CommandLineTest(unittest.TestCase):
    def test_unknown_profile_exits_2_listing_profiles(self):
        proc = subprocess.run([BIN, "engine", "--port", "0", "--profile", "no-such-gpu"],
                              capture_output=True, text=True, timeout=20)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("no-such-gpu", proc.stderr)
        self.assertIn("llama-3.1-8b-h100", proc.stderr)

    def test_bad_values_exit_2(self):
        for args in (["--replicas", "0"], ["--time-scale", "0"],
                     ["--kv-events-encoding", "xml"]):
            proc = subprocess.run([BIN, "engine", "--port", "0", *args],
                                  capture_output=True, text=True, timeout=20)
            self.assertEqual(proc.returncode, 2, (args, proc.stderr))

    def test_limits_beyond_what_memory_holds_exit_2_naming_the_flag(self):
        # These once aborted (an invariant of the KV tables, bad_alloc) or ran out of memory.
        for args, flag in ((["--kv-capacity-tokens", "17179869184"], "--kv-capacity-tokens"),
                           (["--kv-capacity-tokens", "17179869183"], "--kv-capacity-tokens"),
                           (["--max-num-seqs", "100000000000"], "--max-num-seqs"),
                           (["--max-num-batched-tokens", "-1"], "--max-num-batched-tokens"),
                           (["--max-model-len", "99999999999"], "--max-model-len"),
                           (["--replicas", "17", "--kv-capacity-tokens", "67108864"], "--replicas"),
                           (["--time-scale", "1e300"], "--time-scale"),
                           (["--log-level", "foo"], "--log-level"),
                           (["--seed", "-1"], "--seed")):
            with self.subTest(args=args):
                proc = subprocess.run([BIN, "engine", "--port", "0", *args],
                                      capture_output=True, text=True, timeout=20)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn(flag, proc.stderr)
                self.assertNotIn("listening", proc.stdout)


if __name__ == "__main__":
    unittest.main()
