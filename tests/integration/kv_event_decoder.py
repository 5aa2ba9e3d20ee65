#!/usr/bin/python3
"""An independent, strict decoder of vLLM's KV-event stream (vllm/distributed/kv_events.py),
written from vLLM's schema rather than from our encoder, with Debian's python3-msgpack and
python3-zmq.

The stream: a ZMQ PUB socket sends one message per engine step that produced events, three
frames — topic, an 8-byte big-endian sequence number (+1 per message, from 0), and a msgpack
EventBatch `[ts: float, events: list, data_parallel_rank: int | nil]` (msgspec array_like; a
trailing default may be omitted). Each event is a msgspec tagged struct, encoded either

  as an array (array_like, vLLM up to v0.23):  ["BlockStored", block_hashes, ...fields in order]
  or as a map (vLLM since vllm-project/vllm#42892): {"type": "BlockStored", "block_hashes": ...}

Fields without a default are always present; fields with a default may be omitted (in an array
only at the end). Unknown fields and wrong types are errors here: this decoder checks a
producer, it is not a lenient consumer.

Usage as a tool:  /usr/bin/python3 kv_event_decoder.py tcp://127.0.0.1:5557 [--count N]
"""
import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Optional

import msgpack
import zmq

U64 = 1 << 64


class SchemaError(ValueError):
    """The message does not follow vLLM's KV-event schema."""


# (name, required, type check, description) per field, in declaration order.
def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_hash(v):
    # vLLM's ExternalBlockHash is `bytes | int`; the int form is the low 64 bits of the digest.
    return (_is_int(v) and 0 <= v < U64) or isinstance(v, bytes)


def _is_opt(check):
    return lambda v: v is None or check(v)


def _is_list_of(check):
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _is_str(v):
    return isinstance(v, str)


_FIELDS = {
    "BlockStored": [
        ("block_hashes", True, _is_list_of(_is_hash)),
        ("parent_block_hash", True, _is_opt(_is_hash)),
        ("token_ids", True, _is_list_of(_is_int)),
        ("block_size", True, _is_int),
        ("lora_id", True, _is_opt(_is_int)),
        ("medium", True, _is_opt(_is_str)),
        ("lora_name", True, _is_opt(_is_str)),
        ("extra_keys", False, _is_opt(_is_list_of(lambda k: k is None or isinstance(k, list)))),
        ("group_idx", False, _is_opt(_is_int)),
        ("kv_cache_spec_kind", False, _is_opt(_is_str)),
        ("kv_cache_spec_sliding_window", False, _is_opt(_is_int)),
    ],
    "BlockRemoved": [
        ("block_hashes", True, _is_list_of(_is_hash)),
        ("medium", True, _is_opt(_is_str)),
        ("group_idx", False, _is_opt(_is_int)),
    ],
    "AllBlocksCleared": [],
}


@dataclass
class Event:
    type: str
    # Every field of the event as decoded, absent optional ones as None.
    fields: dict = field(default_factory=dict)

    def __getattr__(self, name):
        try:
            return self.__dict__["fields"][name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass
class Message:
    topic: bytes
    seq: int
    ts: float
    events: list
    data_parallel_rank: Optional[int]
    encoding: str  # "array", "map", or "empty" for a batch without events
    payload: bytes = field(default=b"", repr=False)  # frame 3 as received


def _decode_event(raw, where):
    if isinstance(raw, list):
        if not raw or not isinstance(raw[0], str):
            raise SchemaError(f"{where}: an array event must start with its string tag: {raw!r}")
        tag, values = raw[0], raw[1:]
        spec = _FIELDS.get(tag)
        if spec is None:
            raise SchemaError(f"{where}: unknown event tag {tag!r}")
        if len(values) > len(spec):
            raise SchemaError(f"{where}: {tag} has {len(values)} fields, at most {len(spec)}")
        required = sum(1 for _, req, _ in spec if req)
        if len(values) < required:
            raise SchemaError(f"{where}: {tag} has {len(values)} fields, needs {required}")
        decoded = {name: None for name, _, _ in spec}
        for (name, _, check), value in zip(spec, values):
            if not check(value):
                raise SchemaError(f"{where}: {tag}.{name} has a bad value {value!r}")
            decoded[name] = value
        return Event(tag, decoded), "array"
    if isinstance(raw, dict):
        tag = raw.get("type")
        if not isinstance(tag, str):
            raise SchemaError(f"{where}: a map event needs a string 'type': {raw!r}")
        spec = _FIELDS.get(tag)
        if spec is None:
            raise SchemaError(f"{where}: unknown event tag {tag!r}")
        known = {name for name, _, _ in spec}
        unknown = set(raw) - known - {"type"}
        if unknown:
            raise SchemaError(f"{where}: {tag} has unknown fields {sorted(unknown)}")
        decoded = {}
        for name, required, check in spec:
            if name not in raw:
                if required:
                    raise SchemaError(f"{where}: {tag} lacks the required field {name!r}")
                decoded[name] = None
                continue
            if not check(raw[name]):
                raise SchemaError(f"{where}: {tag}.{name} has a bad value {raw[name]!r}")
            decoded[name] = raw[name]
        return Event(tag, decoded), "map"
    raise SchemaError(f"{where}: an event must be an array or a map, got {type(raw).__name__}")


def decode_payload(payload):
    """Decodes frame 3; returns (ts, [Event], data_parallel_rank, encoding)."""
    try:
        batch = msgpack.unpackb(payload, raw=False, strict_map_key=True, use_list=True)
    except Exception as e:  # msgpack raises several types
        raise SchemaError(f"payload is not msgpack: {e}") from e
    if not isinstance(batch, list) or not 2 <= len(batch) <= 3:
        raise SchemaError(f"EventBatch must be [ts, events, data_parallel_rank]: {batch!r}")
    ts, events = batch[0], batch[1]
    rank = batch[2] if len(batch) == 3 else None
    if not isinstance(ts, float):
        raise SchemaError(f"ts must be a msgpack float, got {ts!r}")
    if not isinstance(events, list):
        raise SchemaError(f"events must be an array, got {events!r}")
    if rank is not None and not _is_int(rank):
        raise SchemaError(f"data_parallel_rank must be an int or nil, got {rank!r}")
    decoded, encodings = [], set()
    for i, raw in enumerate(events):
        event, encoding = _decode_event(raw, f"event {i}")
        _check_event_semantics(event, f"event {i}")
        decoded.append(event)
        encodings.add(encoding)
    if len(encodings) > 1:
        raise SchemaError("one batch mixes array and map events")
    return ts, decoded, rank, encodings.pop() if encodings else "empty"


def _check_event_semantics(event, where):
    if event.type == "BlockStored":
        if event.block_size <= 0:
            raise SchemaError(f"{where}: block_size must be positive: {event.block_size}")
        if not event.block_hashes:
            raise SchemaError(f"{where}: BlockStored without blocks")
        if len(event.token_ids) != len(event.block_hashes) * event.block_size:
            raise SchemaError(
                f"{where}: {len(event.token_ids)} token_ids for {len(event.block_hashes)} blocks "
                f"of {event.block_size}")
        keys = event.extra_keys
        if keys is not None and len(keys) != len(event.block_hashes):
            raise SchemaError(f"{where}: extra_keys needs one entry per block")
    elif event.type == "BlockRemoved":
        if not event.block_hashes:
            raise SchemaError(f"{where}: BlockRemoved without blocks")


def decode_message(frames):
    """Decodes one multipart message (a list of 3 frames) into a Message."""
    if len(frames) != 3:
        raise SchemaError(f"a KV-event message has 3 frames, got {len(frames)}")
    topic, seq_bytes, payload = frames
    if len(seq_bytes) != 8:
        raise SchemaError(f"the sequence frame must be 8 bytes, got {len(seq_bytes)}")
    seq = int.from_bytes(seq_bytes, "big", signed=False)
    ts, events, rank, encoding = decode_payload(payload)
    return Message(topic, seq, ts, events, rank, encoding, payload)


class Subscriber:
    """A SUB socket on one endpoint that decodes and checks every message it receives: sequence
    numbers must be consecutive from the first message received (a late joiner may start above
    0). Keeps every Message in `messages`. With allow_restart, a sequence below the last one is
    a restarted engine (its publisher counts from 0 again): it is counted in `restarts` and the
    count continues from there; a jump forward is still an error."""

    def __init__(self, endpoint, topic=b"", context=None, allow_restart=False):
        self._context = context or zmq.Context.instance()
        self._socket = self._context.socket(zmq.SUB)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.setsockopt(zmq.SUBSCRIBE, topic)
        self._socket.connect(endpoint)
        self.messages = []
        self.allow_restart = allow_restart
        self.restarts = 0

    def close(self):
        self._socket.close(0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def receive(self, timeout_s):
        """The next Message, or None when none arrives within timeout_s."""
        if not self._socket.poll(int(timeout_s * 1000)):
            return None
        frames = self._socket.recv_multipart()
        message = decode_message(frames)
        if self.messages and message.seq != self.messages[-1].seq + 1:
            if not (self.allow_restart and message.seq <= self.messages[-1].seq):
                raise SchemaError(f"sequence jumped from {self.messages[-1].seq} to {message.seq}")
            self.restarts += 1
        self.messages.append(message)
        return message

    def drain(self, quiet_s):
        """Receives until nothing arrives for quiet_s; returns the new messages."""
        new = []
        while True:
            message = self.receive(quiet_s)
            if message is None:
                return new
            new.append(message)


REPLAY_END_SEQ = (-1).to_bytes(8, "big", signed=True)


def request_replay(endpoint, start, timeout_s=5.0, context=None):
    """Asks a replay endpoint (vLLM's ZMQ ROUTER) for the buffered messages from sequence `start`
    and returns them as [Message] (topic b"": the topic is not replayed), after checking that
    the answer ends with vLLM's end marker (sequence -1 as 8 signed big-endian bytes, an empty
    payload). Uses a DEALER socket, which sends the empty delimiter frame itself: vLLM's example
    client uses REQ, which reads only the first message of the answer."""
    context = context or zmq.Context.instance()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(endpoint)
    try:
        socket.send_multipart([b"", start.to_bytes(8, "big")])
        messages = []
        while True:
            if not socket.poll(int(timeout_s * 1000)):
                raise SchemaError(f"replay from {start}: no end marker within {timeout_s} s "
                                  f"({len(messages)} messages received)")
            frames = socket.recv_multipart()
            if len(frames) != 3 or frames[0] != b"":
                raise SchemaError(f"a replay message is [empty, seq, payload], got {frames!r}")
            _, seq_bytes, payload = frames
            if seq_bytes == REPLAY_END_SEQ:
                if payload != b"":
                    raise SchemaError("the end marker's payload must be empty")
                return messages
            message = decode_message([b"", seq_bytes, payload])
            if message.seq < start:
                raise SchemaError(f"replay from {start} returned sequence {message.seq}")
            if messages and message.seq != messages[-1].seq + 1:
                raise SchemaError(f"replayed sequences jump from {messages[-1].seq} to "
                                  f"{message.seq}")
            messages.append(message)
    finally:
        socket.close(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("endpoint")
    parser.add_argument("--count", type=int, default=0, help="stop after N messages (0: never)")
    parser.add_argument("--topic", default="")
    args = parser.parse_args()
    with Subscriber(args.endpoint, args.topic.encode()) as sub:
        n = 0
        while args.count == 0 or n < args.count:
            message = sub.receive(3600)
            if message is None:
                continue
            n += 1
            print(json.dumps({
                "seq": message.seq, "ts": message.ts, "rank": message.data_parallel_rank,
                "encoding": message.encoding,
                "events": [{"type": e.type, **e.fields} for e in message.events],
            }, default=lambda b: b.hex()))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
