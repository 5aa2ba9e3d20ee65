"""Several gateway replicas in front of one fleet (docs/many-gateways.md): two `warmroute serve`
processes with the same config agree on where a prefix lives although only one of them routed
it — in precise mode the engines' KV events are the state they share (skipped when the Qwen 3
tokenizer files are absent: the build unpacks them), in approximate mode their placement
gossip."""
import socket
import unittest
import uuid

from emulator_process import EmulatorProcess
from gateway_process import GatewayProcess, run_serve
from test_gateway import metric_sum
from test_precise_events import (SKIP, TOKEN, Engine, admin_backends, chat, chat_lines,
                                 gateway_config, system_prompt)
from test_precise_keys import wait_for


@unittest.skipIf(SKIP, SKIP)
class ManyGatewaysTest(unittest.TestCase):
    def post(self, gw, body):
        before = len(chat_lines(gw))
        status, h, data = gw.request("POST", "/v1/chat/completions", body)
        self.assertEqual(status, 200, data[:400])
        line = wait_for(lambda: chat_lines(gw)[before:], what="the access-log line")[0]
        self.assertEqual(line["prefix_key"], "precise", line)
        return h["x-warmroute-backend"], line

    def test_a_gateway_routes_to_where_another_gateway_placed_a_prefix(self):
        engines = [Engine().start() for _ in range(3)]
        for e in engines:
            self.addCleanup(e.stop)
        config = gateway_config([e.backend(f"e{i}") for i, e in enumerate(engines)])
        with GatewayProcess(config) as a, GatewayProcess(config) as b:
            # ZMQ's slow joiner: both gateways must have applied events from every engine, and
            # every stream be precise.
            def ready():
                return all(metric_sum(gw.metrics_text(), "warmroute_kv_event_stream_state",
                                      backend=f"e{k}", state="precise") == 1 and
                           metric_sum(gw.metrics_text(), "warmroute_kv_events_total",
                                      backend=f"e{k}", result="applied") > 0
                           for gw in (a, b) for k in range(3))
            for i in range(100):
                if ready():
                    break
                self.post(a if i % 2 else b, chat(system_prompt(f"warm {uuid.uuid4()}"), "hi"))
            self.assertTrue(ready(), b.log()[-3000:])
            for n in range(5):
                system = system_prompt(f"prompt {n} {uuid.uuid4()}")
                placed, _ = self.post(a, chat(system, "Quelle heure est-il à Tōkyō ?"))
                # b never saw this prompt: what it knows comes from the engine's events. The
                # prompt's first block is new to b too, so the block is indexed for b because the
                # engine reports it unsalted (vLLM's map form).
                # The engine's events reach both gateways within milliseconds; wait for them.
                wait_for(lambda: admin_backends(b)[placed]["index_entries"] >=
                         admin_backends(a)[placed]["index_entries"], timeout=5,
                         what="b's index to hold what a placed")
                routed, line = self.post(b, chat(system, "Et à Zürich ?"))
                self.assertEqual(routed, placed, line)
                self.assertGreater(line["cached_tokens"], 1000, line)
                self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"], line)


if __name__ == "__main__":
    unittest.main()


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class GossipTest(unittest.TestCase):
    """Two gateways in approximate mode (no KV events) that tell each other their placements
    (config section `gossip`): what one placed, the other predicts as cached."""

    def post(self, gw, system, user):
        before = len(chat_lines(gw))
        status, h, data = gw.request("POST", "/v1/chat/completions", {
            "model": "tiny", "max_tokens": 4,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]})
        self.assertEqual(status, 200, data[:400])
        line = wait_for(lambda: chat_lines(gw)[before:], what="the access-log line")[0]
        return h["x-warmroute-backend"], line

    def test_a_gateway_predicts_what_another_gateway_placed(self):
        ports = [free_udp_port(), free_udp_port()]
        peers = [f"127.0.0.1:{p}" for p in ports]  # both, as a headless Service lists them
        with EmulatorProcess(["--profile", "tiny", "--no-jitter", "--replicas", "4"],
                             replicas=4) as engine:
            def config(port):
                return {"backends": [{"name": f"e{r.index}", "url": f"http://{r.host}:{r.port}"}
                                     for r in engine.replicas],
                        "policy": {"name": "warmroute"},
                        "health": {"probe_interval_ms": 100},
                        "admin": {"token": TOKEN},
                        "gossip": {"port": port, "host": "127.0.0.1", "peers": peers,
                                   "interval_ms": 10}}
            with GatewayProcess(config(ports[0])) as a, GatewayProcess(config(ports[1])) as b:
                def heard(gw):
                    return metric_sum(gw.metrics_text(), "warmroute_gossip_peers") == 1
                wait_for(lambda: heard(a) and heard(b), timeout=10, what="both peers heard")
                # Each numbers the two alike, so each has its own share of the 4 engines for
                # cold prefixes (two each): new prompts sent to a and to b never meet.
                ranks = {gw: metric_sum(gw.metrics_text(), "warmroute_gossip_rank")
                         for gw in (a, b)}
                self.assertEqual(sorted(ranks.values()), [0, 1])
                cold = {a: set(), b: set()}
                for n in range(6):
                    for gw in (a, b):
                        system = f"New prompt {n} {uuid.uuid4()}. " + "Be brief. " * 300
                        cold[gw].add(self.post(gw, system, "Hello?")[0])
                self.assertLessEqual(len(cold[a]), 2, cold)
                self.assertLessEqual(len(cold[b]), 2, cold)
                self.assertFalse(cold[a] & cold[b], cold)
                for n in range(4):
                    system = f"You are assistant {n} {uuid.uuid4()}. " + "Be brief. " * 300
                    held = {name: s["index_entries"] for name, s in admin_backends(b).items()}
                    placed, first = self.post(a, system, "What time is it?")
                    # New to both: at most the chat template's opening is shared.
                    self.assertLess(first["predicted_cached_tokens"], 64, first)
                    wait_for(lambda: admin_backends(b)[placed]["index_entries"] > held[placed],
                             timeout=5, what="a's placement in b's index")
                    routed, line = self.post(b, system, "And in Zurich?")
                    self.assertEqual(routed, placed, line)
                    # b never routed this prompt: its prediction comes from a's placement.
                    half = line["prompt_tokens"] / 2
                    self.assertGreater(line["predicted_cached_tokens"], half, line)
                    self.assertGreater(line["cached_tokens"], half, line)
                self.assertGreater(metric_sum(a.metrics_text(), "warmroute_gossip_messages_total",
                                              direction="received"), 0)
                # A datagram that is not gossip, from a peer's address, is counted and dropped;
                # one from an address no peer resolves to is not read. (A peer's datagrams that
                # came before b had resolved its peers were not read either: counted before.)
                def dropped(reason):
                    return metric_sum(b.metrics_text(), "warmroute_gossip_dropped_total",
                                      reason=reason)
                before = (dropped("malformed"), dropped("not_a_peer"))
                for source in ("127.0.0.1", "127.0.0.2"):
                    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                        s.bind((source, 0))
                        s.sendto(b"GET / HTTP/1.1\r\n\r\n", ("127.0.0.1", ports[1]))
                wait_for(lambda: dropped("malformed") > before[0] and
                         dropped("not_a_peer") > before[1], timeout=5,
                         what="the stray datagrams counted")
                self.assertEqual((dropped("malformed"), dropped("not_a_peer")),
                                 (before[0] + 1, before[1] + 1))
                status, _, _ = b.request("GET", "/health")
                self.assertEqual(status, 200)
                # A peer that stops is forgotten after 2 s of silence: its load no longer counts.
                a._stop()
                wait_for(lambda: metric_sum(b.metrics_text(), "warmroute_gossip_peers") == 0,
                         timeout=10, what="b to forget the stopped peer")

    def test_a_gossip_port_in_use_or_a_bad_host_is_refused_at_start(self):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
            taken.bind(("127.0.0.1", 0))
            port = taken.getsockname()[1]
            for host, says in (("127.0.0.1", f"gossip: cannot listen on 127.0.0.1:{port}: "),
                               ("gw.local", "host must be an IP address")):
                config = {"backends": [{"url": "http://127.0.0.1:9"}],
                          "gossip": {"port": port, "host": host, "peers": ["127.0.0.1:1"]}}
                code, _, err = run_serve(config, ["--port", "0"])
                self.assertEqual(code, 2, err)
                self.assertIn(says, err)
