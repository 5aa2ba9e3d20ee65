#!/usr/bin/env python3
"""`make demo` until the full demo lands (issue 5): starts a 4-replica emulated fleet, sends the
same support-bot request twice to one replica and once to another, and prints each TTFT and the
engine-reported cached tokens — the effect prefix-aware routing exploits.

Standard library only. Exits non-zero if any step fails; stops the fleet on exit and on Ctrl-C.
"""
import argparse
import http.client
import json
import re
import signal
import subprocess
import sys
import time

SYSTEM_PROMPT = (
    "You are the support assistant of Northwind Outfitters. Follow the refund policy: items may "
    "be returned within 30 days with a receipt; sale items are final; shipping fees are refunded "
    "only when the item arrived damaged. Escalate warranty claims to a human agent. "
) * 40  # about 3,000 tokens of fixed instructions


def start_fleet(binary, replicas, profile):
    proc = subprocess.Popen(
        [binary, "engine", "--replicas", str(replicas), "--port", "0", "--profile", profile],
        stdout=subprocess.PIPE, text=True)
    ports = []
    deadline = time.time() + 30
    while len(ports) < replicas:
        line = proc.stdout.readline()
        if not line or time.time() > deadline:
            proc.kill()
            raise RuntimeError("the engine emulator did not start")
        m = re.match(r"replica (\d+) listening on [\d.]+:(\d+)", line)
        if m:
            ports.append(int(m.group(2)))
    return proc, ports


def stream_chat(port, question):
    """Sends one streaming chat request; returns (ttft_seconds, usage)."""
    body = json.dumps({
        "model": "", "max_tokens": 32, "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                     {"role": "user", "content": question}],
    })
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    start = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read().decode()}")
    ttft, usage = None, None
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            usage = chunk["usage"]
        if ttft is None and any(c.get("delta", {}).get("content") for c in chunk["choices"]):
            ttft = time.perf_counter() - start
    conn.close()
    return ttft, usage


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", default="build/release/src/cli/warmroute")
    parser.add_argument("--profile", default="llama-3.1-8b-h100")
    args = parser.parse_args()

    proc, ports = start_fleet(args.bin, 4, args.profile)
    signal.signal(signal.SIGINT, lambda *_: (proc.terminate(), sys.exit(130)))
    try:
        print(f"Emulated fleet: 4 replicas of {args.profile} on ports {ports}\n")
        rows = [
            ("replica 0, first request (cold)", ports[0], "Where is my order #1234?"),
            ("replica 0, same prefix again (warm)", ports[0], "Can I return a sale item?"),
            ("replica 1, same prefix (cold there)", ports[1], "Can I return a sale item?"),
        ]
        print(f"{'request':40} {'prompt tok':>10} {'cached tok':>10} {'TTFT ms':>9}")
        results = []
        for label, port, question in rows:
            ttft, usage = stream_chat(port, question)
            cached = usage["prompt_tokens_details"]["cached_tokens"]
            results.append((ttft, cached))
            print(f"{label:40} {usage['prompt_tokens']:>10} {cached:>10} {ttft * 1000:>9.1f}")
        (cold, _), (warm, warm_cached), (other, other_cached) = results
        print(f"\nThe warm request's TTFT is {cold / warm:.1f}x lower: it reused {warm_cached} "
              f"cached tokens. Sent elsewhere, it reused {other_cached} — that is what "
              "prefix-aware routing avoids.")
        if not (warm_cached > 0 and other_cached == 0 and warm < cold):
            print("demo: unexpected result", file=sys.stderr)
            return 1
        return 0
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
