"""Integration tests of `warmroute engine`: the vLLM-compatible emulator over real sockets.

Each test class starts the binary ($WARMROUTE_BIN) on ephemeral loopback ports, learns them
from the "replica N listening on HOST:PORT" lines, polls /health until ready, and checks that
SIGTERM ends it with exit code 0. Standard library only.
"""

import base64
import http.client
import json
import os
import re
import select
import signal
import socket
import struct
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


def stream_lines(port, path, body, timeout=60):
    """Streams a request: (response headers, [(seconds since sending, line)]), the answer's
    non-empty lines without their line ends."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        start = time.monotonic()
        conn.request("POST", path, body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise AssertionError(f"status {resp.status}: {resp.read()!r}")
        lines = []
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.rstrip(b"\r\n")
            if line:
                lines.append((time.monotonic() - start, line))
        return dict(resp.getheaders()), lines
    finally:
        conn.close()


def stream(port, path, body, timeout=60):
    """Streams a request: (response headers, [(seconds since sending, payload str)])."""
    headers, lines = stream_lines(port, path, body, timeout)
    events = []
    for seconds, line in lines:
        if not line.startswith(b"data: "):
            raise AssertionError(f"not an SSE data line: {line!r}")
        events.append((seconds, line[6:].decode()))
    return headers, events


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


def stream_events(port, path, body, timeout=60):
    """Streams a request answered with named SSE events: (headers, [(event, data dict)]).

    Fails on a line that is neither `event:` nor `data:`, on data that is not JSON (so a
    `data: [DONE]` fails), and on a data line without an event line before it.
    """
    headers, lines = stream_lines(port, path, body, timeout)
    events, name = [], None
    for _, line in lines:
        if line.startswith(b"event: "):
            name = line[7:].decode()
        elif line.startswith(b"data: "):
            if name is None:
                raise AssertionError(f"data without an event line: {line!r}")
            events.append((name, json.loads(line[6:])))
            name = None
        else:
            raise AssertionError(f"not an SSE event or data line: {line!r}")
    return headers, events


def responses(content, **kw):
    body = {"input": content}
    body.update(kw)
    return body


def input_cached(usage):
    return usage["input_tokens_details"]["cached_tokens"]


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


class DataParallelTest(EngineTestCase):
    """`--data-parallel-size 2`: two engine cores behind one port, as `vllm serve
    --data-parallel-size 2` (docs/engine.md, Data-parallel ranks)."""
    ARGS = ("--profile", "tiny", "--data-parallel-size", "2")

    def on_rank(self, rank, body):
        status, _, data = request(self.port, "POST", "/v1/chat/completions", body,
                                  headers={"Content-Type": "application/json",
                                           "X-data-parallel-rank": str(rank)})
        return status, json.loads(data)

    def test_the_header_pins_the_rank_and_each_rank_has_its_own_cache(self):
        body = chat("data-parallel " + LONG_TEXT[:1500], max_tokens=1)
        self.assertEqual(cached_of(self.on_rank(1, body)[1]["usage"]), 0)
        self.assertGreater(cached_of(self.on_rank(1, body)[1]["usage"]), 0)  # warm on rank 1
        self.assertEqual(cached_of(self.on_rank(0, body)[1]["usage"]), 0)  # cold on rank 0
        self.assertGreater(cached_of(self.on_rank(0, body)[1]["usage"]), 0)

    def test_a_rank_out_of_range_is_400_and_a_non_integer_header_is_ignored(self):
        status, data = self.on_rank(2, chat("hello", max_tokens=1))
        self.assertEqual(status, 400, data)
        self.assertEqual(data["error"]["param"], "data_parallel_rank")
        self.assertEqual(data["error"]["message"], "data_parallel_rank 2 is out of range [0, 2).")
        status, data = self.on_rank("any", chat("hello", max_tokens=1))
        self.assertEqual(status, 200, data)

    def test_metrics_carry_each_rank_under_one_type_line(self):
        body = chat("metrics " + LONG_TEXT[:200], max_tokens=3)
        self.assertEqual(self.on_rank(1, body)[0], 200)
        _, _, data = request(self.port, "GET", "/metrics")
        text = data.decode()
        self.assertEqual(text.count("# TYPE vllm:num_requests_running gauge"), 1)
        generated = {}
        for line in text.splitlines():
            m = re.match(r'vllm:generation_tokens_total\{engine="(\d)",model_name="[^"]*"\} (\S+)',
                         line)
            if m:
                generated[m.group(1)] = float(m.group(2))
        self.assertEqual(set(generated), {"0", "1"})
        self.assertGreaterEqual(generated["1"], 3)

    def test_reset_prefix_cache_resets_every_rank(self):
        body = chat("reset " + LONG_TEXT[:1500], max_tokens=1)
        for rank in (0, 1):
            self.on_rank(rank, body)
            self.assertGreater(cached_of(self.on_rank(rank, body)[1]["usage"]), 0)
        status, _, data = request(self.port, "POST", "/reset_prefix_cache")
        self.assertEqual(status, 200, data)
        for rank in (0, 1):
            self.assertEqual(cached_of(self.on_rank(rank, body)[1]["usage"]), 0)


RESPONSE_EVENTS = [
    "response.created", "response.in_progress", "response.output_item.added",
    "response.content_part.added"]
RESPONSE_END_EVENTS = [
    "response.output_text.done", "response.content_part.done", "response.output_item.done",
    "response.completed"]
INSTRUCTIONS = "You are a travel agent. Answer in full sentences. " * 20


def instructions(tag):
    """Long instructions that begin with `tag`: tests using different tags share no prefix."""
    return f"{tag}. {INSTRUCTIONS}"


class ResponsesApiTest(EngineTestCase):
    ARGS = ("--profile", "tiny", "--model", "emu-model")

    def create(self, body):
        status, data = post_json(self.port, "/v1/responses", body)
        self.assertEqual(status, 200, data)
        return data

    def wait_for(self, predicate, what, timeout=10):
        deadline = time.monotonic() + timeout
        while not predicate():
            self.assertLess(time.monotonic(), deadline, what)
            time.sleep(0.02)

    def test_non_streaming_response_is_vllm_shaped(self):
        r = self.create(responses("Plan a trip.", instructions="Be brief.", max_output_tokens=6,
                                  user="u-1", tools=[{"type": "function", "name": "book"}]))
        self.assertRegex(r["id"], r"^resp_[0-9a-f]{32}$")
        self.assertEqual(r["object"], "response")
        self.assertIsInstance(r["created_at"], int)
        self.assertEqual(r["model"], "emu-model")
        # Exactly max_output_tokens tokens were generated: cut by the limit, as chat's "length".
        self.assertEqual(r["status"], "incomplete")
        self.assertEqual(r["incomplete_details"], {"reason": "max_output_tokens"})
        self.assertEqual(r["instructions"], "Be brief.")
        self.assertEqual(r["max_output_tokens"], 6)
        self.assertIsNone(r["previous_response_id"])
        self.assertEqual(r["tools"], [{"type": "function", "name": "book"}])
        self.assertEqual(r["user"], "u-1")
        self.assertFalse(r["background"])
        self.assertTrue(r["store"])
        self.assertEqual(len(r["output"]), 1)
        item = r["output"][0]
        self.assertEqual(item["type"], "message")
        self.assertRegex(item["id"], r"^msg_[0-9a-f]{32}$")
        self.assertEqual(item["role"], "assistant")
        self.assertEqual(item["status"], "completed")
        self.assertEqual(len(item["content"]), 1)
        self.assertEqual(item["content"][0]["type"], "output_text")
        self.assertEqual(item["content"][0]["annotations"], [])
        self.assertEqual(len(item["content"][0]["text"].split()), 6)
        usage = r["usage"]
        self.assertEqual(usage["output_tokens"], 6)
        self.assertEqual(usage["total_tokens"], usage["input_tokens"] + 6)
        self.assertEqual(usage["output_tokens_details"], {"reasoning_tokens": 0})
        self.assertIn("cached_tokens", usage["input_tokens_details"])
        # Without max_output_tokens: 16 tokens, the emulator's stand-in for the model's own stop.
        r = self.create(responses("Plan a trip."))
        self.assertEqual(r["status"], "completed")
        self.assertIsNone(r["incomplete_details"])
        self.assertEqual(r["usage"]["output_tokens"], 16)
        self.assertEqual(r["max_output_tokens"], 16)
        self.assertIsNone(r["instructions"])
        self.assertEqual(r["tools"], [])

    def test_input_renders_as_the_equivalent_chat(self):
        items = [{"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                 {"type": "function_call", "call_id": "c1", "name": "weather",
                  "arguments": '{"city": "Paris"}'},
                 {"type": "function_call_output", "call_id": "c1", "output": "18 C"},
                 {"type": "reasoning", "id": "rs_1", "summary": []},
                 {"type": "message", "role": "assistant",
                  "content": [{"type": "output_text", "text": "It is 18 C."}]},
                 {"role": "user", "content": "Thanks."}]
        r = self.create(responses(items, instructions="Be brief.", max_output_tokens=1,
                                  store=False))
        messages = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Weather?"},
                    {"role": "assistant",
                     "content": '{"name": "weather", "parameters": {"city": "Paris"}}'},
                    {"role": "tool", "content": "18 C"},
                    {"role": "assistant", "content": "It is 18 C."},
                    {"role": "user", "content": "Thanks."}]
        _, c = post_json(self.port, "/v1/chat/completions",
                         {"messages": messages, "max_tokens": 1})
        self.assertEqual(r["usage"]["input_tokens"], c["usage"]["prompt_tokens"])

    def test_a_repeat_hits_the_prefix_cache(self):
        body = responses("Where to in May?", instructions=instructions("repeat"),
                         max_output_tokens=2, store=False)
        first = self.create(body)["usage"]
        second = self.create(body)["usage"]
        n = first["input_tokens"]
        self.assertGreater(n, 200)
        self.assertEqual(input_cached(first), 0)
        self.assertEqual(input_cached(second), expected_cached(n))

    def test_streaming_events_in_order_with_sequence_numbers(self):
        headers, events = stream_events(
            self.port, "/v1/responses",
            responses("Stream me.", stream=True, max_output_tokens=5, seed=3))
        self.assertTrue(headers["Content-Type"].startswith("text/event-stream"))
        names = [name for name, _ in events]
        self.assertEqual(names, RESPONSE_EVENTS + ["response.output_text.delta"] * 5 +
                         RESPONSE_END_EVENTS)
        for i, (name, data) in enumerate(events):
            self.assertEqual(data["type"], name)
            self.assertEqual(data["sequence_number"], i)
        created = events[0][1]["response"]
        self.assertEqual(created["status"], "in_progress")
        self.assertEqual(created["output"], [])
        self.assertIsNone(created["usage"])
        item_id = events[2][1]["item"]["id"]
        deltas = [data for name, data in events if name == "response.output_text.delta"]
        for d in deltas:
            self.assertEqual(d["item_id"], item_id)
            self.assertEqual((d["output_index"], d["content_index"]), (0, 0))
        text = "".join(d["delta"] for d in deltas)
        self.assertEqual(events[-4][1]["text"], text)
        final = events[-1][1]["response"]
        self.assertEqual(final["id"], created["id"])
        self.assertEqual(final["status"], "incomplete")
        self.assertEqual(final["output"][0]["id"], item_id)
        self.assertEqual(final["output"][0]["content"][0]["text"], text)
        self.assertEqual(final["usage"]["output_tokens"], 5)
        # The same seed gives the same text without streaming; the stored response is the same.
        whole = self.create(responses("Stream me.", max_output_tokens=5, seed=3))
        self.assertEqual(whole["output"][0]["content"][0]["text"], text)
        status, _, data = request(self.port, "GET", f"/v1/responses/{final['id']}")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(data), final)

    def test_streamed_usage_counts_cached_tokens_on_a_repeat(self):
        body = responses("Stream a repeat.", instructions=instructions("stream"), stream=True,
                         max_output_tokens=2, store=False)
        usages = []
        for _ in range(2):
            _, events = stream_events(self.port, "/v1/responses", body)
            usages.append(events[-1][1]["response"]["usage"])
        self.assertEqual(input_cached(usages[0]), 0)
        self.assertEqual(input_cached(usages[1]), expected_cached(usages[1]["input_tokens"]))

    def test_request_id_is_the_response_id(self):
        r = self.create(responses("Hi.", request_id="client-chosen/id 1", max_output_tokens=2))
        self.assertEqual(r["id"], "client-chosen/id 1")
        status, _, data = request(self.port, "GET", "/v1/responses/client-chosen%2Fid%201")
        self.assertEqual(status, 200, data)
        self.assertEqual(json.loads(data)["id"], "client-chosen/id 1")
        _, events = stream_events(self.port, "/v1/responses",
                                  responses("Hi.", request_id="resp_streamed", stream=True,
                                            max_output_tokens=2))
        ids = {data["response"]["id"] for _, data in events if "response" in data}
        self.assertEqual(ids, {"resp_streamed"})

    def test_previous_response_id_continues_the_conversation_from_the_cache(self):
        agent = instructions("follow-up")
        first = self.create(responses("Plan a week in Lisbon.", instructions=agent,
                                      max_output_tokens=40))
        answer = first["output"][0]["content"][0]["text"]
        follow = self.create(responses("And what should I pack?", instructions=agent,
                                       previous_response_id=first["id"], max_output_tokens=3))
        self.assertEqual(follow["previous_response_id"], first["id"])
        n1 = first["usage"]["input_tokens"]
        # The follow-up's prompt is the first prompt, its answer and the new input; its cached
        # prefix reaches past the first prompt into the blocks of the generated answer.
        self.assertGreater(follow["usage"]["input_tokens"], n1 + 40)
        self.assertGreater(input_cached(follow["usage"]), n1)
        # The same conversation through chat has the same prompt.
        messages = [{"role": "system", "content": agent},
                    {"role": "user", "content": "Plan a week in Lisbon."},
                    {"role": "assistant", "content": answer},
                    {"role": "user", "content": "And what should I pack?"}]
        _, c = post_json(self.port, "/v1/chat/completions",
                         {"messages": messages, "max_tokens": 1})
        self.assertEqual(c["usage"]["prompt_tokens"], follow["usage"]["input_tokens"])
        # A third turn chains through the second.
        third = self.create(responses("Thanks!", instructions=agent,
                                      previous_response_id=follow["id"], max_output_tokens=1))
        self.assertGreater(third["usage"]["input_tokens"], follow["usage"]["input_tokens"])
        self.assertGreater(input_cached(third["usage"]), follow["usage"]["input_tokens"] - 16)

    def test_get_and_delete(self):
        r = self.create(responses("Keep me.", max_output_tokens=2))
        status, _, data = request(self.port, "GET", f"/v1/responses/{r['id']}")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(data), r)
        status, _, data = request(self.port, "DELETE", f"/v1/responses/{r['id']}")
        self.assertEqual(status, 200, data)
        self.assertEqual(json.loads(data), {"id": r["id"], "object": "response", "deleted": True})
        for method in ("GET", "DELETE"):
            status, _, data = request(self.port, method, f"/v1/responses/{r['id']}")
            self.assertEqual(status, 404, data)
            error = json.loads(data)["error"]
            self.assertEqual(error["message"], f"Response with id '{r['id']}' not found.")
            self.assertEqual(error["param"], "response_id")
        status, data = post_json(self.port, "/v1/responses",
                                 responses("Again.", previous_response_id=r["id"]))
        self.assertEqual(status, 404, data)
        self.assertEqual(data["error"]["message"], f"Response with id '{r['id']}' not found.")

    def test_unknown_ids_are_404(self):
        for method, path in (("GET", "/v1/responses/resp_nope"),
                             ("DELETE", "/v1/responses/resp_nope"),
                             ("POST", "/v1/responses/resp_nope/cancel")):
            status, _, data = request(self.port, method, path)
            self.assertEqual(status, 404, (method, path, data))
            error = json.loads(data)["error"]
            self.assertEqual(error["type"], "NotFoundError")
            self.assertEqual(error["code"], 404)
            self.assertIn("resp_nope", error["message"])
        status, data = post_json(self.port, "/v1/responses",
                                 responses("Hi.", previous_response_id="resp_nope"))
        self.assertEqual(status, 404, data)
        self.assertEqual(data["error"]["param"], "response_id")
        for method, path in (("PUT", "/v1/responses/x"), ("GET", "/v1/responses"),
                             ("GET", "/v1/responses/x/cancel"), ("GET", "/v1/responses/a/b")):
            status, _, data = request(self.port, method, path)
            self.assertEqual(status, 404, (method, path, data))

    def test_store_false_keeps_nothing(self):
        r = self.create(responses("Forget me.", store=False, max_output_tokens=1))
        self.assertFalse(r["store"])
        status, _, _ = request(self.port, "GET", f"/v1/responses/{r['id']}")
        self.assertEqual(status, 404)

    def test_background_returns_at_once_and_completes(self):
        r = self.create(responses("Work in the background.", background=True))
        self.assertEqual(r["status"], "queued")
        self.assertTrue(r["background"])
        self.assertEqual(r["output"], [])
        self.assertIsNone(r["usage"])
        path = f"/v1/responses/{r['id']}"

        def done():
            got = json.loads(request(self.port, "GET", path)[2])
            return got["status"] not in ("queued", "in_progress")

        self.wait_for(done, "the background response never finished")
        got = json.loads(request(self.port, "GET", path)[2])
        self.assertEqual(got["status"], "completed")
        self.assertEqual(got["usage"]["output_tokens"], 16)
        self.assertEqual(len(got["output"][0]["content"][0]["text"].split()), 16)
        status, _, data = request(self.port, "POST", path + "/cancel")
        self.assertEqual(status, 400, data)
        error = json.loads(data)["error"]
        self.assertEqual(error["message"], "Cannot cancel a synchronous response.")
        self.assertEqual(error["param"], "response_id")

    def test_cancel_aborts_a_background_response(self):
        r = self.create(responses("Write forever.", background=True, max_output_tokens=20000,
                                  request_id="resp_long"))
        self.assertEqual(r["id"], "resp_long")
        self.wait_for(lambda: metrics(self.port)["vllm:num_requests_running"] == 1,
                      "the background request never ran")

        def status_of():
            return json.loads(request(self.port, "GET", "/v1/responses/resp_long")[2])["status"]

        self.wait_for(lambda: status_of() == "in_progress", "the first token never came")
        status, _, data = request(self.port, "POST", "/v1/responses/resp_long/cancel")
        self.assertEqual(status, 200, data)
        self.assertEqual(json.loads(data)["status"], "cancelled")
        self.wait_for(lambda: metrics(self.port)["vllm:num_requests_running"] == 0,
                      "the cancelled request still runs")
        status, _, data = request(self.port, "GET", "/v1/responses/resp_long")
        self.assertEqual(json.loads(data)["status"], "cancelled")
        status, _, data = request(self.port, "POST", "/v1/responses/resp_long/cancel")
        self.assertEqual(status, 400, data)

    def test_deleting_a_background_response_aborts_it(self):
        r = self.create(responses("Write forever.", background=True, max_output_tokens=20000))
        self.wait_for(lambda: metrics(self.port)["vllm:num_requests_running"] == 1,
                      "the background request never ran")
        status, _, _ = request(self.port, "DELETE", f"/v1/responses/{r['id']}")
        self.assertEqual(status, 200)
        self.wait_for(lambda: metrics(self.port)["vllm:num_requests_running"] == 0,
                      "the deleted request still runs")

    def test_bad_bodies_are_400_naming_the_param(self):
        cases = [
            ({"model": "emu-model"}, "input"),
            (responses(7), "input"),
            (responses("x", background=True, store=False), "background"),
            (responses("x", max_output_tokens="many"), "max_output_tokens"),
            (responses("x", max_output_tokens=0), "max_output_tokens"),
            (responses("x", store="yes"), "store"),
            (responses("x", request_id=5), "request_id"),
            (responses("x", previous_response_id=5), "previous_response_id"),
            (responses("x", tools={}), "tools"),
            (responses([{"type": "image_generation_call"}]), "input[0].type"),
            (responses([{"role": "user", "content": [{"type": "input_image"}]}]),
             "input[0].content"),
            (responses("x", background=True, stream=True), "stream"),
        ]
        for body, param in cases:
            with self.subTest(body=body):
                status, data = post_json(self.port, "/v1/responses", body)
                self.assertEqual(status, 400, data)
                self.assertEqual(data["error"]["type"], "BadRequestError")
                self.assertEqual(data["error"]["param"], param)
        status, _, data = request(self.port, "POST", "/v1/responses", '{"input": ')
        self.assertEqual(status, 400, data)
        status, data = post_json(self.port, "/v1/responses", responses("x", model="gpt-9"))
        self.assertEqual(status, 404, data)
        self.assertEqual(data["error"]["param"], "model")

    def test_responses_count_in_the_vllm_metrics(self):
        before = metrics(self.port)
        r = self.create(responses("Count me.", max_output_tokens=3, store=False))
        after = metrics(self.port)
        n = r["usage"]["input_tokens"]
        self.assertEqual(after["vllm:prompt_tokens_total"] - before["vllm:prompt_tokens_total"], n)
        self.assertEqual(after["vllm:generation_tokens_total"] -
                         before["vllm:generation_tokens_total"], 3)
        self.assertEqual(after["vllm:prefix_cache_queries_total"] -
                         before["vllm:prefix_cache_queries_total"], n)
        self.assertEqual(after["vllm:time_to_first_token_seconds_count"] -
                         before["vllm:time_to_first_token_seconds_count"], 1)


class ResponsesStoreLimitTest(EngineTestCase):
    ARGS = ("--profile", "tiny", "--responses-store-max", "2", "--embedding-dims", "8")

    def test_the_oldest_response_is_evicted_past_the_count(self):
        ids = []
        for i in range(3):
            status, r = post_json(self.port, "/v1/responses",
                                  responses(f"Turn {i}.", max_output_tokens=1))
            self.assertEqual(status, 200, r)
            ids.append(r["id"])
        statuses = [request(self.port, "GET", f"/v1/responses/{i}")[0] for i in ids]
        self.assertEqual(statuses, [404, 200, 200])
        status, data = post_json(self.port, "/v1/responses",
                                 responses("Next.", previous_response_id=ids[0]))
        self.assertEqual(status, 404, data)

    def test_embedding_dims_flag(self):
        status, r = post_json(self.port, "/v1/embeddings", {"input": "short"})
        self.assertEqual(status, 200, r)
        self.assertEqual(len(r["data"][0]["embedding"]), 8)
        status, r = post_json(self.port, "/v1/embeddings", {"input": "short", "dimensions": 4})
        self.assertEqual(status, 400, r)
        self.assertEqual(r["error"]["param"], "dimensions")


class EmbeddingsAndTokenizeTest(EngineTestCase):
    ARGS = ("--profile", "tiny", "--model", "emu-model")

    def test_embeddings_float_and_base64(self):
        texts = ["The quick brown fox.", "A slow green turtle."]
        status, f = post_json(self.port, "/v1/embeddings", {"input": texts, "model": "emu-model"})
        self.assertEqual(status, 200, f)
        self.assertEqual(f["object"], "list")
        self.assertEqual(f["model"], "emu-model")
        self.assertEqual([d["index"] for d in f["data"]], [0, 1])
        for d in f["data"]:
            self.assertEqual(d["object"], "embedding")
            self.assertEqual(len(d["embedding"]), 256)
            self.assertAlmostEqual(sum(x * x for x in d["embedding"]), 1.0, places=4)
        self.assertNotEqual(f["data"][0]["embedding"], f["data"][1]["embedding"])
        counts = [post_json(self.port, "/tokenize", {"prompt": t})[1]["count"] for t in texts]
        self.assertEqual(f["usage"]["prompt_tokens"], sum(counts))
        self.assertEqual(f["usage"]["total_tokens"], sum(counts))
        status, b = post_json(self.port, "/v1/embeddings",
                              {"input": texts, "encoding_format": "base64"})
        self.assertEqual(status, 200, b)
        for fd, bd in zip(f["data"], b["data"]):
            decoded = struct.unpack("<256f", base64.b64decode(bd["embedding"]))
            for x, y in zip(decoded, fd["embedding"]):
                self.assertAlmostEqual(x, y, places=6)
        # Deterministic, and token ids embed as the text they tokenize to.
        ids = post_json(self.port, "/tokenize", {"prompt": texts[0]})[1]["tokens"]
        status, t = post_json(self.port, "/v1/embeddings", {"input": ids})
        self.assertEqual(status, 200, t)
        self.assertEqual(t["data"][0]["embedding"], f["data"][0]["embedding"])
        status, t = post_json(self.port, "/v1/embeddings", {"input": [ids, ids[:2]]})
        self.assertEqual(status, 200, t)
        self.assertEqual(len(t["data"]), 2)

    def test_embeddings_take_engine_time_and_count_as_requests(self):
        before = metrics(self.port)
        post_json(self.port, "/v1/embeddings", {"input": ["one", "two", "three"]})
        after = metrics(self.port)
        self.assertEqual(after["vllm:e2e_request_latency_seconds_count"] -
                         before["vllm:e2e_request_latency_seconds_count"], 3)

    def test_embeddings_errors(self):
        for body, param in (({}, "input"), ({"input": []}, "input"),
                            ({"input": "x", "encoding_format": "bytes"}, "encoding_format"),
                            ({"input": [999999]}, "input")):
            with self.subTest(body=body):
                status, data = post_json(self.port, "/v1/embeddings", body)
                self.assertEqual(status, 400, data)
                self.assertEqual(data["error"]["param"], param)
        status, data = post_json(self.port, "/v1/embeddings", {"input": "x", "model": "other"})
        self.assertEqual(status, 404, data)

    def test_tokenize_detokenize_round_trip(self):
        text = "Hello, world! Supercalifragilistic 12345 isn't it?"
        status, t = post_json(self.port, "/tokenize",
                              {"prompt": text, "model": "emu-model", "return_token_strs": True})
        self.assertEqual(status, 200, t)
        self.assertEqual(t["count"], len(t["tokens"]))
        self.assertEqual(t["max_model_len"], 32768)
        self.assertEqual("".join(t["token_strs"]), text)
        status, d = post_json(self.port, "/detokenize", {"tokens": t["tokens"]})
        self.assertEqual(status, 200, d)
        self.assertEqual(d, {"prompt": text})
        # The count is the prompt the completions endpoint counts.
        _, c = post_json(self.port, "/v1/completions", {"prompt": text, "max_tokens": 1})
        self.assertEqual(c["usage"]["prompt_tokens"], t["count"])
        # Generated words detokenize without being tokenized first.
        _, c = post_json(self.port, "/v1/completions",
                         {"prompt": "Go on:", "max_tokens": 4, "seed": 9})
        answer = c["choices"][0]["text"]
        ids = post_json(self.port, "/tokenize", {"prompt": answer})[1]["tokens"]
        self.assertEqual(post_json(self.port, "/detokenize", {"tokens": ids})[1]["prompt"], answer)

    def test_tokenize_messages_counts_the_chat_prompt(self):
        messages = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "What is a token?"}]
        status, t = post_json(self.port, "/tokenize", {"messages": messages})
        self.assertEqual(status, 200, t)
        self.assertIsNone(t["token_strs"])
        _, c = post_json(self.port, "/v1/chat/completions", {"messages": messages, "max_tokens": 1})
        self.assertEqual(t["count"], c["usage"]["prompt_tokens"])
        _, without = post_json(self.port, "/tokenize",
                               {"messages": messages, "add_generation_prompt": False})
        self.assertLess(without["count"], t["count"])
        status, d = post_json(self.port, "/detokenize", {"tokens": t["tokens"]})
        self.assertTrue(d["prompt"].startswith("<|begin_of_text|><|start_header_id|>system"))

    def test_tokenize_errors(self):
        for path, body, param in (("/tokenize", {}, "prompt"),
                                  ("/tokenize", {"prompt": [1, 2]}, "prompt"),
                                  ("/tokenize", {"messages": "hi"}, "messages"),
                                  ("/detokenize", {}, "tokens"),
                                  ("/detokenize", {"tokens": [-1]}, "tokens"),
                                  ("/detokenize", {"tokens": [10 ** 7]}, "tokens")):
            with self.subTest(path=path, body=body):
                status, data = post_json(self.port, path, body)
                self.assertEqual(status, 400, data)
                self.assertEqual(data["error"]["param"], param)
        status, _, _ = request(self.port, "GET", "/tokenize")
        self.assertEqual(status, 404)


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
                           (["--seed", "-1"], "--seed"),
                           (["--responses-store-max", "-1"], "--responses-store-max"),
                           (["--responses-store-mb", "-1"], "--responses-store-mb"),
                           (["--embedding-dims", "0"], "--embedding-dims")):
            with self.subTest(args=args):
                proc = subprocess.run([BIN, "engine", "--port", "0", *args],
                                      capture_output=True, text=True, timeout=20)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn(flag, proc.stderr)
                self.assertNotIn("listening", proc.stdout)


if __name__ == "__main__":
    unittest.main()
