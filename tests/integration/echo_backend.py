"""An engine stand-in for the gateway's pass-through routes: a real HTTP/1.1 server on loopback
(standard library) that serves one model and answers every POST with what it received — method,
path, the body's bytes (a chunked body decoded) and the headers — as JSON, so a test can see
which backend a request reached and that it arrived unchanged. GET /health is 200 and
GET /v1/models lists its model (a gateway config gives it kind "openai": nothing to scrape).

Usage:
  with EchoBackend("bge-m3") as b:
      ... config backends: [{"url": b.url, "kind": "openai", "name": "e0"}] ...
      b.requests          # [(method, path, body bytes, headers dict)]
"""
import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler answering JSON, with an engine's GET /health and /v1/models."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _reply(self, status, doc):
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def reply_health_or_models(self, model):
        """Answers GET /health (200) and /v1/models (`model`); False for another path."""
        if self.path == "/health":
            self._reply(200, {})
        elif self.path == "/v1/models":
            self._reply(200, {"object": "list", "data": [{"id": model, "object": "model"}]})
        else:
            return False
        return True


class LoopbackServer:
    """A threading HTTP server on 127.0.0.1 (an ephemeral port) serving `handler` in a daemon
    thread between __enter__ and __exit__; `url` is its address."""

    def _listen(self, handler):
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        return False


class EchoBackend(LoopbackServer):
    """keep_alive_s: close a keep-alive connection idle that long (uvicorn's timeout_keep_alive,
    5 s under vLLM and SGLang); None keeps it open."""

    def __init__(self, model, name="echo", keep_alive_s=None):
        self.model = model
        self.name = name
        self.requests = []
        self.first_body_byte_at = []  # time.monotonic() of each request body's first byte
        self._lock = threading.Lock()
        backend = self

        class Handler(JsonHandler):
            timeout = keep_alive_s  # the socket's timeout: a wait for the next request ends it

            def do_GET(self):
                if not self.reply_health_or_models(backend.model):
                    self._echo()

            def do_POST(self):
                self._echo()

            def do_DELETE(self):
                self._echo()

            def _read_body(self):
                """The body, Content-Length or chunked; notes when its first byte came."""
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    body = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            self.rfile.readline()  # the CRLF after the last chunk
                            return body
                        chunk = self.rfile.read(size)
                        if not body:
                            backend.first_body_byte_at.append(time.monotonic())
                        body += chunk
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                if not length:
                    return b""
                first = self.rfile.read(1)
                backend.first_body_byte_at.append(time.monotonic())
                return first + self.rfile.read(length - 1)

            def _echo(self):
                body = self._read_body()
                headers = {k.lower(): v for k, v in self.headers.items()}
                with backend._lock:
                    backend.requests.append((self.command, self.path, body, headers))
                self._reply(200, {"backend": backend.name, "method": self.command,
                                  "path": self.path,
                                  "body_b64": base64.b64encode(body).decode(),
                                  "usage": {"prompt_tokens": 7, "total_tokens": 7}})

        self._listen(Handler)
