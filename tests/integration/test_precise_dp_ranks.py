"""Precise mode over data-parallel ranks, live: two `warmroute engine --data-parallel-size 2`
processes (each two engine cores behind one API, as `vllm serve --data-parallel-size 2`: rank r
publishes its KV events on the endpoint's port + r and replays on the replay port + r, its
data_parallel_rank in every batch) and `warmroute serve` in precise mode with `dp_ranks: 2` per
backend.

The gateway routes each rank as a target of its own ("e0/rank1": its own index slice fed by that
rank's stream, its own load), and names the rank upstream with `X-data-parallel-rank` (the
engine then skips its own balancer), so every prediction is exact, as with one engine core per
backend (OneRankControlTest). SharedSliceControlTest keeps `route_ranks: false`: the backend is one
target whose slice is the union of the ranks' caches and the engine's balancer (vLLM's: least
waiting * 4 + running, not prefix-aware) picks the rank, so a request it sends to the rank that
lacks its prefix is over-predicted. test_traffic_* prints the index error of each.

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
from test_metrics import promtool_check
from test_precise_events import SKIP, Engine, admin_backends, chat, chat_lines, gateway_config, \
    system_prompt
from test_precise_keys import wait_for

RANKS = 2
RANK_HEADER = "X-data-parallel-rank"
PREFIXES, WAVES = 8, 6  # the traffic: WAVES waves of PREFIXES concurrent chats


class DpEngine(Engine):
    """One `warmroute engine --data-parallel-size N` process (one replica) on fixed ports."""

    def __init__(self, ranks, route_ranks=True):
        self.ranks = ranks
        self.route_ranks = route_ranks
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
        if not self.route_ranks:
            b["kv_events"]["route_ranks"] = False
        return b


def ranks_of(gw, backend):
    """The admin listing's per-rank streams of `backend`: [{"state", "applied"}, ...]."""
    return admin_backends(gw)[backend]["kv_events"]["ranks"]


def target_of(name):
    """(backend, rank) of a routing target's name: "e0/rank1" -> ("e0", 1); "e0" -> ("e0", None)."""
    backend, _, rank = name.partition("/rank")
    return backend, (int(rank) if rank else None)


def cached(response):
    return response["usage"]["prompt_tokens_details"]["cached_tokens"]


class Fleet(unittest.TestCase):
    """Two engines of `ranks` ranks each behind a precise-mode gateway (no tests of its own)."""
    ranks = RANKS
    route_ranks = True

    def setUp(self):
        self.engines = {}
        for name in ("e0", "e1"):
            engine = DpEngine(self.ranks, self.route_ranks).start()
            self.addCleanup(engine.stop)
            self.engines[name] = engine
        self.gw = GatewayProcess(gateway_config(
            [e.backend(name) for name, e in self.engines.items()]))
        self.gw.__enter__()
        self.addCleanup(self.gw.__exit__, None, None, None)
        self.warm_up()

    def post(self, body, headers=None):
        """Sends a chat through the gateway; returns (backend, rank, its access-log line), the
        rank None when the backend is one routing target."""
        before = len(chat_lines(self.gw))
        status, h, data = self.gw.request("POST", "/v1/chat/completions", body, headers=headers)
        self.assertEqual(status, 200, data[:400])
        line = wait_for(lambda: chat_lines(self.gw)[before:], what="the access-log line")[0]
        self.assertEqual(line["prefix_key"], "precise", line)
        self.assertEqual(line["backend"], h["x-warmroute-backend"])
        return (*target_of(h["x-warmroute-backend"]), line)

    def all_ranks(self, predicate):
        return all(len(ranks_of(self.gw, b)) == self.ranks and
                   all(predicate(r) for r in ranks_of(self.gw, b)) for b in self.engines)

    def warm_up(self):
        """ZMQ's slow joiner: requests sent to each rank of each engine directly until every
        rank's stream of every backend has applied an event; then every stream must be
        precise."""
        for i in range(80):
            if self.all_ranks(lambda r: r["applied"] > 0):
                break
            for engine in self.engines.values():
                engine.chat_on_rank(i % self.ranks, dict(
                    chat(system_prompt(f"dp warm-up {uuid.uuid4()}")[:200], f"bonjour {i}"),
                    max_tokens=2))
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
        layout = ("a target per rank" if self.ranks > 1 and self.route_ranks else
                  "one shared slice" if self.ranks > 1 else "one core")
        print(f"\nindex error over {len(lines)} requests ({waves} waves of {len(prefixes)} "
              f"concurrent prefixes, 2 engines x {self.ranks} rank(s), {layout}): mean "
              f"|predicted - cached| / prompt tokens = {error:.2%}; over-predicted "
              f"{over}/{len(lines)}", flush=True)
        return lines

    def assert_each_rank_served(self):
        """Both ranks of each engine served prompt tokens (per-rank vllm:prompt_tokens_total)."""
        for name, engine in self.engines.items():
            text = engine.replica.metrics_text()
            for rank in range(self.ranks):
                self.assertGreater(metric_sum(text, "vllm:prompt_tokens_total", engine=str(rank)),
                                   0, f"{name} rank {rank} served nothing")


@unittest.skipIf(SKIP, SKIP)
class PreciseDataParallelTest(Fleet):
    def test_each_rank_is_a_target_fed_by_its_own_events(self):
        # The gateway reads each rank's load and capacity from the engine's one /metrics, by its
        # `engine` label: each rank's target has its rank's vllm:cache_config_info capacity.
        engine_metrics = self.engines["e0"].replica.metrics_text()
        per_rank = [metric_sum(engine_metrics, "vllm:cache_config_info", engine=str(r))
                    for r in range(RANKS)]
        self.assertEqual(per_rank, [1.0] * RANKS)
        wait_for(lambda: admin_backends(self.gw)["e0"]["kv_capacity_tokens"] > 0,
                 what="e0's KV capacity scraped")
        blocks = {int(b) for b in re.findall(r'num_gpu_blocks="(\d+)"', engine_metrics)}
        self.assertEqual(len(blocks), 1, engine_metrics)  # every rank has the same cache
        capacity = blocks.pop() * 16
        e0 = admin_backends(self.gw)["e0"]
        self.assertEqual(e0["kv_capacity_tokens"], RANKS * capacity)
        self.assertEqual([t["name"] for t in e0["routing_targets"]],
                         [f"e0/rank{r}" for r in range(RANKS)])
        self.assertEqual([t["kv_capacity_tokens"] for t in e0["routing_targets"]],
                         [capacity] * RANKS)
        self.assertTrue(all(t["kv_event_state"] == "precise" for t in e0["routing_targets"]), e0)
        # The gateway indexes what it dispatched (speculative inserts) and what the events
        # report. So that only the events can explain a prediction: a prompt goes through the
        # gateway (which picks a rank's target), then a longer one extending it goes to that rank
        # directly (the gateway never sees it; its new blocks are indexed as children of the
        # first prompt's, from that rank's BlockStored alone), then the longer prompt through the
        # gateway must go to that rank's target and be predicted exactly as the engine reports.
        seen = set()
        for attempt in range(10 * RANKS):  # each lands on a rank 0 or 1 target: both soon
            if {r for _, r in seen} == set(range(RANKS)):
                break
            system = system_prompt(f"attempt {attempt} {uuid.uuid4()}")
            backend, rank, line = self.post(chat(system, "premier"))
            self.assertIsNotNone(rank, line)
            seen.add((backend, rank))
            applied = ranks_of(self.gw, backend)[rank]["applied"]
            longer = system + " " + system_prompt(f"annexe {attempt}")[:1500]
            direct = self.engines[backend].chat_on_rank(rank, chat(longer, "premier"))
            self.assertGreater(cached(direct), 1000)  # the first prompt's blocks, on that rank
            wait_for(lambda: ranks_of(self.gw, backend)[rank]["applied"] > applied,
                     what=f"{backend} rank {rank}'s BlockStored applied")
            again, again_rank, line = self.post(chat(longer, "second"))
            self.assertEqual((again, again_rank), (backend, rank), line)
            self.assertGreater(line["cached_tokens"], cached(direct) + 200, line)
            self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"],
                             f"{line}\n{self.gw.log()[-3000:]}")
        self.assertEqual({r for _, r in seen}, set(range(RANKS)), seen)
        for name in self.engines:
            self.assertEqual(admin_backends(self.gw)[name]["kv_events"]["malformed"], 0)

    def test_each_ranks_gauges_are_on_the_gateways_metrics(self):
        # Beside each backend's series (the ranks' sums), each rank's target has its own, its KV
        # usage that of its engine core once scraped; the exposition still passes promtool.
        def rank_series(text, name):
            return {(b, r) for b, r in re.findall(
                rf'(?m)^{name}{{backend="([^"]+)",dp_rank="(\d+)"}} \S+$', text)}
        everyone = {(name, str(r)) for name in self.engines for r in range(RANKS)}
        wait_for(lambda: rank_series(self.gw.metrics_text(),
                                     "warmroute_dp_rank_kv_cache_usage_ratio") == everyone,
                 what="every rank's KV usage scraped")
        text = self.gw.metrics_text()
        for family in ("in_flight", "outstanding_prefill_tokens", "running_decodes",
                       "prefill_tokens_per_second", "kv_cache_usage_ratio"):
            self.assertEqual(rank_series(text, "warmroute_dp_rank_" + family), everyone, family)
        code, output = promtool_check(text)
        self.assertEqual((code, output), (0, ""))

    def test_a_clients_rank_header_is_replaced_by_the_targets(self):
        # Prompts sent with the client's header naming rank 0, until the gateway chose a rank 1
        # target: the engines' per-rank prompt tokens follow the gateway's choice, not the
        # client's header.
        def per_rank():
            out = {}
            for name, engine in self.engines.items():
                text = engine.replica.metrics_text()
                for rank in range(RANKS):
                    out[(name, rank)] = metric_sum(text, "vllm:prompt_tokens_total",
                                                   engine=str(rank))
            return out
        before = per_rank()
        sent = {key: 0 for key in before}
        for i in range(20):
            system = system_prompt(f"client header {i} {uuid.uuid4()}")
            backend, rank, line = self.post(chat(system, "un"), headers={RANK_HEADER: "0"})
            sent[(backend, rank)] += line["prompt_tokens"]
            if rank == 1:
                break
        self.assertTrue(any(tokens > 0 for (_, r), tokens in sent.items() if r == 1), sent)
        after = per_rank()
        self.assertEqual({key: after[key] - before[key] for key in before}, sent)

    def test_traffic_over_both_ranks_is_predicted_exactly(self):
        lines = self.traffic()
        # The gateway's targets used both ranks of each engine.
        self.assert_each_rank_served()
        wrong = [l for l in lines if l["predicted_cached_tokens"] != l["cached_tokens"]]
        self.assertEqual(wrong, [])
        later = lines[PREFIXES:]  # from the second wave on, every prefix is cached somewhere
        self.assertTrue(all(l["predicted_cached_tokens"] > 1000 for l in later), later)

    def test_a_reset_clears_each_ranks_slice_once_and_every_rank_is_precise_again(self):
        system = system_prompt(f"dp reset {uuid.uuid4()}")
        name, rank, _ = self.post(chat(system, "un"))
        _, _, line = self.post(chat(system, "deux"))
        self.assertGreater(line["cached_tokens"], 1000, line)
        self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"], line)
        engine = self.engines[name]

        def clears_now():
            return metric_sum(self.gw.metrics_text(), "warmroute_kv_event_resets_total",
                              backend=name, reason="clear")
        clears = clears_now()
        status, data = engine.replica.request("POST", "/reset_prefix_cache")
        self.assertEqual(status, 200, data)
        # Every rank publishes AllBlocksCleared, which clears that rank's slice: once each, and
        # no rank's stream replays (nothing clears another rank's slice).
        wait_for(lambda: clears_now() >= clears + RANKS, what="every rank's reset applied")
        wait_for(lambda: all(r["state"] == "precise" for r in ranks_of(self.gw, name)),
                 what="the reset engine's ranks precise again")
        wait_for(lambda: admin_backends(self.gw)[name]["index_entries"] == 0,
                 what="the reset engine's slices empty")
        time.sleep(0.5)
        self.assertEqual(clears_now(), clears + RANKS)
        self.assertTrue(all(r["state"] == "precise" for r in ranks_of(self.gw, name)))

        _, _, line = self.post(chat(system, "trois"))
        self.assertEqual(line["predicted_cached_tokens"], 0, line)
        self.assertEqual(line["cached_tokens"], 0, line)
        wait_for(lambda: admin_backends(self.gw)[line["backend"].split("/")[0]]["index_entries"]
                 > 0, what="the new blocks' events applied")
        _, _, line = self.post(chat(system, "quatre"))
        self.assertGreater(line["cached_tokens"], 1000, line)
        self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"], line)

    def test_a_restart_clears_every_ranks_slice_and_every_rank_is_precise_again(self):
        system = system_prompt(f"dp restart {uuid.uuid4()}")
        name, _, _ = self.post(chat(system, "un"))
        _, _, line = self.post(chat(system, "deux"))
        self.assertGreater(line["predicted_cached_tokens"], 1000, line)
        engine = self.engines[name]
        engine.stop()
        wait_for(lambda: admin_backends(self.gw)[name]["state"] != "up", what=f"{name} down")
        engine.start()  # the same ports; every rank's sequence numbers start at 0 again
        wait_for(lambda: admin_backends(self.gw)[name]["state"] == "up", what=f"{name} up")
        wait_for(lambda: all(r["state"] == "precise" for r in ranks_of(self.gw, name)),
                 what=f"{name}'s ranks precise again")
        wait_for(lambda: admin_backends(self.gw)[name]["index_entries"] == 0,
                 what=f"{name}'s slices empty")
        # The new process holds nothing: nothing is predicted, nothing is cached.
        _, _, line = self.post(chat(system, "trois"))
        self.assertEqual(line["predicted_cached_tokens"], 0, line)
        self.assertEqual(line["cached_tokens"], 0, line)
        # Every rank of the new process publishes and is applied: prompts the gateway sends to
        # each rank of it are then predicted exactly.
        covered = set()
        for i in range(20 * RANKS):  # a quarter of them land on each rank of `name`
            if covered == set(range(RANKS)):
                break
            other = system_prompt(f"dp after restart {i} {uuid.uuid4()}")
            applied = {b: sum(r["applied"] for r in ranks_of(self.gw, b)) for b in self.engines}
            first, rank, _ = self.post(chat(other, "un"))
            wait_for(lambda: sum(r["applied"] for r in ranks_of(self.gw, first)) >
                     applied[first], what=f"{first} rank {rank}'s events applied")
            _, _, line = self.post(chat(other, "deux"))
            self.assertGreater(line["cached_tokens"], 1000, line)
            self.assertEqual(line["predicted_cached_tokens"], line["cached_tokens"], line)
            if first == name:
                covered.add(rank)
        self.assertEqual(covered, set(range(RANKS)))
        self.assertTrue(all(r["state"] == "precise" for r in ranks_of(self.gw, name)))


@unittest.skipIf(SKIP, SKIP)
class SharedSliceControlTest(Fleet):
    """`route_ranks: false`: each backend is one target whose slice is the union of its ranks'
    caches, and the engine's balancer picks the rank. A request sent to the rank that lacks its
    prefix is over-predicted; none is under-predicted."""
    route_ranks = False

    def test_traffic_over_a_shared_slice_is_never_under_predicted(self):
        lines = self.traffic()
        self.assert_each_rank_served()  # by the engines' balancer
        under = [l for l in lines if l["cached_tokens"] > l["predicted_cached_tokens"]]
        self.assertEqual(under, [])
        self.assertTrue(all("/rank" not in l["backend"] for l in lines))


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
