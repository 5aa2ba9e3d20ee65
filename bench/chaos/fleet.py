"""The soak's fleet and the faults it suffers.

Fleet: `replicas` `warmroute engine` processes (profile tiny, one replica each, so each can be
killed alone), backends r0..r{n-1}; r3's traffic passes through `SlowProxy`, which delays every
piece of the engine's answer while the "slow" fault runs. One `redis-server`. Two
`warmroute serve` gateways (A and B), each with its own config file listing the replicas, sharing
the Redis rate limits. A `GarbageBackend` (tests/integration/fault_backend.py) that answers every
POST with a failure joins through the admin API while the "garbage" fault runs.

Faults (each `Fault.begin()` starts it, `Fault.end()` undoes it; the schedule runs them one at a
time, so at most one backend misbehaves at any moment):
  kill     SIGKILL r1's engine; restart it on the same port at the end
  stop     SIGSTOP r2's engine (a hang: connections are accepted by the kernel, nothing answers);
           SIGCONT at the end
  slow     SlowProxy delays each piece of r3's answers by `slow_delay_s`
  garbage  admin POST /admin/backends adds the GarbageBackend (f0) to both gateways; DELETE at
           the end. It answers 500s, resets, an invalid status, HTML errors, bodies cut short,
           and streams cut mid-way
  redis    SIGKILL redis-server; restart it on the same port at the end
  hup      both config files lose r5, SIGHUP; at the end they list it again, SIGHUP
  admin    admin DELETE r4 on both gateways; POST it back at the end
"""
import asyncio
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

from emulator_process import EmulatorProcess, free_tcp_port  # noqa: E402
from fault_backend import FaultBackend, _send  # noqa: E402
from gateway_process import GatewayProcess  # noqa: E402
from test_tenancy import RedisServer, digest  # noqa: E402

MODEL = "tiny"
ADMIN_TOKEN = "chaos-admin-token"
SALT_SECRET = "chaos-soak-salt-secret"
KEYS = {"alpha": "sk-chaos-alpha", "beta": "sk-chaos-beta", "metered": "sk-chaos-metered"}
METERED_RPS = 4

# The gateways' timeouts: short, so that a hang shows within a run; the clients' deadlines and
# the retry rule (verdict.py) are derived from them.
TIMEOUTS = {"connect_ms": 1000, "first_byte_ms": 4000, "idle_stream_ms": 3000}
RETRIES = 2
THREADS = 2   # each gateway's listen.threads
# Two bounded structures of the gateway fill for longer than a 10-minute soak, and would read as
# growth in its RSS check: the dashboard's ring of one sample per second (15 minutes), and the
# prefix index, sized by each backend's KV capacity (65,536 tokens per tiny engine: at the soak's
# rate, about 13 minutes to fill). The soak turns the dashboard off and gives the gateway a
# capacity of 4,096 tokens per backend, so the index fills within the warm-up; docs/chaos.md
# has the runs with both at their defaults.
DASHBOARD = os.environ.get("CHAOS_DASHBOARD", "off") == "on"
INDEX_CAPACITY_TOKENS = int(os.environ.get("CHAOS_INDEX_CAPACITY_TOKENS", "4096"))
PREWARM = os.environ.get("CHAOS_PREWARM", "on") == "on"  # off: prewarm.enabled false
QUEUE_TIMEOUT_MS = 5000

FAULT_KINDS = ("kill", "garbage", "stop", "redis", "slow", "hup", "admin")
KILL, STOP, SLOW, ADMIN, HUP = 1, 2, 3, 4, 5   # the replica each fault hits
# Faults that make one backend fail requests: the retry rule counts them as unhealthy backends.
BACKEND_FAULTS = {"kill": "r1", "stop": "r2", "garbage": "f0"}


class SlowProxy:
    """A TCP proxy on loopback in front of one engine; while `delay_s` > 0 every piece the
    engine sends is held that long before it is passed on. Runs on the soak's event loop."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.delay_s = 0.0
        self.port = None
        self._server = None
        self._writers = set()

    async def start(self):
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self):
        """Stops listening and closes every proxied connection."""
        self._server.close()
        for w in list(self._writers):
            w.close()
        await asyncio.sleep(0.1)  # the pipes see their connections closed and return

    async def _serve(self, client_r, client_w):
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_w.close()
            return
        self._writers.update((client_w, up_w))

        async def pipe(reader, writer, slow):
            try:
                while True:
                    data = await reader.read(65536)
                    if not data:
                        break
                    if slow and self.delay_s > 0:
                        await asyncio.sleep(self.delay_s)
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                writer.close()

        await asyncio.gather(pipe(client_r, up_w, False), pipe(up_r, client_w, True))
        self._writers.difference_update((client_w, up_w))


class GarbageBackend(FaultBackend):
    """A FaultBackend whose every POST fails in a randomly chosen way (seeded)."""

    WHOLE = ("error500", "reset", "status_999", "error500_html", "cl_short", "chunked_trunc")

    def __init__(self, seed):
        super().__init__("error500", model=MODEL, events=3, name="f0")
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()

    METRICS = (b'vllm:num_requests_running{engine="0",model_name="tiny"} 0\n'
               b'vllm:num_requests_waiting{engine="0",model_name="tiny"} 0\n'
               b'vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} 0\n'
               b'vllm:cache_config_info{block_size="16",num_gpu_blocks="4096"} 1\n')

    def _answer_get(self, conn, path):
        """As FaultBackend, but /metrics shows an idle vLLM engine: the router sends it its
        share of requests, as it would a real engine that fails."""
        if path == "/metrics":
            _send(conn, 200, "text/plain; version=0.0.4", self.METRICS)
        else:
            super()._answer_get(conn, path)

    def _answer_post(self, conn, mode, body):
        stream = b'"stream": true' in body or b'"stream":true' in body
        with self._rng_lock:
            mode = self._rng.choice(self.WHOLE + (("stream_die",) * 3 if stream else ()))
        return super()._answer_post(conn, mode, body)


class Fleet:
    def __init__(self, replicas, seed):
        self.n = replicas
        self.seed = seed
        self.engines = []
        self.ports = []
        self.proxy = None
        self.redis = None
        self.gateways = []
        self.garbage = None
        self.actions = []   # (monotonic time, text): what the fault schedule did

    def log(self, text):
        self.actions.append((time.monotonic(), text))
        print(f"[chaos {time.strftime('%H:%M:%S')}] {text}", flush=True)

    # --- start and stop ---

    def _engine(self, i, port=0):
        proc = EmulatorProcess(["--profile", "tiny", "--seed", str(self.seed + i)], port=port)
        proc.__enter__()
        return proc

    async def start(self):
        for i in range(self.n):
            e = await asyncio.to_thread(self._engine, i)
            self.engines.append(e)
            self.ports.append(e.replicas[0].port)
        self.proxy = SlowProxy(self.ports[SLOW])
        await self.proxy.start()
        self.redis = RedisServer(free_tcp_port())
        await asyncio.to_thread(self.redis.start)
        self.garbage = GarbageBackend(self.seed)
        for _ in range(2):
            gw = GatewayProcess(self.config())
            await asyncio.to_thread(gw.__enter__)
            self.gateways.append(gw)

    def stop(self):
        for gw in self.gateways:
            gw.__exit__(None, None, None)
        for e in self.engines:
            if e._proc.poll() is None:
                try:
                    os.kill(e._proc.pid, signal.SIGCONT)
                except OSError:
                    pass
            e.__exit__(None, None, None)
        if self.garbage is not None:
            self.garbage.stop()
        if self.redis is not None:
            self.redis.stop()

    def backend_url(self, i):
        port = self.proxy.port if i == SLOW else self.ports[i]
        return f"http://127.0.0.1:{port}"

    def backend(self, i):
        """Backend r`i`'s entry in the config and the admin API."""
        entry = {"name": f"r{i}", "url": self.backend_url(i)}
        if INDEX_CAPACITY_TOKENS:
            entry["kv_capacity_tokens"] = INDEX_CAPACITY_TOKENS
        return entry

    def config(self, without=()):
        tenants = [
            {"name": "alpha", "api_keys_sha256": [digest(KEYS["alpha"])]},
            {"name": "beta", "api_keys_sha256": [digest(KEYS["beta"])]},
            {"name": "metered", "api_keys_sha256": [digest(KEYS["metered"])],
             "rate_limits": {"requests_per_s": METERED_RPS}},
        ]
        return {
            "listen": {"host": "127.0.0.1", "port": 0, "threads": THREADS},
            "backends": [self.backend(i) for i in range(self.n) if f"r{i}" not in without],
            "timeouts": TIMEOUTS,
            "retries": RETRIES,
            "health": {"probe_interval_ms": 500, "probe_timeout_ms": 500,
                       "eject_after_failures": 3, "backoff_initial_ms": 1000,
                       "backoff_max_ms": 5000},
            "scrape": {"interval_ms": 500},
            "admission": {"queue_timeout_ms": QUEUE_TIMEOUT_MS},
            "admin": {"token": ADMIN_TOKEN},
            "prewarm": {"enabled": PREWARM},
            "observability": {"access_log": "off", "dashboard": DASHBOARD},
            "tenancy": {"salt_secret": SALT_SECRET},
            "rate_limits": {"redis": f"redis://127.0.0.1:{self.redis.port}",
                            "redis_timeout_ms": 50},
            "tenants": tenants,
        }

    # --- the admin API ---

    def admin(self, gw, method, path, body=None):
        conn = http.client.HTTPConnection(gw.host, gw.port, timeout=10)
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
            if data is not None:
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
            return resp.status, payload
        finally:
            conn.close()

    def _admin_all(self, method, path, body=None, want=(200, 201, 204)):
        for name, gw in zip("AB", self.gateways):
            status, payload = self.admin(gw, method, path, body)
            if status not in want:
                self.log(f"gateway {name}: {method} {path} answered {status}: {payload[:200]!r}")

    # --- faults (blocking: run them in a thread) ---

    def begin(self, kind):
        if kind == "kill":
            self.engines[KILL]._proc.kill()
        elif kind == "stop":
            os.kill(self.engines[STOP]._proc.pid, signal.SIGSTOP)
        elif kind == "slow":
            self.proxy.delay_s = 0.3
        elif kind == "garbage":
            f0 = {"name": "f0", "url": self.garbage.url}
            if INDEX_CAPACITY_TOKENS:
                f0["kv_capacity_tokens"] = INDEX_CAPACITY_TOKENS
            self._admin_all("POST", "/admin/backends", f0)
        elif kind == "redis":
            self.redis.proc.kill()
            self.redis.proc.wait()
        elif kind == "hup":
            for gw in self.gateways:
                gw.reload(self.config(without=(f"r{HUP}",)))
        elif kind == "admin":
            self._admin_all("DELETE", f"/admin/backends/r{ADMIN}")
        else:
            raise ValueError(kind)
        self.log(f"begin {kind}")

    def end(self, kind):
        if kind == "kill":
            old = self.engines[KILL]
            old._proc.wait()
            old.__exit__(None, None, None)
            deadline = time.monotonic() + 15
            while True:
                try:
                    self.engines[KILL] = self._engine(KILL, port=self.ports[KILL])
                    break
                except RuntimeError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        elif kind == "stop":
            os.kill(self.engines[STOP]._proc.pid, signal.SIGCONT)
        elif kind == "slow":
            self.proxy.delay_s = 0.0
        elif kind == "garbage":
            self._admin_all("DELETE", "/admin/backends/f0")
        elif kind == "redis":
            self.redis.start()   # same port: the gateways reconnect after their back-off
        elif kind == "hup":
            for gw in self.gateways:
                gw.reload(self.config())
        elif kind == "admin":
            self._admin_all("POST", "/admin/backends", self.backend(ADMIN))
        self.log(f"end {kind}")

    # --- observation ---

    def gateway_sample(self, i):
        """(anonymous RSS kB, open fds) of gateway i, or None when it has exited. RssAnon, not
        VmRSS: VmRSS also counts the binary's file-backed pages, which the kernel drops and
        reads back as the page cache comes and goes (a 10-minute run saw VmRSS fall by 7 MB in
        both gateways at once), while a leak grows the anonymous part."""
        proc = self.gateways[i]._proc
        if proc.poll() is not None:
            return None
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                rss = next(int(line.split()[1]) for line in f if line.startswith("RssAnon:"))
            fds = len(os.listdir(f"/proc/{proc.pid}/fd"))
        except (OSError, StopIteration):
            return None
        return rss, fds

    def sockets(self, i):
        """Gateway i's TCP sockets by state and peer ({"ESTAB r3": 2, "LISTEN": 2, ...}), from
        `ss`; {} when ss is missing or the gateway has exited."""
        proc = self.gateways[i]._proc
        names = {str(self.ports[k]): f"r{k}" for k in range(self.n)}
        names[str(self.proxy.port)] = f"r{SLOW}(proxy)"
        names[str(self.redis.port)] = "redis"
        names[str(self.garbage.port)] = "f0"
        try:
            out = subprocess.run(["ss", "-tanpH"], capture_output=True, text=True,
                                 timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            return {}
        counts = {}
        for line in out.splitlines():
            if f"pid={proc.pid}," not in line:
                continue
            cols = line.split()
            state, peer = cols[0], cols[4].rsplit(":", 1)[-1]
            key = state if state == "LISTEN" else f"{state} {names.get(peer, 'client')}"
            counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items()))

    def metrics(self, i):
        gw = self.gateways[i]
        conn = http.client.HTTPConnection(gw.host, gw.port, timeout=10)
        try:
            conn.request("GET", "/metrics")
            return conn.getresponse().read().decode()
        finally:
            conn.close()
