"""Runs `warmroute serve` for an integration test: the config (a dict, written as JSON — which
is YAML — or raw YAML text) goes to a file in a temp dir, the gateway starts on loopback port 0,
and the test talks HTTP to it without any environment proxy.

Standard library only; the binary comes from $WARMROUTE_BIN.

Usage:
  with GatewayProcess({"backends": [{"url": r.url}]}) as gw:
      status, headers, body = gw.request("POST", "/v1/chat/completions", {...})
      resp = gw.stream("/v1/chat/completions", {...})   # raw SSE, read until the server closes
      gw.reload({...})                                  # rewrite the file, SIGHUP
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time

from emulator_process import binary, terminate

_LISTENING = re.compile(r"^warmroute serve listening on ([\d.]+):(\d+) ")


def config_text(config):
    return config if isinstance(config, str) else json.dumps(config, indent=1)


def run_serve(config, extra_args=(), timeout=10):
    """Runs `warmroute serve --config FILE` (no --config when `config` is None) expecting it to
    exit; returns (code, stdout, stderr). A process still running after `timeout` is killed and
    reported with code None."""
    with tempfile.TemporaryDirectory() as tmp:
        config_args = []
        if config is not None:
            path = os.path.join(tmp, "router.yaml")
            with open(path, "w") as f:
                f.write(config_text(config))
            config_args = ["--config", path]
        proc = subprocess.Popen([binary(), "serve", *config_args, *extra_args],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=timeout)
            return proc.returncode, out, err
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            return None, out, err


class StreamResponse:
    """A raw HTTP response read until the server closed the connection (or a deadline)."""

    def __init__(self, status, headers, body, closed, elapsed):
        self.status = status
        self.headers = headers    # {lower-case name: value}
        self.body = body          # de-chunked bytes (what arrived, even if cut short)
        self.closed = closed      # True: the server closed the connection; False: deadline
        self.elapsed = elapsed

    def events(self):
        """The `data:` payloads of the SSE body, in order (strings)."""
        out = []
        for block in self.body.decode(errors="replace").split("\n\n"):
            for line in block.split("\n"):
                if line.startswith("data: "):
                    out.append(line[len("data: "):])
        return out

    def json_events(self):
        return [json.loads(e) for e in self.events() if e != "[DONE]"]


def dechunk(data):
    """(body, complete) of a chunked body; tolerant of a body that was cut short."""
    out = b""
    while True:
        line_end = data.find(b"\r\n")
        if line_end < 0:
            return out, False
        try:
            size = int(data[:line_end].split(b";")[0], 16)
        except ValueError:
            return out, False
        if size == 0:
            return out, True
        start = line_end + 2
        out += data[start:start + size]
        if len(data) < start + size + 2:
            return out, False
        data = data[start + size + 2:]


def parse_response(raw):
    """(status, headers, body bytes) of raw HTTP/1.1 response bytes (de-chunked)."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1]) if lines and lines[0].startswith("HTTP/") else 0
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body, _ = dechunk(rest)
    else:
        body = rest
    return status, headers, body


class GatewayProcess:
    """`warmroute serve --config FILE --port 0`, started in __enter__, stopped in __exit__."""

    def __init__(self, config, extra_args=(), start_timeout=20, hup_on_ready=False):
        self.config = config
        self.hup_on_ready = hup_on_ready  # send SIGHUP the moment the ready line is read
        self.extra_args = list(extra_args)
        self.start_timeout = start_timeout
        self.host = None
        self.port = None
        self.output = []  # stdout and stderr lines
        self._tmp = None
        self._proc = None
        self._threads = []
        self._ready = threading.Event()
        self._lock = threading.Lock()

    @property
    def path(self):
        return os.path.join(self._tmp.name, "router.yaml")

    def write_config(self, config):
        with open(self.path + ".tmp", "w") as f:
            f.write(config_text(config))
        os.replace(self.path + ".tmp", self.path)

    def __enter__(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.write_config(self.config)
        cmd = [binary(), "serve", "--config", self.path, "--port", "0", *self.extra_args]
        self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
        for pipe in (self._proc.stdout, self._proc.stderr):
            t = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
            t.start()
            self._threads.append(t)
        deadline = time.monotonic() + self.start_timeout
        while not self._ready.wait(0.02):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._stop()
                raise RuntimeError(f"{' '.join(cmd)} did not start (exit {self._proc.returncode})"
                                   f":\n{self.log()}")
        return self

    def __exit__(self, *exc):
        self._stop()
        return False

    def log(self):
        with self._lock:
            return "".join(self.output[-300:])

    def alive(self):
        return self._proc.poll() is None

    @property
    def pid(self):
        return self._proc.pid

    def _drain(self, pipe):
        for line in pipe:
            with self._lock:
                self.output.append(line)
            m = _LISTENING.match(line.strip())
            if m:
                if self.hup_on_ready:
                    self._proc.send_signal(signal.SIGHUP)
                self.host, self.port = m.group(1), int(m.group(2))
                self._ready.set()

    def _stop(self):
        if self._proc is None:
            return
        if self._proc.poll() is None:
            # SIGTERM drains (listen.shutdown_grace_ms): requests a test left running may go on
            # for a while; after 2 s the second SIGTERM (terminate's) stops at once.
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        terminate(self._proc)
        for t in self._threads:
            t.join(timeout=5)
        self._proc.stdout.close()
        self._proc.stderr.close()
        self._tmp.cleanup()

    def reload(self, config):
        """Rewrites the config file and sends SIGHUP."""
        self.write_config(config)
        self._proc.send_signal(signal.SIGHUP)

    # --- HTTP ---

    def connection(self, timeout=30):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=30, conn=None):
        """(status, {lower-case header: value}, body bytes). `body` may be a dict (sent as JSON)
        or bytes. With `conn` the request goes on that keep-alive connection."""
        own = conn is None
        if own:
            conn = self.connection(timeout)
        try:
            hdrs = dict(headers or {})
            data = body
            if isinstance(body, (dict, list)):
                data = json.dumps(body).encode()
            if data is not None:
                hdrs.setdefault("Content-Type", "application/json")
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            payload = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload
        finally:
            if own:
                conn.close()

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def get_json(self, path, headers=None):
        status, _, data = self.request("GET", path, headers=headers)
        if status != 200:
            raise AssertionError(f"GET {path}: HTTP {status}: {data[:500]!r}")
        return json.loads(data)

    def metrics_text(self):
        status, _, data = self.request("GET", "/metrics")
        if status != 200:
            raise AssertionError(f"GET /metrics: HTTP {status}")
        return data.decode()

    def open_raw(self, timeout=10):
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def send_raw_request(self, sock, path, body):
        data = json.dumps(body).encode()
        sock.sendall((f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                      "Connection: close\r\n\r\n").encode() + data)

    def stream(self, path, body, timeout=10):
        """Sends one request with "Connection: close" on a raw socket and reads until the server
        closes the connection or `timeout` passes (a hang shows as closed=False)."""
        start = time.monotonic()
        sock = self.open_raw()
        raw = b""
        closed = False
        try:
            self.send_raw_request(sock, path, body)
            deadline = start + timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                sock.settimeout(remaining)
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    break
                except OSError:  # reset by the server
                    closed = True
                    break
                if not data:
                    closed = True
                    break
                raw += data
        finally:
            sock.close()
        status, headers, payload = parse_response(raw)
        return StreamResponse(status, headers, payload, closed, time.monotonic() - start)
