"""Runs `warmroute engine` for an integration test: start on loopback port 0, wait until every
replica listens, talk HTTP to it, stop it.

Standard library only; the binary comes from $WARMROUTE_BIN.
"""
import http.client
import json
import os
import re
import socket
import subprocess
import threading
import time

_LISTENING = re.compile(r"^replica (\d+) listening on (\S+):(\d+)$")


def binary():
    path = os.environ.get("WARMROUTE_BIN")
    if not path:
        raise RuntimeError("WARMROUTE_BIN must point to the warmroute binary")
    return path


def free_tcp_port(count=1):
    """A loopback port P such that P .. P+count-1 were free a moment ago."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count > 65535:
            continue
        ok = True
        for port in range(base, base + count):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free port range")


def terminate(proc, timeout=10):
    """SIGTERM, then SIGKILL if the process has not exited within `timeout` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Replica:
    def __init__(self, index, host, port):
        self.index = index
        self.host = host
        self.port = port

    def request(self, method, path, body=None, timeout=60):
        """Returns (status, body bytes)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            headers = {}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def get_json(self, path):
        status, data = self.request("GET", path)
        if status != 200:
            raise AssertionError(f"GET {path}: HTTP {status}: {data[:500]!r}")
        return json.loads(data)

    def post_json(self, path, body):
        status, data = self.request("POST", path, body)
        if status != 200:
            raise AssertionError(f"POST {path}: HTTP {status}: {data[:500]!r}")
        return json.loads(data) if data.strip() else None

    def model(self):
        """The first served model's id."""
        return self.get_json("/v1/models")["data"][0]["id"]

    def chat(self, model, content, max_tokens=8, system=None):
        """One non-streaming chat completion; returns the response object."""
        messages = []
        if system is not None:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": content})
        return self.post_json("/v1/chat/completions", {
            "model": model, "messages": messages, "max_tokens": max_tokens,
        })

    def metrics_text(self):
        status, data = self.request("GET", "/metrics")
        if status != 200:
            raise AssertionError(f"GET /metrics: HTTP {status}")
        return data.decode()


class EmulatorProcess:
    """`warmroute engine --port 0 ARGS...`, started in __enter__ and stopped in __exit__."""

    def __init__(self, args, replicas=1, start_timeout=30, port=0):
        self.args = list(args)
        self.port = port  # replica 0's HTTP port (0: ephemeral); a restart on the same one
        self.want = replicas
        self.start_timeout = start_timeout
        self.replicas = []
        self.output = []  # every line the process printed (stdout and stderr)
        self._proc = None
        self._reader = None
        self._ready = threading.Event()
        self._lock = threading.Lock()

    def __enter__(self):
        cmd = [binary(), "engine", "--port", str(self.port)] + self.args
        self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + self.start_timeout
        while not self._ready.wait(0.05):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._stop()
                raise RuntimeError(f"{' '.join(cmd)} did not start (exit {self._proc.returncode}):\n"
                                   + self.log())
        return self

    def __exit__(self, *exc):
        self._stop()
        return False

    def log(self):
        with self._lock:
            return "".join(self.output[-200:])

    def _drain(self):
        for line in self._proc.stdout:
            with self._lock:
                self.output.append(line)
            m = _LISTENING.match(line.strip())
            if m:
                self.replicas.append(Replica(int(m.group(1)), m.group(2), int(m.group(3))))
                if len(self.replicas) >= self.want:
                    self.replicas.sort(key=lambda r: r.index)
                    self._ready.set()

    def _stop(self):
        if self._proc is None:
            return
        terminate(self._proc)
        self._reader.join(timeout=5)  # it ends at EOF, once the process is gone
        if not self._reader.is_alive():
            self._proc.stdout.close()
