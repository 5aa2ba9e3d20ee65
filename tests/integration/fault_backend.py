"""A misbehaving OpenAI-style backend for gateway tests: a real HTTP/1.1 server on loopback
(standard library, one thread per connection) whose POSTs fail in a chosen way while its GETs
(/health, /v1/models, /metrics) stay healthy, so the gateway's probes keep it eligible.

Modes (of POST /v1/chat/completions and /v1/completions):
  ok           200, a small chat completion (JSON, or SSE with a usage chunk when "stream": true)
  stream_finite  200 text/event-stream, `events` chunks `interval` s apart, then usage and [DONE]
  error500     500 with an OpenAI-style error body (keep-alive)
  reset        reads the request, then resets the connection (no response byte)
  hang         reads the request, then never answers; records when the client closes
  stream_die   200 text/event-stream, `events` chunks, then resets the connection
  stream_hang  200 text/event-stream, `events` chunks, then silence; records the client's close
  stream_slow  200 text/event-stream, one chunk every `interval` s until the client closes;
               records when it closed
  error500_stream  500 text/event-stream, one event, then silence; records the client's close
  error500_stall   500 JSON with a Content-Length, part of its body, then silence; records the
               client's close
  any name in RAW_RESPONSES  sends those exact bytes, then closes the connection (malformed or
               unusual answers: an invalid status, a body cut short, an error that is no OpenAI
               error, ...)

close_listener() stops listening, so later connects are refused (nothing listens on the port).

Usage:
  with FaultBackend("error500") as b:
      ... config backends: [{"url": b.url}] ...
      b.posts            # POSTs received
      b.probes           # GET /health received
      b.models_data = [...]  # what GET /v1/models lists from now on
      b.health_status = 503  # GET /health fails from now on
      b.closed_at        # time.monotonic() of each client close seen by hang/stream_* modes
"""
import json
import select
import socket
import struct
import threading
import time


class FaultBackend:
    def __init__(self, mode="ok", model="tiny", events=2, interval=0.05, name="fault",
                 models_data=None):
        self.mode = mode
        self.model = model
        # The "data" of GET /v1/models; None: [{"id": model, ...}].
        self.models_data = models_data
        self.health_status = 200  # of GET /health; set it to fail the gateway's probes
        self.events = events
        self.interval = interval
        self.name = name
        self.posts = 0
        self.probes = 0       # GET /health answered
        self.closed_at = []   # monotonic times a client close was observed (hang/stream modes)
        self.first_event_at = []  # monotonic times the first SSE event was sent
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._conns = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def set_mode(self, mode):
        with self._lock:
            self.mode = mode

    def close_listener(self):
        """Nothing listens on the port any more: connects are refused. Open connections stay."""
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()

    def stop(self):
        self._stop.set()
        self.close_listener()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.close()
            except OSError:
                pass

    # --- server side ---

    def _accept(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        try:
            while not self._stop.is_set():
                request, buf = _read_request(conn, buf)
                if request is None:
                    return
                method, path, headers, body = request
                if method == "GET":
                    self._answer_get(conn, path)
                    continue
                with self._lock:
                    self.posts += 1
                    mode = self.mode
                if not self._answer_post(conn, mode, body):
                    return
        except OSError:
            return
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _answer_get(self, conn, path):
        if path == "/health":
            with self._lock:
                self.probes += 1
            _send(conn, self.health_status, "application/json", b'{"status":"ok"}')
        elif path == "/v1/models":
            data = self.models_data
            if data is None:
                data = [{"id": self.model, "object": "model", "created": 0, "owned_by": self.name}]
            body = json.dumps({"object": "list", "data": data})
            _send(conn, 200, "application/json", body.encode())
        elif path == "/metrics":
            _send(conn, 200, "text/plain; version=0.0.4", b"")
        else:
            _send(conn, 404, "application/json", b'{"error":{"message":"no route"}}')

    def _answer_post(self, conn, mode, body):
        """Returns False when the connection is finished with."""
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            req = {}
        stream = bool(req.get("stream"))
        if mode == "ok" or mode == "stream_finite":
            if stream or mode == "stream_finite":
                conn.sendall(_stream_head())
                for i in range(self.events):
                    conn.sendall(_chunk(self._event(i)))
                    if mode == "stream_finite":
                        time.sleep(self.interval)
                conn.sendall(_chunk(self._usage_event()) + _chunk(b"data: [DONE]\n\n") +
                             b"0\r\n\r\n")
            else:
                _send(conn, 200, "application/json", json.dumps(self._completion()).encode())
            return True
        if mode == "error500":
            _send(conn, 500, "application/json", json.dumps({"error": {
                "message": f"injected failure on {self.name}", "type": "InternalServerError",
                "param": None, "code": 500}}).encode())
            return True
        if mode == "reset":
            _reset(conn)
            return False
        if mode in RAW_RESPONSES:
            conn.sendall(RAW_RESPONSES[mode])
            time.sleep(0.05)  # the bytes reach the gateway before the close
            return False
        if mode == "hang":
            self._wait_for_close(conn, deadline=None)
            return False
        if mode == "error500_stall":
            body = b'{"error": {"message": "injected failure", "type": "InternalServerError"}}'
            conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:20])
            self._wait_for_close(conn, deadline=None)
            return False
        if mode == "error500_stream":
            conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/event-stream\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n" + _chunk(b"data: x\n\n"))
            self._wait_for_close(conn, deadline=None)
            return False
        if mode in ("stream_die", "stream_hang", "stream_slow"):
            conn.sendall(_stream_head())
            for i in range(self.events):
                if i == 0:
                    with self._lock:
                        self.first_event_at.append(time.monotonic())
                conn.sendall(_chunk(self._event(i)))
                if mode == "stream_slow":
                    time.sleep(self.interval)
            if mode == "stream_die":
                time.sleep(0.05)  # the events reach the gateway before the reset
                _reset(conn)
            elif mode == "stream_hang":
                self._wait_for_close(conn, deadline=None)
            else:
                i = self.events
                while not self._stop.is_set():
                    try:
                        conn.sendall(_chunk(self._event(i)))
                    except OSError:
                        self._closed()
                        return False
                    i += 1
                    if self._wait_for_close(conn, deadline=time.monotonic() + self.interval):
                        return False
            return False
        raise ValueError(f"unknown mode {mode}")

    def _wait_for_close(self, conn, deadline):
        """Blocks until the client closes (True) or `deadline` passes (False)."""
        while not self._stop.is_set():
            timeout = 0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic()))
            readable, _, _ = select.select([conn], [], [], timeout)
            if readable:
                try:
                    data = conn.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    self._closed()
                    return True
            elif deadline is not None and time.monotonic() >= deadline:
                return False
        return True

    def _closed(self):
        with self._lock:
            self.closed_at.append(time.monotonic())

    def _event(self, i):
        return ("data: " + json.dumps({
            "id": "chatcmpl-fault", "object": "chat.completion.chunk", "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "delta": {"content": f" tok{i}"}, "finish_reason": None}],
        }) + "\n\n").encode()

    def _usage_event(self):
        return ("data: " + json.dumps({
            "id": "chatcmpl-fault", "object": "chat.completion.chunk", "created": 0,
            "model": self.model, "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": self.events,
                      "total_tokens": 5 + self.events,
                      "prompt_tokens_details": {"cached_tokens": 0}},
        }) + "\n\n").encode()

    def _completion(self):
        return {
            "id": "chatcmpl-fault", "object": "chat.completion", "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"from {self.name}"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7,
                      "prompt_tokens_details": {"cached_tokens": 0}},
        }


def _read_request(conn, buf):
    """((method, path, headers, body), rest) or (None, b"") at EOF."""
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None, b""
        buf += data
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    while len(buf) < length:
        data = conn.recv(65536)
        if not data:
            return None, b""
        buf += data
    return (method, path.split("?")[0], headers, buf[:length]), buf[length:]


def _send(conn, status, content_type, body):
    reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}.get(status, "X")
    conn.sendall((f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n").encode() + body)


def _stream_head():
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")


def _chunk(data):
    return b"%x\r\n" % len(data) + data + b"\r\n"


def _reset(conn):
    """Closes with an RST (SO_LINGER 0) instead of a FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


# Modes that answer with fixed bytes and then close the connection.
RAW_RESPONSES = {
    "status_999": b"HTTP/1.1 999 Weird\r\nContent-Length: 2\r\n\r\nhi",
    "status_600": b"HTTP/1.1 600 Weird\r\nContent-Length: 2\r\n\r\nhi",
    "switch_101": (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: Upgrade\r\n"
                   b"\r\ngarbage"),
    # A non-streaming body that breaks off: shorter than its Content-Length, or chunked without
    # its last chunk.
    "cl_short": (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
                 b'\r\n{"id":"chatcmpl-cut","object":"chat.completion","choices":['),
    "chunked_trunc": (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n" + _chunk(b'{"id":"chatcmpl-cut",')),
    # Errors whose bodies are no OpenAI error.
    "error500_html": (b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/html\r\n"
                      b"Content-Length: 39\r\n\r\n<html><body><h1>oops</h1></body></html>"),
    "error500_huge": (b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
                      b"Content-Length: 3000000\r\n\r\n" + b"x" * 3_000_000),
    "error400_text": (b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                      b"Content-Length: 7\r\n\r\nbad bad"),
    # A whole SSE event, then a chunk-size line that is no hex number, in one write.
    "stream_bad_chunk": (_stream_head() + _chunk(b'data: {"choices":[{"index":0,"delta":'
                                                 b'{"content":"a"}}]}\n\n') +
                         b"ZZZ\r\nhello\r\n0\r\n\r\n"),
}
