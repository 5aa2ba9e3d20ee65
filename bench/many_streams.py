#!/usr/bin/python3
"""`warmroute serve` holding thousands of concurrent streaming clients, with bounded memory.

Starts `warmroute engine` (8 replicas in one process, llama-3.1-8b-h100 timing: long enough
streams) and `warmroute serve` in front of it, then opens `--streams` concurrent streaming chat
requests through the gateway in steps, holding each open while it streams. After each step it
reports the gateway's resident memory (VmRSS from /proc) and how many streams have delivered
their first event; at the end, that every stream completed with [DONE] and the memory per
stream.

Usage: /usr/bin/python3 bench/many_streams.py [--bin build/release/src/cli/warmroute]
       [--streams 5000] [--steps 1000,2500,5000] [--max-tokens 400]
"""
import argparse
import asyncio
import json
import os
import re
import resource
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def stream(port, i, max_tokens, state):
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    except OSError as e:
        state["errors"].append(str(e))
        return
    body = json.dumps({"model": "", "stream": True, "max_tokens": max_tokens, "ignore_eos": True,
                       "messages": [{"role": "user",
                                     "content": f"Stream {i}: tell me a long story."}]}).encode()
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" %
                 (len(body), body))
    try:
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            state["errors"].append(head[:100].decode(errors="replace"))
            return
        first = True
        tail = b""
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if first:
                state["first"] += 1
                first = False
            tail = (tail + data)[-64:]
            if b"0\r\n\r\n" in tail:
                break
        if b"[DONE]" in tail:
            state["done"] += 1
        else:
            state["errors"].append("stream ended without [DONE]")
    except (OSError, asyncio.IncompleteReadError) as e:
        state["errors"].append(str(e))
    finally:
        writer.close()


async def main_async(args):
    engine = subprocess.Popen(
        [args.bin, "engine", "--profile", "llama-3.1-8b-h100", "--replicas", "8", "--port", "0",
         "--max-num-seqs", "1024", "--no-jitter"], stdout=subprocess.PIPE, text=True)
    urls = []
    while len(urls) < 8:
        line = engine.stdout.readline()
        m = re.match(r"replica \d+ listening on (\S+)", line)
        if m:
            urls.append("http://" + m.group(1))
    flags = [args.bin, "serve", "--port", "0", "--threads", "2", "--log-level", "warn",
             "--access-log", "off", "--policy", "least_request"]
    for u in urls:
        flags += ["--backend", u]
    gateway = subprocess.Popen(flags, stdout=subprocess.PIPE, text=True)
    port = int(re.search(r":(\d+) ", gateway.stdout.readline()).group(1))
    await asyncio.sleep(1.5)
    state = {"first": 0, "done": 0, "errors": []}
    tasks = []
    base = rss_kb(gateway.pid)
    print(f"| open streams | first event received | gateway RSS MB | KB per stream |")
    print("|---:|---:|---:|---:|")
    print(f"| 0 | 0 | {base / 1024:.1f} | |")
    opened = 0
    peak = base
    for step in args.steps:
        while opened < step:
            tasks.append(asyncio.create_task(stream(port, opened, args.max_tokens, state)))
            opened += 1
            if opened % 200 == 0:
                await asyncio.sleep(0.05)
        await asyncio.sleep(3)
        now = rss_kb(gateway.pid)
        peak = max(peak, now)
        print(f"| {opened} | {state['first']} | {now / 1024:.1f} | "
              f"{(now - base) / opened:.1f} |", flush=True)
    started = time.time()
    await asyncio.gather(*tasks)
    end = rss_kb(gateway.pid)
    print(f"\nall {opened} streams ended in {time.time() - started:.0f} s more: {state['done']} "
          f"completed with [DONE], {len(state['errors'])} errors"
          f"{' (first: ' + state['errors'][0] + ')' if state['errors'] else ''}; gateway RSS "
          f"peak {peak / 1024:.1f} MB, after {end / 1024:.1f} MB")
    gateway.terminate()
    engine.terminate()
    gateway.wait()
    engine.wait()
    if state["errors"] or state["done"] != opened:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/src/cli/warmroute"))
    ap.add_argument("--steps", default="1000,2500,5000")
    ap.add_argument("--max-tokens", type=int, default=400)
    args = ap.parse_args()
    args.steps = [int(s) for s in args.steps.split(",")]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
