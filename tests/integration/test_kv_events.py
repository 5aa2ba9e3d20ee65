"""`warmroute engine --kv-events`: vLLM's KV-event stream over ZMQ, read by an independent
decoder (kv_event_decoder.py) that checks the schema strictly, the sequence numbers, the block
hash chains, evictions and the cache reset, in both event encodings; and vLLM's
`--kv-events-config` with its replay endpoint, the cache reset's effect on events and hits, and
sequence numbers across an engine restart.
"""
import collections
import http.client
import json
import subprocess
import time
import unittest

import msgpack
import zmq

from emulator_process import EmulatorProcess, binary, free_tcp_port
from kv_event_decoder import REPLAY_END_SEQ, Subscriber, request_replay

BLOCK_SIZE = 16  # vLLM's default block size, the emulator's too
QUIET_S = 1.5  # no message for this long: the engine has published everything

# Distinct, long enough prompts (several 16-token blocks each).
TOPICS = ["tidal energy", "medieval bookbinding", "alpine glaciers", "coral reef ecology",
          "railway signalling", "sourdough fermentation", "volcanic soils", "jazz harmony",
          "desert navigation", "bee colony health", "lighthouse optics", "paper marbling"]


def essay_prompt(topic, words=120):
    filler = " ".join(f"{topic} fact {i} is worth remembering." for i in range(words // 5))
    return f"Write a careful essay about {topic}. Background notes: {filler}"


class KvEventStreamCheck:
    """Replays received events and checks them against a model of the engine's cache: after an
    AllBlocksCleared nothing is cached; a BlockStored's parent must be cached (or nil for a
    first block); a BlockRemoved must name cached blocks. Before the first AllBlocksCleared the
    subscriber may have missed earlier messages, so chains are checked only after it."""

    def __init__(self, test):
        self.test = test
        self.cached = collections.Counter()  # hash -> copies cached (vLLM may store duplicates)
        self.synced = False
        self.stored = 0
        self.removed = 0
        self.cleared = 0
        self.chained = 0  # BlockStored events whose parent was a known cached block

    def feed(self, message):
        for event in message.events:
            if event.type == "AllBlocksCleared":
                self.cached.clear()
                self.synced = True
                self.cleared += 1
            elif event.type == "BlockStored":
                self.stored += 1
                self.test.assertEqual(event.block_size, BLOCK_SIZE)
                self.test.assertEqual(len(event.token_ids), len(event.block_hashes) * BLOCK_SIZE)
                self.test.assertEqual(event.medium, "GPU")
                for h in event.block_hashes:
                    self.test.assertIsInstance(h, int, "block hashes travel as integers")
                if self.synced and event.parent_block_hash is not None:
                    self.test.assertIn(event.parent_block_hash, self.cached,
                                       f"parent of {event.block_hashes[0]} is not cached")
                    self.chained += 1
                for h in event.block_hashes:
                    self.cached[h] += 1
            elif event.type == "BlockRemoved":
                self.removed += 1
                for h in event.block_hashes:
                    if self.synced:
                        self.test.assertGreater(self.cached[h], 0, f"removed {h} was not cached")
                    self.cached[h] -= 1
                    if self.cached[h] <= 0:
                        del self.cached[h]


class KvEventsTests:
    """The tests, run once per encoding by the TestCase subclasses below."""
    encoding = None

    def start_engine(self, extra_args=()):
        port = free_tcp_port()
        self.endpoint = f"tcp://127.0.0.1:{port}"
        args = ["--profile", "tiny", "--kv-events", "--kv-events-endpoint", self.endpoint,
                "--kv-events-encoding", self.encoding]
        engine = EmulatorProcess(args + list(extra_args))
        engine.__enter__()
        self.addCleanup(engine.__exit__, None, None, None)
        self.replica = engine.replicas[0]
        self.model = self.replica.model()
        self.sub = Subscriber(self.endpoint)
        self.addCleanup(self.sub.close)
        self.wait_for_subscription()
        return engine

    def wait_for_subscription(self):
        """ZMQ's slow joiner: messages published before the subscription reaches the publisher
        are lost, so send small requests until one of their events arrives."""
        for i in range(40):
            self.replica.chat(self.model, f"warm-up request number {i}: say hello", max_tokens=2)
            if self.sub.receive(0.5) is not None:
                self.sub.drain(QUIET_S)
                return
        self.fail("no KV event arrived after 40 warm-up requests")

    def reset_and_sync(self, check):
        """POST /reset_prefix_cache and wait for its AllBlocksCleared."""
        self.replica.post_json("/reset_prefix_cache", None)
        for message in self.sub.drain(QUIET_S):
            check.feed(message)
        self.assertTrue(check.synced, "no AllBlocksCleared after POST /reset_prefix_cache")

    def test_stored_blocks_chain_and_sequence_is_consecutive(self):
        self.start_engine()
        check = KvEventStreamCheck(self)
        for message in self.sub.messages:
            check.feed(message)
        self.reset_and_sync(check)

        base = essay_prompt("tidal energy")
        self.replica.chat(self.model, base)
        # The same prefix and more: the engine stores only the new blocks, chained to the
        # cached prefix.
        self.replica.chat(self.model, base + " Now add a section on estuary barrages and their "
                          "effect on migrating fish, with three worked examples.")
        for message in self.sub.drain(QUIET_S):
            check.feed(message)

        messages = self.sub.messages
        seqs = [m.seq for m in messages]
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))))
        for m in messages:
            self.assertEqual(m.topic, b"")
            self.assertEqual(m.data_parallel_rank, 0)
            self.assertLess(abs(m.ts - time.time()), 600, "ts is wall-clock seconds, like vLLM's")
            self.assertIn(m.encoding, (self.encoding, "empty"))
        self.assertEqual([m.ts for m in messages], sorted(m.ts for m in messages))
        self.assertGreater(check.stored, 0)
        self.assertGreater(check.chained, 0, "the second request's blocks chain to the first's")

    def test_eviction_publishes_block_removed(self):
        # 64 blocks: a dozen distinct prompts of ~20 blocks each must evict.
        self.start_engine(["--kv-capacity-tokens", str(64 * BLOCK_SIZE)])
        check = KvEventStreamCheck(self)
        self.reset_and_sync(check)
        for topic in TOPICS:
            self.replica.chat(self.model, essay_prompt(topic, words=200), max_tokens=4)
            for message in self.sub.drain(0.2):
                check.feed(message)
        for message in self.sub.drain(QUIET_S):
            check.feed(message)
        self.assertGreater(check.removed, 0, "a full cache must evict and say so")
        self.assertLessEqual(sum(check.cached.values()), 64, "more blocks cached than exist")

    def test_reset_prefix_cache_publishes_all_blocks_cleared(self):
        self.start_engine()
        check = KvEventStreamCheck(self)
        self.replica.chat(self.model, essay_prompt("jazz harmony"))
        for message in self.sub.drain(QUIET_S):
            check.feed(message)
        cleared_before = check.cleared
        self.reset_and_sync(check)
        self.assertEqual(check.cleared, cleared_before + 1)
        last = self.sub.messages[-1]
        self.assertEqual(last.events[-1].type, "AllBlocksCleared")


def cached_tokens(response):
    return response["usage"]["prompt_tokens_details"]["cached_tokens"]


class KvEventsConfigTest(unittest.TestCase):
    """`--kv-events-config` in vLLM's JSON form, with a topic and a replay endpoint."""
    TOPIC = b"kv-test"

    def config(self, buffer_steps):
        return json.dumps({
            "enable_kv_cache_events": True, "publisher": "zmq",
            "endpoint": f"tcp://*:{self.pub_port}", "replay_endpoint": f"tcp://*:{self.replay_port}",
            "topic": self.TOPIC.decode(), "buffer_steps": buffer_steps})

    def start_engine(self, buffer_steps=1000, extra_args=()):
        """Starts (or, called again, restarts) the engine on the same ZMQ ports."""
        if not hasattr(self, "pub_port"):
            self.pub_port = free_tcp_port(2)  # one block: two calls may give the same port
            self.replay_port = self.pub_port + 1
        self.engine = EmulatorProcess(["--profile", "tiny", "--kv-events-config",
                                       self.config(buffer_steps), *extra_args])
        self.engine.__enter__()
        self.addCleanup(self.engine.__exit__, None, None, None)
        self.replica = self.engine.replicas[0]
        self.model = self.replica.model()
        self.replay_endpoint = f"tcp://127.0.0.1:{self.replay_port}"
        return self.engine

    def subscribe(self):
        self.sub = Subscriber(f"tcp://127.0.0.1:{self.pub_port}", topic=self.TOPIC,
                              allow_restart=True)
        self.addCleanup(self.sub.close)

    def wait_for_events(self, label):
        """ZMQ's slow joiner: sends small requests until one of their events arrives; returns
        the messages received."""
        for i in range(40):
            self.replica.chat(self.model, f"{label} request number {i}: say hello", max_tokens=2)
            first = self.sub.receive(0.5)
            if first is not None:
                return [first] + self.sub.drain(QUIET_S)
        self.fail("no KV event arrived after 40 requests")

    def test_prints_endpoints_and_publishes_on_the_topic(self):
        self.start_engine()
        self.subscribe()
        received = self.wait_for_events("warm-up")
        log = self.engine.log()
        self.assertIn(f"replica 0 kv-events on tcp://0.0.0.0:{self.pub_port}", log)
        self.assertIn(f"replica 0 kv-events-replay on tcp://0.0.0.0:{self.replay_port}", log)
        for m in received:
            self.assertEqual(m.topic, self.TOPIC)
            self.assertEqual(m.encoding, "map")
            self.assertEqual(m.data_parallel_rank, 0)
        self.assertTrue(any(e.type == "BlockStored" for m in received for e in m.events))

    def test_replay_returns_exactly_the_missed_messages_then_the_end_marker(self):
        self.start_engine()
        self.subscribe()
        seen = self.wait_for_events("warm-up")
        last_seen = seen[-1].seq
        # Replay from an earlier sequence: byte for byte what was published, then the end marker.
        replayed = request_replay(self.replay_endpoint, seen[0].seq)
        self.assertEqual([m.seq for m in replayed], [m.seq for m in seen])
        self.assertEqual([m.payload for m in replayed], [m.payload for m in seen])
        self.assertEqual([m.topic for m in replayed], [b""] * len(seen), "no topic in replay")

        # The subscriber goes away; the engine goes on publishing.
        self.sub.close()
        for topic in TOPICS[:3]:
            self.replica.chat(self.model, essay_prompt(topic), max_tokens=4)
        time.sleep(QUIET_S)
        missed = request_replay(self.replay_endpoint, last_seen + 1)
        self.assertGreaterEqual(len(missed), 3, "each request stores its prompt's blocks")
        self.assertEqual(missed[0].seq, last_seen + 1)
        self.assertEqual([m.seq for m in missed],
                         list(range(last_seen + 1, last_seen + 1 + len(missed))))
        stored = [e for m in missed for e in m.events if e.type == "BlockStored"]
        self.assertGreaterEqual(len(stored), 3)
        self.assertEqual(request_replay(self.replay_endpoint, missed[-1].seq + 1), [],
                         "a start past the newest message gets the end marker alone")

        # A new subscriber continues where the replay ended: replayed + live are consecutive.
        self.subscribe()
        live = self.wait_for_events("rejoin")
        gap = request_replay(self.replay_endpoint, missed[-1].seq + 1)
        self.assertEqual([m.seq for m in gap][-len(live):], [m.seq for m in live])
        self.assertEqual(gap[0].seq, missed[-1].seq + 1)

    def test_replay_from_before_the_buffer_returns_what_is_left(self):
        self.start_engine(buffer_steps=4)
        self.subscribe()
        seen = self.wait_for_events("warm-up")
        for topic in TOPICS[:8]:  # one message each: the prompt's blocks
            self.replica.chat(self.model, essay_prompt(topic), max_tokens=4)
        seen += self.sub.drain(QUIET_S)
        self.assertGreater(seen[-1].seq, 7)
        replayed = request_replay(self.replay_endpoint, 0)
        self.assertEqual([m.seq for m in replayed], [m.seq for m in seen[-4:]],
                         "buffer_steps 4 keeps the last 4 messages; the gap shows in the first")

    def test_malformed_requests_get_no_answer_and_vllms_req_client_works(self):
        self.start_engine()
        self.subscribe()
        seen = self.wait_for_events("warm-up")
        context = zmq.Context.instance()
        dealer = context.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.connect(self.replay_endpoint)
        self.addCleanup(dealer.close, 0)
        dealer.send_multipart([b"", (0).to_bytes(8, "big"), b"extra"])  # 4 frames at the ROUTER
        self.assertEqual(dealer.poll(500), 0, "vLLM ignores a request that is not 3 frames")
        # vLLM's examples/online_serving/kv_events_subscriber.py: a REQ socket sending the start.
        req = context.socket(zmq.REQ)
        req.setsockopt(zmq.LINGER, 0)
        req.connect(self.replay_endpoint)
        self.addCleanup(req.close, 0)
        req.send(seen[0].seq.to_bytes(8, "big"))
        self.assertTrue(req.poll(5000))
        seq_bytes, payload = req.recv_multipart()
        self.assertEqual(int.from_bytes(seq_bytes, "big"), seen[0].seq)
        self.assertEqual(payload, seen[0].payload)
        self.assertNotEqual(seq_bytes, REPLAY_END_SEQ)
        # The engine still answers well-formed requests after the malformed one.
        self.assertEqual([m.seq for m in request_replay(self.replay_endpoint, seen[0].seq)],
                         [m.seq for m in seen])

    def test_reset_prefix_cache_clears_hits_and_publishes_all_blocks_cleared(self):
        self.start_engine()
        self.subscribe()
        self.wait_for_events("warm-up")
        prompt = essay_prompt("lighthouse optics")
        self.replica.chat(self.model, prompt)
        self.assertGreater(cached_tokens(self.replica.chat(self.model, prompt)), 0)
        self.sub.drain(QUIET_S)

        before = self.sub.messages[-1].seq
        self.replica.post_json("/reset_prefix_cache", None)
        cleared = self.sub.drain(QUIET_S)
        self.assertEqual(len(cleared), 1)
        self.assertEqual([e.type for e in cleared[0].events], ["AllBlocksCleared"])
        self.assertEqual(cleared[0].seq, before + 1)
        self.assertEqual(request_replay(self.replay_endpoint, before + 1)[0].payload,
                         cleared[0].payload, "the reset's message is replayable too")

        # Nothing is cached: the prompt misses and its blocks are stored again from the root.
        self.assertEqual(cached_tokens(self.replica.chat(self.model, prompt)), 0)
        stored = [e for m in self.sub.drain(QUIET_S) for e in m.events if e.type == "BlockStored"]
        self.assertTrue(stored)
        self.assertIsNone(stored[0].parent_block_hash)

    def test_sequence_numbers_restart_with_the_engine(self):
        engine = self.start_engine()
        self.subscribe()
        seen = self.wait_for_events("first life")
        for topic in TOPICS[:6]:
            self.replica.chat(self.model, essay_prompt(topic), max_tokens=4)
        seen += self.sub.drain(QUIET_S)
        first_life_last = seen[-1].seq
        self.assertGreaterEqual(first_life_last, 6)

        engine.__exit__(None, None, None)  # SIGTERM
        self.start_engine()  # the same ZMQ ports; the subscriber reconnects by itself
        after = self.wait_for_events("second life")
        self.assertEqual(self.sub.restarts, 1)
        self.assertLess(after[0].seq, first_life_last)
        # The new engine's publisher counted from 0 and its replay buffer holds only its own
        # messages.
        replayed = request_replay(self.replay_endpoint, 0)
        self.assertEqual(replayed[0].seq, 0)
        self.assertEqual([m.seq for m in replayed][-len(after):], [m.seq for m in after])
        self.assertEqual(replayed[-1].seq, after[-1].seq)

    def test_replicas_take_consecutive_ports(self):
        self.pub_port = free_tcp_port(4)
        self.replay_port = self.pub_port + 2
        engine = EmulatorProcess(["--profile", "tiny", "--replicas", "2", "--kv-events-config",
                                  self.config(100)], replicas=2)
        engine.__enter__()
        self.addCleanup(engine.__exit__, None, None, None)
        log = engine.log()
        for i in range(2):
            self.assertIn(f"replica {i} kv-events on tcp://0.0.0.0:{self.pub_port + i}", log)
            self.assertIn(f"replica {i} kv-events-replay on tcp://0.0.0.0:{self.replay_port + i}",
                          log)
            self.assertEqual(request_replay(f"tcp://127.0.0.1:{self.replay_port + i}", 0), [])


class SglangEncodingTest(unittest.TestCase):
    """`--kv-events-encoding sglang`: SGLang's event shape (its kv_events.py: array_like
    BlockStored [tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id],
    BlockRemoved [tag, block_hashes], AllBlocksCleared [tag]; batch [ts, events, attn_dp_rank]),
    read here with plain msgpack."""

    def test_events_have_sglangs_shape(self):
        port = free_tcp_port()
        engine = EmulatorProcess(["--profile", "tiny", "--kv-events-encoding", "sglang",
                                  "--kv-events-config",
                                  json.dumps({"enable_kv_cache_events": True, "publisher": "zmq",
                                              "endpoint": f"tcp://127.0.0.1:{port}"})])
        engine.__enter__()
        self.addCleanup(engine.__exit__, None, None, None)
        replica = engine.replicas[0]
        model = replica.model()
        sub = zmq.Context.instance().socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(f"tcp://127.0.0.1:{port}")
        self.addCleanup(sub.close, 0)
        batches = []
        for i in range(40):  # slow joiner
            replica.chat(model, f"sglang warm-up {i}: say hello", max_tokens=2)
            if sub.poll(500):
                break
        else:
            self.fail("no KV event arrived")
        replica.post_json("/reset_prefix_cache", None)
        while sub.poll(int(QUIET_S * 1000)):
            _, _, payload = sub.recv_multipart()
            batches.append(msgpack.unpackb(payload, raw=False))
        events = [e for b in batches for e in b[1]]
        for batch in batches:
            self.assertEqual(len(batch), 3)
            self.assertIsInstance(batch[0], float)
            self.assertEqual(batch[2], 0, "attn_dp_rank")
        stored = [e for e in events if e[0] == "BlockStored"]
        self.assertTrue(stored)
        for e in stored:
            self.assertEqual(len(e), 6)
            self.assertEqual(len(e[3]), len(e[1]) * e[4])
            self.assertIsNone(e[5])
        self.assertIn(["AllBlocksCleared"], events)


class KvEventsConfigCommandLineTest(unittest.TestCase):
    def run_engine(self, *args):
        return subprocess.run([binary(), "engine", "--port", "0", "--profile", "tiny", *args],
                              capture_output=True, text=True, timeout=20)

    def test_bad_configs_exit_2_naming_the_problem(self):
        for config, problem in (
                ("{not json", "not a JSON object"),
                ('{"enable_kv_cache_events": true, "replay_endpiont": "tcp://*:5558"}',
                 "unknown key 'replay_endpiont'"),
                ('{"enable_kv_cache_events": true, "publisher": "kafka"}',
                 "unknown publisher 'kafka'"),
                ('{"enable_kv_cache_events": true, "buffer_steps": -1}', "'buffer_steps'"),
                ('{"enable_kv_cache_events": true, "endpoint": "localhost:5557"}', "'endpoint'")):
            with self.subTest(config=config):
                proc = self.run_engine("--kv-events-config", config)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn("--kv-events-config", proc.stderr)
                self.assertIn(problem, proc.stderr)

    def test_replay_ports_overlapping_the_publishers_exit_2(self):
        port = free_tcp_port(3)
        config = json.dumps({"enable_kv_cache_events": True, "endpoint": f"tcp://*:{port}",
                             "replay_endpoint": f"tcp://*:{port + 1}"})
        proc = self.run_engine("--replicas", "2", "--kv-events-config", config)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn(f"tcp://*:{port + 1}", proc.stderr)
        self.assertIn("replica 1", proc.stderr)

    def test_config_and_the_older_flags_do_not_mix(self):
        proc = self.run_engine("--kv-events", "--kv-events-config",
                               '{"enable_kv_cache_events": true}')
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--kv-events-config replaces --kv-events", proc.stderr)


class KvEventsMapEncodingTest(KvEventsTests, unittest.TestCase):
    encoding = "map"  # vLLM's current encoding


class KvEventsArrayEncodingTest(KvEventsTests, unittest.TestCase):
    encoding = "array"  # vLLM up to v0.23


class DataParallelRanksTest(unittest.TestCase):
    """`--data-parallel-size 2`: rank r publishes on the endpoint's port + r and names itself in
    every batch (vLLM's KVEventBatch.data_parallel_rank), in both vLLM encodings."""

    def test_each_rank_publishes_on_its_port_with_its_rank(self):
        for encoding in ("map", "array"):
            with self.subTest(encoding=encoding):
                port = free_tcp_port(2)
                config = {"enable_kv_cache_events": True,
                          "endpoint": f"tcp://127.0.0.1:{port}"}
                with EmulatorProcess(["--profile", "tiny", "--data-parallel-size", "2",
                                      "--kv-events-encoding", encoding,
                                      "--kv-events-config", json.dumps(config)]) as engine:
                    self.assertIn(f"replica 0 rank 1 kv-events on tcp://127.0.0.1:{port + 1}\n",
                                  engine.output)
                    replica = engine.replicas[0]
                    for rank in (0, 1):
                        with Subscriber(f"tcp://127.0.0.1:{port + rank}") as sub:
                            message = None
                            for i in range(40):  # ZMQ's slow joiner
                                pin_rank(replica, rank, f"rank {rank} request {i}: say hello")
                                message = sub.receive(0.5)
                                if message is not None:
                                    break
                            self.assertIsNotNone(message, f"no event from rank {rank}")
                            self.assertEqual(message.data_parallel_rank, rank)
                            self.assertEqual(message.encoding, encoding)
                            self.assertTrue(all(m.data_parallel_rank == rank
                                                for m in sub.drain(QUIET_S)))


def pin_rank(replica, rank, content):
    """A small chat sent to `rank` of `replica` (the X-data-parallel-rank header)."""
    conn = http.client.HTTPConnection(replica.host, replica.port, timeout=30)
    try:
        body = {"messages": [{"role": "user", "content": content}], "max_tokens": 2}
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                     headers={"Content-Type": "application/json", "X-data-parallel-rank": str(rank)})
        resp = conn.getresponse()
        assert resp.status == 200, resp.read()
        resp.read()
    finally:
        conn.close()


if __name__ == "__main__":
    unittest.main()
