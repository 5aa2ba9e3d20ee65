"""The soak's clients: one HTTP/1.1 request per connection on asyncio streams, read to its end
and recorded with what a user of the gateway would see.

Each request's `Outcome` says how it ended, as bytes on the wire show it:
  ok            200 with a whole JSON completion, or an SSE stream that ended with `data: [DONE]`
  error         a clean OpenAI-style error: status >= 400 and a JSON body with error.message
                (a non-empty string) and error.type
  stream_error  a 200 SSE stream that ended with a `data: {"error": ...}` event (cut mid-way,
                reported)
  disconnected  the client itself closed: mid-stream (behaviour "disconnect") or right after
                sending its request (behaviour "abandon")
  hang          the client's own deadline fired: no response head within `head_timeout`, or no
                byte for `idle_timeout` within a response
  unclean       anything else: the connection closed before a response, an error that is no
                OpenAI error, a 200 JSON body without choices, a stream that ended without
                [DONE] and without an error event (a silent cut)
Whether an `error` or a `stream_error` was allowed is decided later (verdict.py), against the
faults that overlapped the request.

Standard library only.
"""
import asyncio
import json
import time
from dataclasses import dataclass, field


@dataclass
class Outcome:
    kind: str
    status: int = 0
    detail: str = ""
    error_type: str = ""
    cached_tokens: int = -1       # usage.prompt_tokens_details.cached_tokens, -1: not reported
    backend: str = ""             # x-warmroute-backend
    first_byte_s: float = -1.0    # from the end of the request's body to the response head
    events: int = 0


@dataclass
class Record:
    """One request: when it ran, who sent it, and how it ended (monotonic seconds)."""
    start: float
    end: float
    tenant: str
    gateway: int
    stream: bool
    behaviour: str                # normal, slow_send, disconnect, probe
    outcome: Outcome = field(default_factory=lambda: Outcome("unclean"))


class _Timeout(Exception):
    pass


async def _within(awaitable, seconds, what):
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        raise _Timeout(what) from None


def _error_fields(body):
    """(message, type) of an OpenAI error body, or None when it is not one."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    err = doc.get("error") if isinstance(doc, dict) else None
    if not isinstance(err, dict):
        return None
    message, kind = err.get("message"), err.get("type")
    if not isinstance(message, str) or not message or not isinstance(kind, str):
        return None
    return message, kind


def _cached_tokens(usage):
    if not isinstance(usage, dict):
        return -1
    details = usage.get("prompt_tokens_details") or {}
    value = details.get("cached_tokens") if isinstance(details, dict) else None
    return value if isinstance(value, int) else -1


class _Body:
    """Reads a response body (Content-Length, chunked or until close) piece by piece, each piece
    within `idle` seconds."""

    def __init__(self, reader, headers, idle):
        self.reader = reader
        self.idle = idle
        self.chunked = headers.get("transfer-encoding", "").lower() == "chunked"
        self.remaining = int(headers["content-length"]) if "content-length" in headers else None
        self.complete = False

    async def next(self):
        """The next piece of body bytes; b"" at its end (`complete` says whether it ended as its
        framing says, or the connection closed early)."""
        r = self.reader
        if self.chunked:
            line = await _within(r.readline(), self.idle, "chunk size")
            if not line.endswith(b"\n"):
                return b""
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                return b""
            if size == 0:
                self.complete = True
                return b""
            try:
                data = await _within(r.readexactly(size + 2), self.idle, "chunk data")
            except asyncio.IncompleteReadError:
                return b""
            return data[:-2]
        if self.remaining is not None:
            if self.remaining == 0:
                self.complete = True
                return b""
            data = await _within(r.read(min(self.remaining, 65536)), self.idle, "body")
            self.remaining -= len(data)
            return data
        data = await _within(r.read(65536), self.idle, "body until close")
        if not data:
            self.complete = True
        return data


async def send_request(host, port, body, api_key, *, stream, behaviour, head_timeout,
                       idle_timeout):
    """Sends `body` to POST /v1/chat/completions and reads the answer; returns an Outcome.
    behaviour "slow_send" sends the body in 6 pieces 0.25 s apart; "disconnect" closes after
    the second SSE event; "abandon" closes as soon as the request is sent."""
    writer = None
    try:
        reader, writer = await _within(asyncio.open_connection(host, port), 5, "connect")
        data = json.dumps(body).encode()
        head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"Content-Type: application/json\r\nAuthorization: Bearer {api_key}\r\n"
                f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode()
        if behaviour == "slow_send":
            writer.write(head)
            step = max(1, len(data) // 6 + 1)
            for i in range(0, len(data), step):
                writer.write(data[i:i + step])
                await writer.drain()
                await asyncio.sleep(0.25)
        else:
            writer.write(head + data)
            await writer.drain()
        sent = time.monotonic()
        if behaviour == "abandon":
            return Outcome("disconnected", detail="closed after sending the request")
        try:
            raw_head = await _within(reader.readuntil(b"\r\n\r\n"), head_timeout, "response head")
        except asyncio.IncompleteReadError:
            return Outcome("unclean", detail="connection closed before a response head")
        first_byte = time.monotonic() - sent
        lines = raw_head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ")[1])
        except (IndexError, ValueError):
            return Outcome("unclean", detail=f"bad status line {lines[0][:80]!r}")
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        backend = headers.get("x-warmroute-backend", "")
        body_reader = _Body(reader, headers, idle_timeout)
        is_sse = headers.get("content-type", "").startswith("text/event-stream")
        if status == 200 and is_sse:
            out = await _read_stream(body_reader, behaviour)
        else:
            payload = b""
            while True:
                piece = await body_reader.next()
                if not piece:
                    break
                payload += piece
            out = _judge_whole(status, payload, body_reader.complete, stream)
        out.status = status
        out.backend = backend
        out.first_byte_s = first_byte
        return out
    except _Timeout as e:
        return Outcome("hang", detail=f"no {e} within the client's deadline")
    except (ConnectionError, OSError) as e:
        return Outcome("unclean", detail=f"connection error: {e!r}")
    finally:
        if writer is not None:
            writer.close()


def _judge_whole(status, payload, complete, stream):
    if not complete:
        return Outcome("unclean", detail=f"HTTP {status}: body cut short ({len(payload)} bytes)")
    if status >= 400:
        fields = _error_fields(payload)
        if fields is None:
            return Outcome("unclean", detail=f"HTTP {status}: not an OpenAI error: "
                                             f"{payload[:120]!r}")
        return Outcome("error", detail=fields[0][:200], error_type=fields[1])
    if status != 200:
        return Outcome("unclean", detail=f"unexpected HTTP {status}")
    if stream:
        return Outcome("unclean", detail="a streaming request answered without an event stream")
    try:
        doc = json.loads(payload)
    except ValueError:
        return Outcome("unclean", detail=f"200 with a body that is no JSON: {payload[:120]!r}")
    if not isinstance(doc, dict) or not doc.get("choices"):
        return Outcome("unclean", detail=f"200 without choices: {payload[:120]!r}")
    return Outcome("ok", cached_tokens=_cached_tokens(doc.get("usage")))


async def _read_stream(body_reader, behaviour):
    buffer = b""
    events = 0
    cached = -1
    while True:
        piece = await body_reader.next()
        if not piece:
            break
        buffer += piece
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            for line in block.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                events += 1
                if data == b"[DONE]":
                    return Outcome("ok", events=events, cached_tokens=cached)
                try:
                    doc = json.loads(data)
                except ValueError:
                    return Outcome("unclean", events=events,
                                   detail=f"an SSE event that is no JSON: {data[:120]!r}")
                if isinstance(doc, dict) and "error" in doc:
                    fields = _error_fields(data)
                    if fields is None:
                        return Outcome("unclean", events=events,
                                       detail=f"an error event that is no OpenAI error: "
                                              f"{data[:120]!r}")
                    return Outcome("stream_error", events=events, detail=fields[0][:200],
                                   error_type=fields[1])
                if isinstance(doc, dict) and doc.get("usage"):
                    cached = _cached_tokens(doc["usage"])
                if behaviour == "disconnect" and events >= 2:
                    return Outcome("disconnected", events=events)
    how = "after its last chunk" if body_reader.complete else "with the connection's close"
    return Outcome("unclean", events=events,
                   detail=f"stream ended {how} without [DONE] or an error event (silent cut)")
