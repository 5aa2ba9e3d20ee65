#!/usr/bin/python3
"""SSE pass-through timing of `warmroute serve`: does the gateway change when events arrive?

A backend (asyncio, this script) answers every chat request with an SSE stream of `--events`
events, one every `--interval-ms`, each carrying its send time (CLOCK_MONOTONIC, shared by all
processes on the machine). Clients (asyncio, this script) open `--streams` concurrent streams,
once directly to the backend and once through `warmroute serve`, and record when each event
arrives. Per event:
  delay   = arrival - send time                       (what the path adds)
  jitter  = |client inter-event gap - backend gap|    (the inter-chunk timing)
For each number of concurrent streams, a table gives p50/p99 of both, direct vs through the
gateway, in one run (the machine is shared: the direct run is the baseline); a last table sums
up the jitter p99 per stream count. The client and the backend are Python: at some concurrency
they, not the path, set the direct run's own jitter (it shows in the direct column). Target: the gateway's inter-chunk timing equals the
backend's within 1 ms p99.

With --probe, backend and client are bench/sse_probe.cc instead (compiled, the same stamps and
the same two figures): the Python pair is itself a source of jitter on a shared 2-core machine.

Usage: /usr/bin/python3 bench/sse_timing.py [--bin build/release/src/cli/warmroute]
       [--streams 1,10,25,50] [--events 100] [--interval-ms 10] [--rounds 2] [--probe [PATH]]
"""
import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, int(round(q / 100 * (len(values) - 1)))))
    return values[k]


async def backend(reader, writer, events, interval):
    """One keep-alive connection: every request gets the event stream."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if length:
                await reader.readexactly(length)
            if head.startswith(b"GET /health") or head.startswith(b"GET /v1/models"):
                body = b'{"object":"list","data":[{"id":"m","object":"model"}]}'
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
                continue
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            start = time.monotonic()
            for i in range(events):
                await asyncio.sleep(max(0, start + i * interval - time.monotonic()))
                event = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}],"t":%d}\n\n' % (
                    time.monotonic_ns())
                writer.write(b"%x\r\n%s\r\n" % (len(event), event))
                await writer.drain()
            done = b"data: [DONE]\n\n"
            writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def serve_backend(port, events, interval):
    server = await asyncio.start_server(lambda r, w: backend(r, w, events, interval),
                                        "127.0.0.1", port)
    async with server:
        await server.serve_forever()


async def one_stream(port, samples):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = json.dumps({"model": "m", "stream": True, "stream_options": {"include_usage": True},
                       "messages": [{"role": "user", "content": "time me"}]}).encode()
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" %
                 (len(body), body))
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"stream failed: {head[:200]!r}")
    previous = None
    while True:
        size = int((await reader.readline()).strip(), 16)
        if size == 0:
            await reader.readline()
            break
        data = await reader.readexactly(size + 2)
        now = time.monotonic_ns()
        for event in data.split(b"\n\n"):
            if b'"t":' not in event:
                continue
            sent = int(event.rsplit(b'"t":', 1)[1].rstrip(b"}\r\n"))
            samples["delay"].append((now - sent) / 1e6)
            if previous is not None:
                samples["jitter"].append(abs((now - previous[0]) - (sent - previous[1])) / 1e6)
            previous = (now, sent)
    writer.close()


async def measure(port, streams):
    samples = {"delay": [], "jitter": []}
    await asyncio.gather(*(one_stream(port, samples) for _ in range(streams)))
    return samples


def measure_with_probe(probe, port, streams):
    """The same measurement by bench/sse_probe.cc's compiled client."""
    out = subprocess.run([probe, "measure", "--port", str(port), "--streams", str(streams)],
                         capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    return {"delay": result["delay_ms"], "jitter": result["jitter_ms"]}


async def main_async(args):
    backend_port = free_port()
    # The backend runs in its own process, so that client and backend do not share an event loop.
    if args.probe:
        server = subprocess.Popen([args.probe, "serve", "--port", str(backend_port), "--events",
                                   str(args.events), "--interval-ms", str(args.interval_ms)],
                                  stdout=subprocess.DEVNULL)
    else:
        server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve-backend",
                                   str(backend_port), "--events", str(args.events),
                                   "--interval-ms", str(args.interval_ms)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", backend_port), timeout=0.2).close()
            break
        except OSError:
            await asyncio.sleep(0.05)
    gateway_port = free_port()
    tmp = tempfile.mkdtemp(prefix="wr-sse-")
    config = os.path.join(tmp, "gw.yaml")
    with open(config, "w") as f:
        f.write(f"listen: {{host: 127.0.0.1, port: {gateway_port}, threads: 2}}\n"
                f"backends:\n  - {{name: b0, url: 'http://127.0.0.1:{backend_port}', "
                f"kind: openai, models: [m]}}\n"
                "scrape: {interval_ms: 0}\nobservability: {access_log: 'off'}\n")
    gateway = subprocess.Popen([args.bin, "serve", "--config", config, "--log-level", "warn"],
                               stdout=subprocess.PIPE)
    try:
        line = await asyncio.get_running_loop().run_in_executor(None, gateway.stdout.readline)
        if b"listening" not in line:
            sys.exit(f"sse_timing: the gateway did not start: {line!r}")
        await asyncio.sleep(1.2)  # first health probe
        summary = []
        for streams in args.streams:
            results = {"direct": {"delay": [], "jitter": []},
                       "gateway": {"delay": [], "jitter": []}}
            for r in range(args.rounds):
                for name, port in (("direct", backend_port), ("gateway", gateway_port)):
                    if args.probe:
                        s = await asyncio.get_running_loop().run_in_executor(
                            None, measure_with_probe, args.probe, port, streams)
                    else:
                        s = await measure(port, streams)
                    for k in s:
                        results[name][k].extend(s[k])
                    print(f"{streams} streams, round {r + 1} {name:8} events {len(s['delay'])}",
                          file=sys.stderr)
            print(f"\n{streams} concurrent streams x {args.events} events every "
                  f"{args.interval_ms} ms, {args.rounds} rounds, "
                  f"{'compiled' if args.probe else 'Python'} backend and client:\n")
            print("| path | events | delay p50 ms | delay p99 ms | inter-chunk jitter p50 ms | "
                  "jitter p99 ms |")
            print("|---|---:|---:|---:|---:|---:|")
            for name, s in results.items():
                print(f"| {name} | {len(s['delay'])} | {percentile(s['delay'], 50):.3f} | "
                      f"{percentile(s['delay'], 99):.3f} | {percentile(s['jitter'], 50):.3f} | "
                      f"{percentile(s['jitter'], 99):.3f} |")
            d, g = results["direct"], results["gateway"]
            summary.append((streams, percentile(d["jitter"], 99), percentile(g["jitter"], 99),
                            percentile(g["delay"], 99) - percentile(d["delay"], 99)))
        print("\n| streams | direct jitter p99 ms | gateway jitter p99 ms | gateway minus direct "
              "ms (target <= 1) | delay p99, gateway minus direct ms |")
        print("|---:|---:|---:|---:|---:|")
        for streams, dj, gj, dd in summary:
            print(f"| {streams} | {dj:.3f} | {gj:.3f} | {gj - dj:+.3f} | {dd:+.3f} |")
    finally:
        gateway.terminate()
        gateway.wait()
        server.terminate()
        server.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/src/cli/warmroute"))
    ap.add_argument("--streams", default="1,10,25,50",
                    type=lambda v: [int(x) for x in v.split(",")],
                    help="concurrent streams, a comma-separated list: one measurement each")
    ap.add_argument("--events", type=int, default=100)
    ap.add_argument("--interval-ms", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--probe", nargs="?", const=os.path.join(ROOT, "build/release/sse_probe"),
                    help="use the compiled backend and client of bench/sse_probe.cc (PATH, "
                    "default build/release/sse_probe) instead of this script's Python ones")
    ap.add_argument("--serve-backend", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_backend:
        asyncio.run(serve_backend(args.serve_backend, args.events, args.interval_ms / 1000))
    else:
        asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
