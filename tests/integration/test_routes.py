"""Every path a vLLM fleet serves, through the gateway (src/gateway/proxy/routes.h): the
Responses API against emulated engines — stored responses followed up through another gateway
replica that never saw them, and a clear 404 once the backend that stored one is gone — and the
pass-through routes (embeddings, rerank, score, pooling, classify, tokenize, detokenize,
Anthropic's /v1/messages, GET /v1/models/{id}) against echoing backends: each reaches a backend
serving its model, with its method, path and body unchanged."""
import base64
import json
import time
import unittest

from echo_backend import EchoBackend
from emulator_process import EmulatorProcess
from gateway_process import GatewayProcess

TOKEN = "routes-test-token"
SYSTEM = "You answer questions about the bicycle shop's return policy. " * 30


def wait_for_models(gw, models):
    """Routing by model needs the backends' model lists (GET /v1/models once they are up)."""
    deadline = time.monotonic() + 10
    while {m["id"] for m in gw.get_json("/v1/models")["data"]} != models:
        if time.monotonic() > deadline:
            raise RuntimeError("the gateway did not learn its backends' models")
        time.sleep(0.05)


def engine_config(engine, **sections):
    config = {
        "listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
        "backends": [{"name": f"r{r.index}", "url": f"http://{r.host}:{r.port}"}
                     for r in engine.replicas],
        "health": {"probe_interval_ms": 100, "probe_timeout_ms": 500},
        "scrape": {"interval_ms": 100},
        "observability": {"access_log": "off"},
        "admin": {"token": TOKEN},
    }
    config.update(sections)
    return config


class ResponsesThroughTwoGatewaysTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.engine = EmulatorProcess(["--profile", "tiny", "--no-jitter", "--replicas", "3"],
                                     replicas=3).__enter__()
        config = engine_config(cls.engine)
        cls.a = GatewayProcess(config).__enter__()
        cls.b = GatewayProcess(config).__enter__()  # another replica of the gateway, same fleet

    @classmethod
    def tearDownClass(cls):
        for p in (cls.b, cls.a, cls.engine):
            p.__exit__(None, None, None)

    def model(self):
        return self.engine.replicas[0].model()

    def create(self, gw, **body):
        status, headers, data = gw.post("/v1/responses", dict({"model": self.model()}, **body))
        self.assertEqual(status, 200, data)
        return headers, json.loads(data)

    def test_a_follow_up_through_another_gateway_reaches_the_backend_that_stored_it(self):
        headers, first = self.create(self.a, instructions=SYSTEM, input="Can I return a helmet?",
                                     max_output_tokens=4)
        self.assertTrue(first["id"].startswith("resp_wr1"), first["id"])
        self.assertEqual(first["object"], "response")
        home = headers["x-warmroute-backend"]
        for _ in range(3):
            # As with vLLM, the instructions are not carried over: sent again, they make the
            # stored conversation this prompt's prefix.
            follow_headers, follow = self.create(
                self.b, previous_response_id=first["id"], instructions=SYSTEM,
                input="And a used one?", max_output_tokens=4)
            self.assertEqual(follow_headers["x-warmroute-backend"], home)
            self.assertEqual(follow_headers["x-warmroute-reason"], "pinned")
            # The stored conversation is the follow-up's prefix: cached on that replica.
            self.assertGreater(follow["usage"]["input_tokens_details"]["cached_tokens"], 0)
            self.assertEqual(follow["previous_response_id"], first["id"])
        fetched = self.b.get_json(f"/v1/responses/{first['id']}")
        self.assertEqual(fetched["id"], first["id"])
        status, _, data = self.a.request("DELETE", f"/v1/responses/{first['id']}")
        self.assertEqual(status, 200, data)
        self.assertTrue(json.loads(data)["deleted"])
        status, _, data = self.b.request("GET", f"/v1/responses/{first['id']}")
        self.assertEqual(status, 404, data)

    def test_a_background_response_is_cancelled_through_the_other_gateway(self):
        headers, started = self.create(self.a, input="Write a long story.", background=True,
                                       store=True, max_output_tokens=20000)
        self.assertIn(started["status"], ("queued", "in_progress"))
        home = headers["x-warmroute-backend"]
        status, cancel_headers, data = self.b.post(f"/v1/responses/{started['id']}/cancel", None)
        self.assertEqual(status, 200, data)
        self.assertEqual(json.loads(data)["status"], "cancelled")
        self.assertEqual(cancel_headers["x-warmroute-backend"], home)
        # input_items goes to the same replica, which answers for itself.
        _, items_headers, _ = self.b.request("GET", f"/v1/responses/{started['id']}/input_items")
        self.assertEqual(items_headers.get("x-warmroute-backend"), home)

    def test_a_streamed_response_passes_every_event_and_feeds_the_closed_loop(self):
        body = {"model": self.model(), "instructions": SYSTEM, "input": "Stream it.",
                "max_output_tokens": 3, "stream": True}
        before = self.a.metrics_text()
        resp = self.a.stream("/v1/responses", body)
        self.assertEqual(resp.status, 200)
        types = [e.get("type") for e in resp.json_events()]
        self.assertEqual(types[0], "response.created")
        self.assertEqual(types[-1], "response.completed")
        self.assertIn("response.output_text.delta", types)
        completed = resp.json_events()[-1]["response"]
        self.assertTrue(completed["id"].startswith("resp_wr1"))
        self.assertIsNotNone(completed["usage"])
        after = self.a.metrics_text()
        self.assertIn('route="responses"', after)
        self.assertNotEqual(before, after)

    def test_a_response_whose_backend_left_the_fleet_is_a_clear_404(self):
        headers, first = self.create(self.a, input="Remember this.", max_output_tokens=2)
        home = headers["x-warmroute-backend"]
        auth = {"Authorization": f"Bearer {TOKEN}"}
        status, _, data = self.b.request("DELETE", f"/admin/backends/{home}", headers=auth)
        self.assertEqual(status, 200, data)
        try:
            status, _, data = self.b.post("/v1/responses", {
                "model": self.model(), "previous_response_id": first["id"], "input": "Well?"})
            self.assertEqual(status, 404, data)
            error = json.loads(data)["error"]
            self.assertIn(first["id"], error["message"])
            self.assertEqual(error["param"], "previous_response_id")
            status, _, data = self.b.request("GET", f"/v1/responses/{first['id']}")
            self.assertEqual(status, 404, data)
        finally:
            replica = self.engine.replicas[int(home[1:])]
            self.b.request("POST", "/admin/backends", {
                "name": home, "url": f"http://{replica.host}:{replica.port}"}, headers=auth)

    def test_embeddings_and_tokenize_go_where_the_least_work_is(self):
        status, headers, data = self.a.post("/v1/embeddings", {
            "model": self.model(), "input": ["one sentence", "another"]})
        self.assertEqual(status, 200, data)
        doc = json.loads(data)
        self.assertEqual(len(doc["data"]), 2)
        self.assertEqual(headers["x-warmroute-reason"], "least_load")
        status, _, data = self.a.post("/tokenize", {"model": self.model(), "prompt": "hello world"})
        self.assertEqual(status, 200, data)
        tokens = json.loads(data)["tokens"]
        status, _, data = self.a.post("/detokenize", {"model": self.model(), "tokens": tokens})
        self.assertEqual(status, 200, data)
        self.assertEqual(json.loads(data)["prompt"], "hello world")
        self.assertIn('route="embeddings"', self.a.metrics_text())


def multipart(fields, boundary="wrBoundary7"):
    """A multipart/form-data body of (name, value bytes, filename or None), in order."""
    out = b""
    for name, value, filename in fields:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += (f"--{boundary}\r\nContent-Disposition: {disposition}\r\n"
                + ("Content-Type: audio/wav\r\n" if filename else "") + "\r\n").encode()
        out += value + b"\r\n"
    return out + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


class AudioUploadTest(unittest.TestCase):
    """Audio uploads are multipart bodies streamed to a backend of their model as they arrive."""

    @classmethod
    def setUpClass(cls):
        cls.whisper = EchoBackend("whisper-1", name="whisper0").__enter__()
        cls.other = EchoBackend("bge-m3", name="other0").__enter__()
        config = {
            "listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
            "backends": [{"name": b.name, "url": b.url, "kind": "openai"}
                         for b in (cls.whisper, cls.other)],
            "health": {"probe_interval_ms": 100, "probe_timeout_ms": 500},
            "observability": {"access_log": "off"},
        }
        cls.gw = GatewayProcess(config).__enter__()
        wait_for_models(cls.gw, {"whisper-1", "bge-m3"})

    @classmethod
    def tearDownClass(cls):
        cls.gw.__exit__(None, None, None)
        cls.other.__exit__(None, None, None)
        cls.whisper.__exit__(None, None, None)

    def upload(self, path, fields):
        body, content_type = multipart(fields)
        status, headers, data = self.gw.request("POST", path, body,
                                                headers={"Content-Type": content_type})
        return status, headers, data, body

    def test_an_upload_reaches_a_backend_of_its_model_unchanged_model_first_or_not(self):
        audio = bytes(range(256)) * 8192  # 2 MiB
        for path in ("/v1/audio/transcriptions", "/v1/audio/translations"):
            for fields in ([("model", b"whisper-1", None), ("file", audio, "a.wav")],
                           [("file", audio[:300_000], "a.wav"), ("model", b"whisper-1", None),
                            ("language", b"en", None)]):
                with self.subTest(path=path, first=fields[0][0]):
                    status, headers, data, sent = self.upload(path, fields)
                    self.assertEqual(status, 200, data[:300])
                    doc = json.loads(data)
                    self.assertEqual(doc["backend"], "whisper0")
                    self.assertEqual(doc["path"], path)
                    self.assertEqual(base64.b64decode(doc["body_b64"]), sent)
                    self.assertEqual(headers["x-warmroute-reason"], "least_load")

    def test_the_body_reaches_the_backend_before_the_client_has_sent_it_all(self):
        # The client sends the head and the first part, waits 1 s, then the rest: the backend
        # sees the first bytes during that wait, so nothing held the body back.
        head_part, content_type = multipart([("model", b"whisper-1", None),
                                             ("file", b"x" * 50_000, "a.wav")])
        first, rest = head_part[:30_000], head_part[30_000:]
        before = len(self.whisper.first_body_byte_at)
        sock = self.gw.open_raw()
        try:
            sock.sendall((f"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: gw\r\n"
                          f"Content-Type: {content_type}\r\nContent-Length: {len(head_part)}\r\n"
                          "Connection: close\r\n\r\n").encode() + first)
            time.sleep(1.0)
            sent_rest_at = time.monotonic()
            sock.sendall(rest)
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
        finally:
            sock.close()
        self.assertIn(b" 200 ", reply.split(b"\r\n", 1)[0])
        self.assertGreater(len(self.whisper.first_body_byte_at), before)
        self.assertLess(self.whisper.first_body_byte_at[before], sent_rest_at)

    def test_bad_uploads_are_400_and_an_unknown_model_404(self):
        status, _, data, _ = self.upload("/v1/audio/transcriptions",
                                         [("file", b"abc", "a.wav")])
        self.assertEqual(status, 400, data)
        self.assertEqual(json.loads(data)["error"]["param"], "model")
        status, _, data = self.gw.request("POST", "/v1/audio/transcriptions", b"{}",
                                          headers={"Content-Type": "application/json"})
        self.assertEqual(status, 400, data)
        status, _, data, _ = self.upload("/v1/audio/transcriptions",
                                         [("model", b"no-such", None), ("file", b"a", "a.wav")])
        self.assertEqual(status, 404, data)
        self.assertIn('route="audio"', self.gw.metrics_text())


class PassThroughRoutesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.chat = EchoBackend("chat-model", name="chat0").__enter__()
        cls.pool0 = EchoBackend("bge-m3", name="pool0").__enter__()
        cls.pool1 = EchoBackend("bge-m3", name="pool1").__enter__()
        config = {
            "listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
            "backends": [{"name": b.name, "url": b.url, "kind": "openai"}
                         for b in (cls.chat, cls.pool0, cls.pool1)],
            "health": {"probe_interval_ms": 100, "probe_timeout_ms": 500},
            "observability": {"access_log": "off"},
        }
        cls.gw = GatewayProcess(config).__enter__()
        wait_for_models(cls.gw, {"chat-model", "bge-m3"})

    @classmethod
    def tearDownClass(cls):
        cls.gw.__exit__(None, None, None)
        for b in (cls.pool1, cls.pool0, cls.chat):
            b.__exit__(None, None, None)

    def echo(self, method, path, body):
        raw = json.dumps(body).encode() if isinstance(body, dict) else body
        status, headers, data = self.gw.request(method, path, raw)
        self.assertEqual(status, 200, data)
        doc = json.loads(data)
        self.assertEqual(doc["method"], method)
        self.assertEqual(doc["path"], path)
        self.assertEqual(base64.b64decode(doc["body_b64"]), raw or b"")
        return doc["backend"], headers

    def test_pooling_and_tokenizer_routes_reach_a_backend_of_their_model_unchanged(self):
        for path in ("/v1/embeddings", "/v1/rerank", "/rerank", "/v1/score", "/score",
                     "/pooling", "/classify", "/tokenize", "/detokenize"):
            with self.subTest(path=path):
                body = b'{"model": "bge-m3",  "input": ["a", "b"], "extra": {"kept": true}}'
                backend, headers = self.echo("POST", path, body)
                self.assertIn(backend, ("pool0", "pool1"))
                self.assertEqual(headers["x-warmroute-reason"], "least_load")
                status, _, data = self.gw.post(path, {"model": "no-such-model", "input": "x"})
                self.assertEqual(status, 404, data)
                status, headers, _ = self.gw.request("GET", path)
                self.assertEqual(status, 405)
                self.assertEqual(headers["allow"], "POST")

    def test_the_least_busy_backend_of_the_model_takes_each_request(self):
        seen = {self.echo("POST", "/v1/embeddings", {"model": "bge-m3", "input": "x"})[0]
                for _ in range(6)}
        self.assertEqual(seen, {"pool0", "pool1"})

    def test_anthropic_messages_are_prefix_routed_and_forwarded_unchanged(self):
        body = {"model": "chat-model", "max_tokens": 8, "system": SYSTEM,
                "messages": [{"role": "user", "content": "Hello"}]}
        backend, headers = self.echo("POST", "/v1/messages", body)
        self.assertEqual(backend, "chat0")
        self.assertNotEqual(headers["x-warmroute-reason"], "least_load")
        status, _, data = self.gw.post("/v1/messages", {"model": "chat-model", "messages": 3})
        self.assertEqual(status, 400, data)

    def test_a_model_is_listed_by_id(self):
        doc = self.gw.get_json("/v1/models/bge-m3")
        self.assertEqual(doc["id"], "bge-m3")
        self.assertEqual(doc["object"], "model")
        status, _, data = self.gw.request("GET", "/v1/models/nope")
        self.assertEqual(status, 404, data)
        self.assertEqual(json.loads(data)["error"]["param"], "model")

    def test_an_unknown_path_is_still_a_404(self):
        status, _, data = self.gw.post("/v1/nothing", {"model": "bge-m3"})
        self.assertEqual(status, 404, data)


if __name__ == "__main__":
    unittest.main()
