"""Several gateway replicas in front of one fleet (docs/many-gateways.md): two `warmroute serve`
processes with the same config, each subscribed to every engine's KV events, agree on where a
prefix lives although only one of them routed it — the engines' events are the state they share.

Skipped when the Qwen 3 tokenizer files are absent (the build unpacks them)."""
import unittest
import uuid

from gateway_process import GatewayProcess
from test_gateway import metric_sum
from test_precise_events import (SKIP, Engine, admin_backends, chat, chat_lines, gateway_config,
                                 system_prompt)
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
