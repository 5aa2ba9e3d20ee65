"""A gateway config with two tenants and the load that exercises it, shared by the tests that
look at what the gateway shows an operator (test_monitoring.py, test_dashboard.py).

`alpha` sends chats whose system prompts its clients share (streaming and not), within its
limits; `metered` sends about three times its 2 requests/s limit, so that 429s appear.

Usage:
  gw = GatewayProcess(two_tenant_config(engine, secret="x", admin={"token": "t"}))
  load = TenantLoad(gw); load.start(); ...; load.stop()
"""
import threading

from test_tenancy import digest

KEYS = {"alpha": "sk-alpha-loaded-fleet", "metered": "sk-metered-loaded-fleet"}


def two_tenant_config(engine, secret, **sections):
    """The config of a gateway over every replica of `engine` (named r0, r1, ...), probing and
    scraping every 200 ms, with the two tenants; `sections` are added or replace."""
    doc = {
        "listen": {"host": "127.0.0.1", "port": 0, "threads": 2},
        "backends": [{"name": f"r{i}", "url": f"http://{r.host}:{r.port}"}
                     for i, r in enumerate(engine.replicas)],
        "health": {"probe_interval_ms": 200},
        "scrape": {"interval_ms": 200},
        "observability": {"access_log": "off"},
        "tenancy": {"salt_secret": secret},
        "tenants": [
            {"name": "alpha", "api_keys_sha256": [digest(KEYS["alpha"])]},
            {"name": "metered", "api_keys_sha256": [digest(KEYS["metered"])],
             "rate_limits": {"requests_per_s": 2}},
        ],
    }
    doc.update(sections)
    return doc


class TenantLoad:
    """Chat requests until stopped: three `alpha` clients (each its own team's system prompt)
    and one `metered` client. `status` counts the answers by HTTP status."""

    def __init__(self, gw):
        self.gw = gw
        self.stop_event = threading.Event()
        self.threads = []
        self.status = {}
        self.lock = threading.Lock()

    def _client(self, who, team, pause):
        system = f"You are the assistant of team {team}. Follow the policy. " * 40
        i = 0
        while not self.stop_event.is_set():
            i += 1
            body = {"model": "tiny", "max_tokens": 4, "stream": i % 2 == 0,
                    "messages": [{"role": "system", "content": system},
                                 {"role": "user", "content": f"question {team}-{i}"}]}
            try:
                status, _, _ = self.gw.request(
                    "POST", "/v1/chat/completions", body,
                    headers={"Authorization": f"Bearer {KEYS[who]}"})
            except OSError:
                status = "error"
            with self.lock:
                self.status[status] = self.status.get(status, 0) + 1
            self.stop_event.wait(pause)

    def start(self):
        clients = [("alpha", 0, 0.05), ("alpha", 1, 0.05), ("alpha", 2, 0.05),
                   ("metered", 9, 0.15)]
        for args in clients:
            t = threading.Thread(target=self._client, args=args, daemon=True)
            t.start()
            self.threads.append(t)

    def stop(self):
        self.stop_event.set()
        for t in self.threads:
            t.join(timeout=15)
