#!/usr/bin/env python3
"""How accurately `warmroute engine` holds emulated time under load.

Runs 8 replicas in one process and drives them with N concurrent streaming clients (closed loop,
requests spread round-robin over the replicas), first at 8 streams (one per replica: the
process is nearly idle) and then at 200 streams, in the same invocation. For every request the
engine knows the TTFT its timing model intends (the ideal end of the step that produced the
first token, minus the arrival: `warmroute_emulator_intended_ttft_seconds`); the client measures
the TTFT it actually saw (until the first content chunk arrived). The ratio of the two means is
the emulator's accuracy: 1.00 means the client sees exactly the modelled GPU. The engine's own
measurement (`vllm:time_to_first_token_seconds`, taken when the step's events are handed to the
HTTP stream) separates the emulator's lateness from the client's: this Python client shares the
2 cores with the emulator and, at 200 streams, parses ~15k SSE chunks/s itself.

Usage: bench/emulator_accuracy.py --bin build/release/src/cli/warmroute [--seconds 20]
Standard library only (/usr/bin/python3).
"""
import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import time

SYSTEM = ("Answer as the help desk of a large retailer. Be concise and polite; cite the policy "
          "section that applies. ") * 60  # ~1,300 tokens, shared per replica after the first


def start_engine(binary, profile, replicas):
    proc = subprocess.Popen([binary, "engine", "--port", "0", "--replicas", str(replicas),
                             "--profile", profile, "--seed", "1"],
                            stdout=subprocess.PIPE, text=True)
    ports = []
    while len(ports) < replicas:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("engine did not start")
        m = re.match(r"replica \d+ listening on [\d.]+:(\d+)", line)
        if m:
            ports.append(int(m.group(1)))
    return proc, ports


async def stream_one(port, body):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    start = time.perf_counter()
    writer.write(head + body)
    await writer.drain()
    ttft = None
    buf = b""
    while True:
        data = await reader.read(65536)
        if not data:
            break
        if ttft is None:
            buf += data
            if b'"content":"' in buf.replace(b'"content":""', b""):
                ttft = time.perf_counter() - start
    writer.close()
    return ttft


async def closed_loop(ports, streams, seconds):
    ttfts = []
    deadline = time.perf_counter() + seconds
    counter = 0

    async def worker(w):
        nonlocal counter
        while time.perf_counter() < deadline:
            counter += 1
            body = json.dumps({
                "model": "", "max_tokens": 32, "stream": True,
                "messages": [{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": f"Question {counter} from client {w}?"}],
            }).encode()
            ttft = await stream_one(ports[w % len(ports)], body)
            if ttft is not None:
                ttfts.append(ttft)

    await asyncio.gather(*(worker(w) for w in range(streams)))
    return ttfts


def scrape_intended(ports):
    """Σ and count of the intended and the engine-measured TTFT over all replicas."""
    import urllib.request
    sums = {"intended": [0.0, 0], "measured": [0.0, 0]}
    names = {"warmroute_emulator_intended_ttft_seconds": "intended",
             "vllm:time_to_first_token_seconds": "measured"}
    for port in ports:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
        for line in text.splitlines():
            for name, key in names.items():
                if line.startswith(name + "_sum"):
                    sums[key][0] += float(line.rsplit(" ", 1)[1])
                elif line.startswith(name + "_count"):
                    sums[key][1] += int(float(line.rsplit(" ", 1)[1]))
    return sums


def run(binary, profile, streams, seconds):
    proc, ports = start_engine(binary, profile, 8)
    try:
        ttfts = asyncio.run(closed_loop(ports, streams, seconds))
        sums = scrape_intended(ports)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    intended_mean = sums["intended"][0] / max(1, sums["intended"][1])
    measured_mean = sums["measured"][0] / max(1, sums["measured"][1])
    client_mean = statistics.fmean(ttfts) if ttfts else float("nan")
    return {
        "streams": streams, "requests": len(ttfts),
        "intended_ttft_ms": intended_mean * 1e3, "engine_ttft_ms": measured_mean * 1e3,
        "client_ttft_ms": client_mean * 1e3,
        "client_p99_ms": (sorted(ttfts)[int(0.99 * (len(ttfts) - 1))] * 1e3) if ttfts else 0,
        "ratio": client_mean / intended_mean if intended_mean > 0 else float("nan"),
        "engine_ratio": measured_mean / intended_mean if intended_mean > 0 else float("nan"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default="build/release/src/cli/warmroute")
    parser.add_argument("--profile", default="llama-3.1-8b-h100")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--streams", type=int, nargs="+", default=[8, 200])
    args = parser.parse_args()
    rows = [run(args.bin, args.profile, s, args.seconds) for s in args.streams]
    print(f"emulator accuracy: 8 replicas of {args.profile} in one process, "
          f"{args.seconds:.0f} s closed loop per row")
    print(f"{'streams':>7} {'requests':>8} {'intended TTFT ms':>17} {'engine TTFT ms':>15} "
          f"{'client TTFT ms':>15} {'engine/intended':>16} {'client/intended':>16}")
    for r in rows:
        print(f"{r['streams']:>7} {r['requests']:>8} {r['intended_ttft_ms']:>17.2f} "
              f"{r['engine_ttft_ms']:>15.2f} {r['client_ttft_ms']:>15.2f} "
              f"{r['engine_ratio']:>16.3f} {r['ratio']:>16.3f}")
    return 0 if all(r["requests"] > 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
