"""`warmroute engine --kv-events`: vLLM's KV-event stream over ZMQ, read by an independent
decoder (kv_event_decoder.py) that checks the schema strictly, the sequence numbers, the block
hash chains, evictions and the cache reset, in both event encodings.
"""
import collections
import time
import unittest

from emulator_process import EmulatorProcess, free_tcp_port
from kv_event_decoder import Subscriber

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


class KvEventsMapEncodingTest(KvEventsTests, unittest.TestCase):
    encoding = "map"  # vLLM's current encoding


class KvEventsArrayEncodingTest(KvEventsTests, unittest.TestCase):
    encoding = "array"  # vLLM up to v0.23


if __name__ == "__main__":
    unittest.main()
