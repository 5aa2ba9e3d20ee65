"""The gateway's keep-alive connections to its backends, seen from the gateway process's own
sockets (/proc/PID/fd and /proc/net/tcp): an engine that closes an idle connection (uvicorn's
keep-alive timeout under vLLM and SGLang) and a backend that leaves the fleet leave no
descriptor behind once the pools' periodic sweep has run (src/gateway/proxy/upstream_pools.h).
"""
import json
import os
import time
import unittest

from echo_backend import EchoBackend
from gateway_process import GatewayProcess

TOKEN = "upstream-connections-token"
CLOSE_WAIT = "08"  # /proc/net/tcp's st
ESTABLISHED = "01"


def tcp_states_to(pid, port):
    """The TCP states (/proc/net/tcp's st) of process `pid`'s sockets whose peer port is `port`."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    states = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if fields[9] in inodes and remote_port == port:
                    states.append(fields[3])
    return states


def wait_for_states(pid, port, predicate, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        states = tcp_states_to(pid, port)
        if predicate(states) or time.monotonic() > deadline:
            return states
        time.sleep(0.1)


class UpstreamConnectionsTest(unittest.TestCase):
    def config(self, *backends):
        return {
            "listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
            "backends": [{"name": b.name, "url": b.url, "kind": "openai"} for b in backends],
            # Probes far apart: the test watches the workers' connections, not the prober's.
            "health": {"probe_interval_ms": 60000, "probe_timeout_ms": 500},
            "observability": {"access_log": "off"},
            "admin": {"token": TOKEN},
        }

    def send(self, gw, n):
        for i in range(n):
            status, _, data = gw.post("/v1/embeddings",
                                      json.dumps({"model": "bge-m3", "input": f"x{i}"}).encode())
            self.assertEqual(status, 200, data)

    def port_of(self, backend):
        return int(backend.url.rsplit(":", 1)[1])

    def test_a_connection_the_engine_closed_while_idle_is_closed_by_the_gateway(self):
        with EchoBackend("bge-m3", name="e0", keep_alive_s=0.5) as engine, \
                GatewayProcess(self.config(engine)) as gw:
            self.send(gw, 4)
            port = self.port_of(engine)
            self.assertIn(ESTABLISHED, tcp_states_to(gw.pid, port))
            # The engine closes its idle side after 0.5 s; the sweep, once a second, closes ours.
            states = wait_for_states(gw.pid, port, lambda s: not s, timeout=5)
            self.assertEqual(states, [], "connections left after the engine closed them "
                             f"(08 is CLOSE-WAIT): {states}")
            self.send(gw, 1)  # and the gateway still serves, on a new connection

    def test_a_removed_backends_idle_connections_are_closed_without_new_traffic(self):
        with EchoBackend("bge-m3", name="e0") as kept, EchoBackend("bge-m3", name="e1") as gone, \
                GatewayProcess(self.config(kept, gone)) as gw:
            self.send(gw, 8)
            port = self.port_of(gone)
            self.assertIn(ESTABLISHED, tcp_states_to(gw.pid, port))
            status, _, data = gw.request("DELETE", "/admin/backends/e1",
                                         headers={"Authorization": f"Bearer {TOKEN}"})
            self.assertEqual(status, 200, data)
            states = wait_for_states(gw.pid, port, lambda s: not s, timeout=5)
            self.assertEqual(states, [], f"connections to the removed backend: {states}")


if __name__ == "__main__":
    unittest.main()
