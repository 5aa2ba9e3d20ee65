"""DNS discovery (docs/discovery.md) against a real DNS server: dnsmasq (Debian's dnsmasq-base,
installed by scripts/install-deps.sh) in the foreground on a loopback port, its records changed
during the test (it re-reads --addn-hosts on SIGHUP; its srv-host lines are fixed at start).

DNS A records carry no port, so the emulated engines of one name share a port on different
loopback addresses (Linux routes all of 127/8 to lo): 127.0.0.2, 127.0.0.3, ...

Each check fails if the feature breaks: backends appear only from DNS (the config lists none),
requests reach the engines the name lists, a vanished address drains then disappears, and a
failing name (NXDOMAIN, then a dead server) keeps the set, counts failures and logs once.
"""
import getpass
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from emulator_process import EmulatorProcess, terminate
from gateway_process import GatewayProcess
from test_gateway import wait_until
from test_metrics import promtool_check

DNSMASQ = shutil.which("dnsmasq") or "/usr/sbin/dnsmasq"
TOKEN = "dns-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
INTERVAL_MS = 200


def free_port(hosts):
    """A port free for TCP on every host in `hosts` and for UDP on the first a moment ago."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind((hosts[0], 0))
            port = s.getsockname()[1]
        try:
            for host in hosts:
                with socket.socket() as s:
                    s.bind((host, port))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port")


def wait_for(predicate, message, timeout=15):
    return wait_until(predicate, timeout=timeout, interval=0.05, message=message)


class Dnsmasq:
    """dnsmasq answering for *.test from a hosts file (NXDOMAIN for names not in it)."""

    def __init__(self, port, hosts, srv=()):
        self.port = port
        self.hosts = hosts
        self.srv = list(srv)
        self.output = []
        self._tmp = tempfile.TemporaryDirectory()
        self._proc = None
        self._lock = threading.Lock()

    @property
    def hosts_path(self):
        return os.path.join(self._tmp.name, "hosts")

    def set_hosts(self, lines):
        """Rewrites the hosts file and makes dnsmasq read it again."""
        self.hosts = lines
        with open(self.hosts_path + ".tmp", "w") as f:
            f.write("".join(line + "\n" for line in lines))
        os.replace(self.hosts_path + ".tmp", self.hosts_path)
        if self._proc is not None:
            reads = self._count("read " + self.hosts_path)
            self._proc.send_signal(signal.SIGHUP)
            wait_for(lambda: self._count("read " + self.hosts_path) > reads,
                     "dnsmasq to re-read its hosts file")

    def _count(self, text):
        with self._lock:
            return sum(text in line for line in self.output)

    def start(self):
        self.set_hosts(self.hosts)
        conf = os.path.join(self._tmp.name, "dnsmasq.conf")
        with open(conf, "w") as f:
            f.write("local=/test/\n")  # names under .test not in the file: NXDOMAIN
            for line in self.srv:
                f.write(f"srv-host={line}\n")
        self._proc = subprocess.Popen(
            [DNSMASQ, "--no-daemon", f"--port={self.port}", "--listen-address=127.0.0.1",
             "--bind-interfaces", "--no-resolv", "--no-hosts", f"--addn-hosts={self.hosts_path}",
             f"--conf-file={conf}", f"--user={getpass.getuser()}",
             f"--pid-file={os.path.join(self._tmp.name, 'pid')}", "--log-facility=-"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()
        wait_for(lambda: self._count("read " + self.hosts_path) > 0 or self._proc.poll() is not None,
                 "dnsmasq to start")
        if self._proc.poll() is not None:
            raise RuntimeError("dnsmasq did not start:\n" + "".join(self.output))

    def _drain(self):
        for line in self._proc.stdout:
            with self._lock:
                self.output.append(line)

    def stop(self):
        if self._proc is not None:
            terminate(self._proc)
            self._drainer.join(timeout=5)
            self._proc.stdout.close()
            self._proc = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        self._tmp.cleanup()
        return False


def gateway_config(dns, resolver_port, **extra):
    return {
        "listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
        "discovery": dict({"dns": dns, "interval_ms": INTERVAL_MS, "timeout_ms": 500,
                           "resolver": f"127.0.0.1:{resolver_port}"}, **extra),
        "health": {"probe_interval_ms": 100, "probe_timeout_ms": 500},
        "scrape": {"interval_ms": 100},
        "admin": {"token": TOKEN},
        "observability": {"access_log": "off"},
    }


def backends(gw):
    return {b["name"]: b for b in gw.get_json("/admin/backends", headers=AUTH)["backends"]}


def metric(gw, name):
    """The value of the one series `name` on /metrics (None when absent)."""
    for line in gw.metrics_text().splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def served_by(gw, prompts):
    """The backends (x-warmroute-backend) that answered a chat request for each prompt."""
    out = set()
    for prompt in prompts:
        status, headers, body = gw.request(
            "POST", "/v1/chat/completions",
            {"model": "tiny", "max_tokens": 2, "messages": [{"role": "user", "content": prompt}]})
        if status != 200:
            raise AssertionError(f"{status}: {body[:300]}")
        out.add(headers["x-warmroute-backend"])
    return out


def engine(host, port):
    return EmulatorProcess(["--profile", "tiny", "--no-jitter", "--host", host], port=port)


class DnsDiscoveryTest(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(DNSMASQ):
            self.fail("dnsmasq is missing: run scripts/install-deps.sh")

    def test_a_records_add_drain_and_keep_the_set_on_failure(self):
        port = free_port(["127.0.0.2", "127.0.0.3"])
        dns_port = free_port(["127.0.0.1"])
        a, b = f"dns:127.0.0.2:{port}", f"dns:127.0.0.3:{port}"
        prompts = [f"question {i}: tell me about topic {i * 7919}" for i in range(40)]
        with engine("127.0.0.2", port), engine("127.0.0.3", port), \
                Dnsmasq(dns_port, ["127.0.0.2 vllm.test"]) as dns, \
                GatewayProcess(gateway_config(f"vllm.test:{port}", dns_port)) as gw:
            # One address: one backend, from DNS only, serving once probed.
            wait_for(lambda: backends(gw).get(a, {}).get("eligible"), f"{a} to be eligible")
            self.assertEqual(set(backends(gw)), {a})
            self.assertEqual(served_by(gw, prompts[:5]), {a})
            self.assertEqual(metric(gw, "warmroute_discovery_healthy"), 1)
            self.assertEqual(metric(gw, "warmroute_discovery_backends"), 1)
            self.assertGreater(metric(gw, "warmroute_discovery_last_success_timestamp_seconds"),
                               time.time() - 60)
            code, output = promtool_check(gw.metrics_text())
            self.assertEqual(code, 0, output)

            # A second address: added, probed, then routed to.
            dns.set_hosts(["127.0.0.2 vllm.test", "127.0.0.3 vllm.test"])
            wait_for(lambda: backends(gw).get(b, {}).get("eligible"), f"{b} to be eligible",
                     timeout=10 * INTERVAL_MS / 1000 + 5)
            self.assertEqual(served_by(gw, prompts), {a, b})

            # The first address vanishes: drained (no new requests), then removed.
            dns.set_hosts(["127.0.0.3 vllm.test"])
            wait_for(lambda: backends(gw).get(a, {}).get("state") == "draining", f"{a} to drain")
            self.assertEqual(served_by(gw, prompts[:10]), {b})
            wait_for(lambda: a not in backends(gw), f"{a} to be removed")
            self.assertEqual(set(backends(gw)), {b})
            wait_for(lambda: f"discovery: removed backend {a}" in gw.log(), "the removal logged")

            # NXDOMAIN: the last good set stays; the failure is counted and logged once.
            failures = metric(gw, "warmroute_discovery_resolve_failures_total")
            self.assertEqual(failures, 0)
            dns.set_hosts(["127.0.0.9 other.test"])
            wait_for(lambda: metric(gw, "warmroute_discovery_resolve_failures_total") >= 3,
                     "three failed resolutions")
            self.assertEqual(metric(gw, "warmroute_discovery_healthy"), 0)
            self.assertEqual(set(backends(gw)), {b})
            self.assertEqual(served_by(gw, prompts[:5]), {b})
            failing = re.findall(r"discovery: resolving vllm\.test:\d+ failed: (.*?);", gw.log())
            self.assertEqual(len(failing), 1, gw.log())
            self.assertIn("NXDOMAIN", failing[0])

            # Back, then the DNS server dies: the set stays again.
            dns.set_hosts(["127.0.0.3 vllm.test"])
            wait_for(lambda: metric(gw, "warmroute_discovery_healthy") == 1, "resolving again")
            self.assertIn("discovery: vllm.test", gw.log().split("failed:")[-1])
            dns.stop()
            before = metric(gw, "warmroute_discovery_resolve_failures_total")
            wait_for(lambda: metric(gw, "warmroute_discovery_resolve_failures_total") >= before + 2,
                     "failures with the server gone")
            self.assertEqual(metric(gw, "warmroute_discovery_healthy"), 0)
            self.assertEqual(set(backends(gw)), {b})
            self.assertEqual(served_by(gw, prompts[:5]), {b})
            self.assertEqual(len(re.findall(r"discovery: resolving vllm\.test:\d+ failed",
                                            gw.log())), 2, gw.log())

    def test_srv_record_gives_targets_and_ports(self):
        port = free_port(["127.0.0.4"])
        dns_port = free_port(["127.0.0.1"])
        name = f"dns:127.0.0.4:{port}"
        with engine("127.0.0.4", port), \
                Dnsmasq(dns_port, ["127.0.0.4 engines.test"],
                        srv=[f"_http._tcp.vllm.test,engines.test,{port}"]) as dns, \
                GatewayProcess(gateway_config("_http._tcp.vllm.test", dns_port,
                                              pool="gpu", kind="vllm")) as gw:
            wait_for(lambda: backends(gw).get(name, {}).get("eligible"), f"{name} to be eligible")
            self.assertEqual(set(backends(gw)), {name})
            self.assertEqual(backends(gw)[name]["pool"], "gpu")
            self.assertEqual(served_by(gw, ["hello"]), {name})
            # The SRV target's address changes (its A record is in the hosts file): followed.
            dns.set_hosts(["127.0.0.5 engines.test"])
            wait_for(lambda: f"dns:127.0.0.5:{port}" in backends(gw), "the new target address")
            wait_for(lambda: name not in backends(gw), f"{name} to be removed")

    def test_aaaa_and_a_records_of_one_name(self):
        port = free_port(["127.0.0.7"])
        dns_port = free_port(["127.0.0.1"])
        v4, v6 = f"dns:127.0.0.7:{port}", f"dns:[::1]:{port}"
        with engine("127.0.0.7", port), engine("::1", port), \
                Dnsmasq(dns_port, ["127.0.0.7 dual.test", "::1 dual.test"]), \
                GatewayProcess(gateway_config(f"dual.test:{port}", dns_port)) as gw:
            wait_for(lambda: all(backends(gw).get(n, {}).get("eligible") for n in (v4, v6)),
                     "both addresses to be eligible")
            self.assertEqual(backends(gw)[v6]["url"], f"http://[::1]:{port}")
            self.assertEqual(served_by(gw, [f"prompt {i} about {i * 31}" for i in range(30)]),
                             {v4, v6})
            # DNS is the source of truth: a discovered backend deleted by hand comes back.
            status, _, body = gw.request("DELETE", f"/admin/backends/{v4}", headers=AUTH)
            self.assertEqual(status, 200, body)
            self.assertNotIn(v4, backends(gw))
            wait_for(lambda: v4 in backends(gw), f"{v4} to be added again")

    def test_an_answer_too_large_for_udp_is_read_over_tcp(self):
        # 100 A records (16 bytes each) do not fit the 1,232-byte UDP payload the gateway
        # advertises: dnsmasq sets TC and the gateway asks again over TCP. No engine listens:
        # the backends are added (and fail their probes), which is all this checks.
        dns_port = free_port(["127.0.0.1"])
        hosts = [f"127.0.1.{i} many.test" for i in range(1, 101)]
        with Dnsmasq(dns_port, hosts), \
                GatewayProcess(gateway_config("many.test:9", dns_port)) as gw:
            wait_for(lambda: len(backends(gw)) == 100, "100 backends")
            self.assertEqual(metric(gw, "warmroute_discovery_resolve_failures_total"), 0)

    def test_reload_turning_discovery_off_removes_discovered_backends_only(self):
        port = free_port(["127.0.0.6"])
        dns_port = free_port(["127.0.0.1"])
        name = f"dns:127.0.0.6:{port}"
        with engine("127.0.0.6", port) as static, \
                Dnsmasq(dns_port, ["127.0.0.6 vllm.test"]), \
                GatewayProcess(gateway_config(f"vllm.test:{port}", dns_port)) as gw:
            wait_for(lambda: name in backends(gw), f"{name} to be added")
            # A reload that changes nothing else keeps the discovered backend.
            config = gateway_config(f"vllm.test:{port}", dns_port, interval_ms=300)
            gw.reload(config)
            time.sleep(3 * INTERVAL_MS / 1000)
            self.assertIn(name, backends(gw))
            # New settings for discovered backends replace them in place.
            config = gateway_config(f"vllm.test:{port}", dns_port, interval_ms=300, pool="p2")
            gw.reload(config)
            wait_for(lambda: backends(gw).get(name, {}).get("pool") == "p2", "the new pool")
            # The log line may follow the change the admin API shows.
            wait_for(lambda: f"discovery: replaced backend {name}" in gw.log(),
                     "the replacement logged")
            # Discovery removed, a static backend given: only the discovered one goes.
            replica = static.replicas[0]
            del config["discovery"]
            config["backends"] = [{"name": "static", "url": f"http://127.0.0.6:{replica.port}",
                                   "models": ["tiny"]}]
            # Its address is the discovered one's: it is added once discovery let it go.
            gw.reload(config)
            wait_for(lambda: name not in backends(gw), f"{name} to be removed")
            self.assertEqual(set(backends(gw)), {"static"}, gw.log())
            self.assertIsNone(metric(gw, "warmroute_discovery_healthy"))

    def test_reload_giving_a_static_backend_a_discovered_address_hands_it_over(self):
        port = free_port(["127.0.0.8"])
        dns_port = free_port(["127.0.0.1"])
        name = f"dns:127.0.0.8:{port}"
        with engine("127.0.0.8", port), \
                Dnsmasq(dns_port, ["127.0.0.8 vllm.test"]), \
                GatewayProcess(gateway_config(f"vllm.test:{port}", dns_port)) as gw:
            wait_for(lambda: backends(gw).get(name, {}).get("eligible"), f"{name} to be eligible")
            # The same discovery section, and a static backend with the discovered address: the
            # static one serves it, and discovery skips the address from then on.
            config = gateway_config(f"vllm.test:{port}", dns_port)
            config["backends"] = [{"name": "static", "url": f"http://127.0.0.8:{port}",
                                   "models": ["tiny"]}]
            gw.reload(config)
            wait_for(lambda: "static" in backends(gw), "the static backend", timeout=5)
            wait_for(lambda: name not in backends(gw), f"{name} to be removed")
            time.sleep(3 * INTERVAL_MS / 1000)
            self.assertEqual(set(backends(gw)), {"static"}, gw.log())
            wait_for(lambda: backends(gw)["static"]["eligible"], "static to be eligible")
            self.assertEqual(served_by(gw, ["hello"]), {"static"})
            self.assertNotIn("reload: backend static", gw.log())

    def test_reload_to_another_name_logs_its_own_transitions(self):
        port = free_port(["127.0.0.11"])
        dns_port = free_port(["127.0.0.1"])
        name = f"dns:127.0.0.11:{port}"
        with engine("127.0.0.11", port), \
                Dnsmasq(dns_port, ["127.0.0.11 vllm.test", "127.0.0.11 other.test"]), \
                GatewayProcess(gateway_config(f"vllm.test:{port}", dns_port)) as gw:
            wait_for(lambda: name in backends(gw), f"{name} to be added")
            self.assertIn(f"discovery: vllm.test:{port} resolves", gw.log())
            # A new name: its first success is said, as the first name's was.
            gw.reload(gateway_config(f"other.test:{port}", dns_port))
            wait_for(lambda: f"discovery: other.test:{port} resolves" in gw.log(),
                     "the new name's first success to be logged", timeout=5)
            self.assertIn(name, backends(gw))
            # Another that fails from the start: said once, though the last name was failing too.
            gw.reload(gateway_config(f"missing.test:{port}", dns_port))
            wait_for(lambda: "discovery: resolving missing.test" in gw.log(),
                     "the failing name to be logged", timeout=5)
            gw.reload(gateway_config(f"gone.test:{port}", dns_port))
            wait_for(lambda: "discovery: resolving gone.test" in gw.log(),
                     "the next failing name to be logged", timeout=5)
            self.assertEqual(metric(gw, "warmroute_discovery_healthy"), 0)
            self.assertIn(name, backends(gw))

    def test_a_backend_drained_by_hand_stays_drained_when_its_address_flaps(self):
        port = free_port(["127.0.0.12"])
        dns_port = free_port(["127.0.0.1"])
        name = f"dns:127.0.0.12:{port}"
        # A long interval: the address must come back before the resolution that would remove it.
        with engine("127.0.0.12", port), \
                Dnsmasq(dns_port, ["127.0.0.12 vllm.test"]) as dns, \
                GatewayProcess(gateway_config(f"vllm.test:{port}", dns_port,
                                              interval_ms=2000)) as gw:
            wait_for(lambda: backends(gw).get(name, {}).get("eligible"), f"{name} to be eligible")
            status, _, body = gw.request("POST", f"/admin/backends/{name}/drain", headers=AUTH)
            self.assertEqual(status, 200, body)
            # The address vanishes for one resolution (another takes its place), then returns.
            dns.set_hosts(["127.0.0.13 vllm.test"])
            resolutions = metric(gw, "warmroute_discovery_resolutions_total")
            wait_for(lambda: metric(gw, "warmroute_discovery_resolutions_total") > resolutions,
                     "a resolution without the address")
            self.assertIn(f"discovery: backend {name} is no longer listed", gw.log())
            dns.set_hosts(["127.0.0.12 vllm.test"])
            resolutions = metric(gw, "warmroute_discovery_resolutions_total")
            wait_for(lambda: metric(gw, "warmroute_discovery_resolutions_total") > resolutions,
                     "a resolution with the address again")
            self.assertIn(name, backends(gw), gw.log())
            self.assertEqual(backends(gw)[name]["state"], "draining", gw.log())


if __name__ == "__main__":
    unittest.main()
