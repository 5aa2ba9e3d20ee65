"""Precise mode over data-parallel ranks, live: two `warmroute engine --data-parallel-size 2`
processes (each two engine cores behind one API, as `vllm serve --data-parallel-size 2`: rank r
publishes its KV events on the endpoint's port + r and replays on the replay port + r, its
data_parallel_rank in every batch) and `warmroute serve` in precise mode with `dp_ranks: 2` per
backend.

The gateway keeps one index slice per backend, fed by both ranks' streams: it knows the union of
the ranks' caches. The engine's own balancer (vLLM's: least waiting * 4 + running, not
prefix-aware) picks the rank, unless the request names one with `X-data-parallel-rank` (which the
gateway forwards). So a prediction is exact when the request lands on the rank that holds its
prefix, and an over-estimate when the balancer sends it to the other rank; it is never below what
the engine reports (the union holds every rank's blocks). test_traffic_* measures that error.

Skipped when the Qwen 3 tokenizer files are absent (the build unpacks them)."""
import http.client
import json
import re
import threading
import time
import unittest
import uuid

from emulator_process import free_tcp_port
from gateway_process import GatewayProcess
from test_gateway import metric_sum
from test_precise_events import SKIP, Engine, admin_backends, chat, chat_lines, gateway_config, \
    system_prompt
from test_precise_keys import wait_for

RANKS = 2
RANK_HEADER = "X-data-parallel-rank"
PREFIXES, WAVES = 8, 6  # the traffic: WAVES waves of PREFIXES concurrent chats


class DpEngine(Engine):
    """One `warmroute engine --data-parallel-size N` process (one replica) on fixed ports."""

    def __init__(self, ranks):
        self.ranks = ranks
        super().__init__(["--data-parallel-size", str(ranks)])

    def pick_ports(self):
        # One range holds the HTTP port and every rank's publisher and replay ports.
        base = free_tcp_port(1 + 2 * self.ranks)
        self.http_port = base
        self.pub_port, self.replay_port = base + 1, base + 1 + self.ranks  # rank r: + r

    def chat_on_rank(self, rank, body):
        """A chat sent to the engine itself, pinned to `rank`; returns the response object."""
        conn = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=60)
        try:
            conn.request("POST", "/v1/chat/completions", body=json.dumps(body).encode(),
                         headers={"Content-Type": "application/json", RANK_HEADER: str(rank)})
            resp = conn.getresponse()
            status, data = resp.status, resp.read()
        finally:
            conn.close()
        assert status == 200, data[:400]
        return json.loads(data)

    def backend(self, name):
        b = super().backend(name)
        b["kv_events"]["dp_ranks"] = self.ranks
        return b


def ranks_of(gw, backend):
    """The admin listing's per-rank streams of `backend`: [{"state", "applied"}, ...]."""
    return admin_backends(gw)[backend]["kv_events"]["ranks"]


def cached(response):
    return response["usage"]["prompt_tokens_details"]["cached_tokens"]


class Fleet(unittest.TestCase):
    """Two engines of `ranks` ranks each behind a precise-mode gateway (no tests of its own)."""
    ranks = RANKS

    def setUp(self):
        self.engines = {}
        for name in ("e0", "e1"):
            engine = DpEngine(self.ranks).start()
            self.addCleanup(engine.stop)
            self.engines[name] = engine
        self.gw = GatewayProcess(gateway_config(
            [e.backend(name) for name, e in self.engines.items()]))
        self.gw.__enter__()
        self.addCleanup(self.gw.__exit__, None, None, None)
        self.warm_up()

    def post(self, body, headers=None):
        """Sends a chat through the gateway; returns (backend, its access-log line)."""
        before = len(chat_lines(self.gw))
        status, h, data = self.gw.request("POST", "/v1/chat/completions", body, headers=headers)
        self.assertEqual(status, 200, data[:400])
        line = wait_for(lambda: chat_lines(self.gw)[before:], what="the access-log line")[0]
        self.assertEqual(line["prefix_key"], "precise", line)
        return h["x-warmroute-backend"], line

    def all_ranks(self, predicate):
        return all(len(ranks_of(self.gw, b)) == self.ranks and
                   all(predicate(r) for r in ranks_of(self.gw, b)) for b in self.engines)

    def warm_up(self):
        """ZMQ's slow joiner: requests pinned to each rank in turn until every rank's stream of
        every backend has applied an event; then every stream must be precise."""
        for i in range(80):
            if self.all_ranks(lambda r: r["applied"] > 0):
                break
            self.post(chat(system_prompt(f"dp warm-up {uuid.uuid4()}"), f"bonjour {i}"),
                      headers={RANK_HEADER: str(i % self.ranks)})
            time.sleep(0.05)
        wait_for(lambda: self.all_ranks(lambda r: r["applied"] > 0),
                 what=f"an event applied from every rank\n{self.gw.log()[-3000:]}")
        wait_for(lambda: self.all_ranks(lambda r: r["state"] == "precise"),
                 what=f"every rank's stream precise\n{self.gw.log()[-3000:]}")
        for b in self.engines:
            self.assertEqual(admin_backends(self.gw)[b]["kv_events"]["state"], "precise")

    def traffic(self):
        """Sends the waves; returns their access-log lines after printing the index error."""
        # Waves of concurrent requests, one per prefix (so that within a wave no request can hit
        # another's blocks), no rank header: the engines' balancer spreads them over the ranks.
        prefixes = [system_prompt(f"dp traffic {i} {uuid.uuid4()}") for i in range(PREFIXES)]
        waves = WAVES
        before = len(chat_lines(self.gw))
        for wave in range(waves):
            errors = []

            def send(system, wave=wave):
                try:
                    status, _, data = self.gw.request(
                        "POST", "/v1/chat/completions",
                        dict(chat(system, f"question {wave}"), max_tokens=24))
                    if status != 200:
                        errors.append(data[:200])
                except Exception as e:  # reported below
                    errors.append(repr(e))

            threads = [threading.Thread(target=send, args=(p,)) for p in prefixes]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(errors, [])
            time.sleep(0.5)  # every rank's events of this wave reach the index
        lines = wait_for(lambda: (lambda l: l if len(l) == waves * len(prefixes) else None)(
            chat_lines(self.gw)[before:]), what="every request's access-log line")

        error = sum(abs(l["predicted_cached_tokens"] - l["cached_tokens"]) / l["prompt_tokens"]
                    for l in lines) / len(lines)
        over = sum(1 for l in lines if l["predicted_cached_tokens"] > l["cached_tokens"])
        print(f"\nindex error over {len(lines)} requests ({waves} waves of {len(prefixes)} "
              f"concurrent prefixes, 2 engines x {self.ranks} rank(s)): mean |predicted - cached| / "
              f"prompt tokens = {error:.2%}; over-predicted {over}/{len(lines)}", flush=True)
        return lines


@unittest.skipIf(SKIP, SKIP)
class PreciseDataParallelTest(Fleet):
    def test_each_ranks_events_reach_the_backends_slice(self):
        # The gateway reads both ranks' load and capacity from one /metrics: the KV capacity is
        # the sum of the ranks' vllm:cache_config_info.
        engine_metrics = self.engines["e0"].replica.metrics_text()
        per_rank = [metric_sum(engine_metrics, "vllm:cache_config_info", engine=str(r))
                    for r in range(RANKS)]
        self.assertEqual(per_rank, [1.0] * RANKS)
        wait_for(lambda: admin_backends(self.gw)["e0"]["kv_capacity_tokens"] > 0,
                 what="e0's KV capacity scraped")
        blocks = {int(b) for b in re.findall(r'num_gpu_blocks="(\d+)"', engine_metrics)}
        self.assertEqual(len(blocks), 1, engine_metrics)  # every rank has the same cache
        self.assertEqual(admin_backends(self.gw)["e0"]["kv_capacity_tokens"],
                         RANKS * blocks.pop() * 16)
        # The gateway indexes what it dispatched (speculative inserts) and what the events
        # report. So that only the events can explain a prediction: a prompt goes through the
        # gateway to one rank, then a longer one extending it goes to that rank directly (the
        # gateway never sees it; its new blocks are indexed as children of the first prompt's,
        # from that rank's BlockStored alone), then the longer prompt through the gateway must be
        # predicted exactly as the engine reports it.
        for rank in range(RANKS):
            for attempt in range(2):
                system = system_prompt(f"rank {rank} attempt {attempt} {uuid.uuid4()}")
                backend, line = self.post(chat(system, "premier"),
                                          headers={RANK_HEADER: str(rank)})
                applied = ranks_of(self.gw, backend)[rank]["applied"]
                longer = system + " " + system_prompt(f"annexe {rank} {attempt}")[:1500]
                direct = self.engines[backend].chat_on_rank(rank, chat(longer, "premier"))
                self.assertGreater(cached(direct), 1000)  # the first prompt's blocks, on that rank
                wait_for(lambda: ranks_of(self.gw, backend)[rank]["applied"] > applied,
                         what=f"{backend} rank {rank}'s BlockStored applied")
                again, line = self.post(chat(longer, "second"), headers={RANK_HEADER: str(rank)})
                self.assertEqual(again, backend, line)
                self.assertGreater(line["cached_tokens"], cached(direct) + 200, line)
                self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"],
                                 f"{line}\n{self.gw.log()[-3000:]}")
        for name in self.engines:
            self.assertEqual(admin_backends(self.gw)[name]["kv_events"]["malformed"], 0)

    def test_traffic_over_both_ranks_is_never_under_predicted(self):
        lines = self.traffic()
        # The balancer used both ranks of each engine.
        for name, engine in self.engines.items():
            text = engine.replica.metrics_text()
            for rank in range(self.ranks):
                self.assertGreater(metric_sum(text, "vllm:prompt_tokens_total", engine=str(rank)),
                                   0, f"{name} rank {rank} served nothing")
        # The union of the ranks' caches is never below what the serving rank holds.
        under = [l for l in lines if l["cached_tokens"] > l["predicted_cached_tokens"]]
        self.assertEqual(under, [])
        later = lines[PREFIXES:]  # from the second wave on, every prefix is cached somewhere
        self.assertTrue(all(l["predicted_cached_tokens"] > 1000 for l in later), later)

    def test_a_reset_clears_the_slice_and_every_rank_is_precise_again(self):
        system = system_prompt(f"dp reset {uuid.uuid4()}")
        name, _ = self.post(chat(system, "un"), headers={RANK_HEADER: "1"})
        _, line = self.post(chat(system, "deux"), headers={RANK_HEADER: "1"})
        self.assertGreater(line["cached_tokens"], 1000, line)
        self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"], line)
        engine = self.engines[name]
        clears = metric_sum(self.gw.metrics_text(), "warmroute_kv_event_resets_total",
                            backend=name, reason="clear")
        status, data = engine.replica.request("POST", "/reset_prefix_cache")
        self.assertEqual(status, 200, data)
        # Every rank publishes AllBlocksCleared; the shared slice empties, the other rank's
        # stream replays its history and every stream is precise again.
        wait_for(lambda: metric_sum(self.gw.metrics_text(), "warmroute_kv_event_resets_total",
                                    backend=name, reason="clear") > clears,
                 what="the reset applied")
        wait_for(lambda: all(r["state"] == "precise" for r in ranks_of(self.gw, name)),
                 what="the reset engine's ranks precise again")
        wait_for(lambda: admin_backends(self.gw)[name]["index_entries"] == 0,
                 what="the reset engine's slice empty")
        # The clears settle: each rank's AllBlocksCleared once, or twice when a rank's reset was
        # both applied live and replayed (its stream was cleared by the other rank's in between);
        # never the endless ping-pong of ranks replaying their own reset from seq 0 and each
        # clearing the other's blocks again.
        def clears_now():
            return metric_sum(self.gw.metrics_text(), "warmroute_kv_event_resets_total",
                              backend=name, reason="clear")
        settled = clears_now()
        time.sleep(0.5)
        self.assertEqual(clears_now(), settled)
        self.assertGreaterEqual(settled - clears, RANKS)
        self.assertLessEqual(settled - clears, 2 * RANKS)
        self.assertTrue(all(r["state"] == "precise" for r in ranks_of(self.gw, name)))

        applied = sum(r["applied"] for r in ranks_of(self.gw, name))
        backend, line = self.post(chat(system, "trois"), headers={RANK_HEADER: "1"})
        self.assertEqual(line["predicted_cached_tokens"], 0, line)
        self.assertEqual(line["cached_tokens"], 0, line)
        if backend == name:
            wait_for(lambda: sum(r["applied"] for r in ranks_of(self.gw, name)) > applied,
                     what="the new blocks' events applied")
        _, line = self.post(chat(system, "quatre"), headers={RANK_HEADER: "1"})
        self.assertGreater(line["cached_tokens"], 1000, line)
        self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"], line)


    def test_a_restart_clears_the_slice_and_every_rank_is_precise_again(self):
        system = system_prompt(f"dp restart {uuid.uuid4()}")
        name, _ = self.post(chat(system, "un"), headers={RANK_HEADER: "1"})
        _, line = self.post(chat(system, "deux"), headers={RANK_HEADER: "1"})
        self.assertGreater(line["predicted_cached_tokens"], 1000, line)
        engine = self.engines[name]
        engine.stop()
        wait_for(lambda: admin_backends(self.gw)[name]["state"] != "up", what=f"{name} down")
        engine.start()  # the same ports; every rank's sequence numbers start at 0 again
        wait_for(lambda: admin_backends(self.gw)[name]["state"] == "up", what=f"{name} up")
        wait_for(lambda: all(r["state"] == "precise" for r in ranks_of(self.gw, name)),
                 what=f"{name}'s ranks precise again")
        # The new process holds nothing: nothing is predicted, nothing is cached.
        backend, line = self.post(chat(system, "trois"), headers={RANK_HEADER: "1"})
        self.assertEqual(line["predicted_cached_tokens"], 0, line)
        self.assertEqual(line["cached_tokens"], 0, line)
        # Both ranks of the new process publish and are applied: a prompt on each rank is then
        # predicted exactly.
        for rank in range(RANKS):
            other = system_prompt(f"dp after restart {rank} {uuid.uuid4()}")
            applied = {b: ranks_of(self.gw, b)[rank]["applied"] for b in self.engines}
            first, _ = self.post(chat(other, "un"), headers={RANK_HEADER: str(rank)})
            wait_for(lambda: ranks_of(self.gw, first)[rank]["applied"] > applied[first],
                     what=f"rank {rank}'s events applied")
            _, line = self.post(chat(other, "deux"), headers={RANK_HEADER: str(rank)})
            self.assertGreater(line["cached_tokens"], 1000, line)
            self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"], line)
        self.assertTrue(all(r["state"] == "precise" for r in ranks_of(self.gw, name)))


@unittest.skipIf(SKIP, SKIP)
class OneRankControlTest(Fleet):
    """The same traffic with one engine core per backend: the slice is that core's cache, and
    every prediction is exact. What the data-parallel test measures beyond this is the ranks'."""
    ranks = 1

    def test_traffic_with_one_rank_per_backend_is_predicted_exactly(self):
        lines = self.traffic()
        wrong = [l for l in lines if l["predicted_cached_tokens"] != l["cached_tokens"]]
        self.assertEqual(wrong, [])


if __name__ == "__main__":
    unittest.main()
