#!/usr/bin/python3
"""Precise mode live: index accuracy and routing, approximate against precise, on real processes.

`warmroute engine` (4 replicas, Qwen 3's real tokenizer and chat template via --tokenizer, vLLM
KV events with a replay endpoint, a small KV cache so that prefixes compete for it) behind
`warmroute serve` with the same tokenizer configured for the model, driven by `warmroute bench`.
Each workload runs twice on a fresh fleet: prefix_key.mode approximate (text keys, the index
learns from routing and reported cached tokens) and precise (token keys, the index fed by the
engines' KV events). Per request the gateway's access log gives the predicted cached tokens, the
engine-reported cached tokens and the prompt tokens; the index error is
mean(|predicted - reported| / prompt tokens) over the requests with usage.
Hit rate: the engines' own counters; TTFT: measured by the client, in emulated time. Event lag:
the gateway's warmroute_kv_event_lag_seconds (engine timestamp of a batch to its application to
the index, wall time), mean and the histogram buckets holding the median and the 99th percentile.

Usage: /usr/bin/python3 bench/precise_live.py [--bin build/release/src/cli/warmroute]
       [--tokenizer build/release/src/core/tokenize/testdata/qwen3] [--requests 300]
       [--workloads support-bot,multi-turn,conversation-trace,llmd-73] [--policy warmroute]
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request

from announce import start

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from emulator_process import free_tcp_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODEL = "Qwen/Qwen3-8B"
REPLICAS = 4

# name -> (bench workload flags, arrival rate in emulated requests/s)
WORKLOADS = {
    "support-bot": (["--workload", "support-bot", "--workload-param", "system_prompts=60",
                     "--workload-param", "zipf_exponent=0.6"], 6),
    "multi-turn": (["--workload", "multi-turn"], 6),
    # SGLang's generated-shared-prefix shape scaled to 300 requests: 16 groups of a 2,048-token
    # system prompt, each request a new 128-token question.
    "shared-prefix": (["--workload", "shared-prefix", "--workload-param", "groups=16"], 6),
    "conversation-trace": (["--workload",
                            "trace:" + os.path.join(ROOT, "workloads/traces/conversation_trace.jsonl")],
                           None),
    # llm-d's 73-capacity shape scaled to this fleet: 15 groups of 5 users (6,000 + 1,200
    # tokens each) keep 15 x 12,000 = 180,000 tokens resident, 75% of 4 x 60,000 KV tokens (theirs:
    # 150 groups, 73% of 8 x 307,328).
    "llmd-73": (["--workload", "llmd-73", "--workload-param", "groups=15"], 3),
}


def event_lag(host):
    """(mean, p50 bucket, p99 bucket) of warmroute_kv_event_lag_seconds over every backend, in
    seconds, from the gateway's /metrics (None when no event was applied)."""
    with urllib.request.urlopen(f"http://{host}/metrics", timeout=10) as r:
        text = r.read().decode()
    total, count, buckets = 0.0, 0.0, {}
    for line in text.splitlines():
        if line.startswith("warmroute_kv_event_lag_seconds_sum"):
            total += float(line.split()[-1])
        elif line.startswith("warmroute_kv_event_lag_seconds_count"):
            count += float(line.split()[-1])
        elif line.startswith("warmroute_kv_event_lag_seconds_bucket"):
            le = float(re.search(r'le="([^"]+)"', line).group(1))
            buckets[le] = buckets.get(le, 0.0) + float(line.split()[-1])
    if count == 0:
        return None
    def at(q):
        return next(le for le in sorted(buckets) if buckets[le] >= q * count)
    return total / count, at(0.5), at(0.99)


def metric(host, name, labels=""):
    """The sum of the samples of `name` on http://host/metrics whose labels contain `labels`."""
    with urllib.request.urlopen(f"http://{host}/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith(name + "{") and labels in line)


def scrape_until(host, stop):
    while not stop.wait(1.0):
        try:
            event_lag(host)
        except OSError:
            pass


def start_engine(a, replicas, seed, *flags):
    """(process, [HOST:PORT of each replica]) of `warmroute engine` with `replicas` replicas of
    a.profile serving MODEL, a.kv KV tokens each, at a.time_scale, step jitter seeded by `seed`;
    `flags`: more engine flags."""
    return start([a.bin, "engine", "--profile", a.profile, "--model", MODEL, "--replicas",
                  str(replicas), "--port", "0", "--kv-capacity-tokens", str(a.kv), "--time-scale",
                  str(a.time_scale), "--seed", str(seed), *flags],
                 r"replica \d+ listening on (\S+)", replicas)


def start_gateway(a, config, access_log):
    """(process, HOST:PORT) of `warmroute serve --config config` on one thread, its access log
    written to the file `access_log`."""
    proc, hosts = start([a.bin, "serve", "--config", config, "--port", "0", "--threads", "1",
                         "--access-log", access_log, "--log-level", "warn"],
                        r"listening on (\S+) ", 1)
    return proc, hosts[0]


def write_config(a, path, mode, hosts, pub, replay):
    """The gateways' config: policy a.policy, prefix_key.mode `mode`, the replicas at `hosts`
    with their KV events (publishers from port `pub`, replay endpoints from `replay`) unless the
    mode is approximate."""
    with open(path, "w") as f:
        f.write(f"policy: {{name: {a.policy}}}\n")
        f.write(f"prefix_key: {{mode: {mode}}}\n")
        f.write(f"models:\n  - {{name: {MODEL}, tokenizer: {a.tokenizer}, block_size: 16}}\n")
        f.write("backends:\n")
        for i, h in enumerate(hosts):
            f.write(f"  - name: r{i}\n    url: http://{h}\n")
            if mode != "approximate":
                f.write(f"    kv_events: {{endpoint: 'tcp://127.0.0.1:{pub + i}', topic: kv, "
                        f"replay_endpoint: 'tcp://127.0.0.1:{replay + i}'}}\n")


def free_udp_ports(n):
    """n UDP ports free on 127.0.0.1 a moment ago."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def run(a, workload, mode, tmp, gateways=1, gossip=False):
    """One fleet, `gateways` gateway processes with the same config (the bench sends its requests
    to them in turn), one bench run; the figures (bench/gateways_live.py runs it with several).
    `gossip`: the gateways tell each other their placements (config section `gossip`, each on
    its own UDP port, every gateway listed as a peer)."""
    flags, rate = WORKLOADS[workload]
    pub = free_tcp_port(2 * REPLICAS)
    replay = pub + REPLICAS
    events = json.dumps({"enable_kv_cache_events": True, "publisher": "zmq",
                         "endpoint": f"tcp://127.0.0.1:{pub}",
                         "replay_endpoint": f"tcp://127.0.0.1:{replay}", "topic": "kv"})
    engine, hosts = start_engine(a, REPLICAS, 1, "--tokenizer", a.tokenizer,
                                 "--kv-events-config", events)
    tag = f"{workload}-{mode}-{gateways}{'-gossip' if gossip else ''}"
    logs = [os.path.join(tmp, f"{tag}.{g}.access.jsonl") for g in range(gateways)]
    configs = [os.path.join(tmp, f"{tag}.{g}.yaml") for g in range(gateways)]
    ports = free_udp_ports(gateways)
    for g, config in enumerate(configs):
        write_config(a, config, mode, hosts, pub, replay)
        if gossip:
            with open(config, "a") as f:
                peers = ", ".join(f"'127.0.0.1:{p}'" for p in ports)
                f.write(f"gossip: {{port: {ports[g]}, host: 127.0.0.1, peers: [{peers}]}}\n")
    procs, gw = [], []
    for config, log in zip(configs, logs):
        proc, host = start_gateway(a, config, log)
        procs.append(proc)
        gw.append(host)

    try:
        # A backend's lag series appear at the first scrape of /metrics after its first event,
        # as Prometheus would scrape: every second here.
        stop = threading.Event()
        scraper = threading.Thread(target=scrape_until, args=(gw[0], stop), daemon=True)
        scraper.start()
        out = os.path.join(tmp, tag)
        bench = [a.bin, "bench", *[f"--url=http://{h}" for h in gw], *flags, "--requests",
                 str(a.requests), "--seed", "1", "--out", out, "--no-plots", "--name", mode,
                 "--model", MODEL, "--timeout-s", "600"]
        if rate is not None:
            bench += ["--rate", str(rate / a.time_scale)]
        else:
            bench += ["--trace-speed", str(1 / a.time_scale)]
        for h in hosts:
            bench += ["--engine-metrics", f"http://{h}/metrics"]
        subprocess.run(bench, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(out, "results.json")) as f:
            s = json.load(f)["summary"]
        stop.set()
        scraper.join()
        lag = event_lag(gw[0])
        placements = sum(metric(h, "warmroute_gossip_placements_total", 'result="applied"')
                         for h in gw)
    finally:
        for proc in [*procs, engine]:
            proc.terminate()
            proc.wait()
    errors, modes = [], {}
    for log in logs:
        with open(log) as f:
            for line in f:
                r = json.loads(line)
                if r.get("cached_tokens") is None or not r.get("prompt_tokens"):
                    continue
                errors.append(abs(r["predicted_cached_tokens"] - r["cached_tokens"]) /
                              r["prompt_tokens"])
                modes[r.get("prefix_key", "?")] = modes.get(r.get("prefix_key", "?"), 0) + 1
    return {"error": statistics.mean(errors) if errors else float("nan"), "n": len(errors),
            "keys": modes, "hit": s.get("engine_hit_rate"),
            "ttft50": s["ttft_s"]["p50"] / a.time_scale, "ttft90": s["ttft_s"]["p90"] / a.time_scale,
            "failed": s["failed"], "lag": lag, "gossip_placements": placements}


def fleet_parser(doc, **defaults):
    """An ArgumentParser with the flags of a live fleet: those start_engine() and start_gateway()
    read (--bin, --time-scale, --profile, --kv) and the gateway's --policy; `defaults`: other
    defaults for them, name -> value."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/src/cli/warmroute"))
    ap.add_argument("--policy", default="warmroute")
    ap.add_argument("--time-scale", type=float, default=0.5)
    ap.add_argument("--profile", default="llama-3.1-8b-h100")
    ap.add_argument("--kv", type=int, default=60000, help="KV capacity per replica, tokens")
    ap.set_defaults(**defaults)
    return ap


def parse_args(doc, workloads, **more):
    """The flags run() reads, plus --workloads (default `workloads`) and --modes; `more`: extra
    flags as name -> default string."""
    ap = fleet_parser(doc)
    ap.add_argument("--tokenizer",
                    default=os.path.join(ROOT, "build/release/src/core/tokenize/testdata/qwen3"))
    ap.add_argument("--workloads", default=workloads)
    ap.add_argument("--modes", default="approximate,precise")
    ap.add_argument("--requests", type=int, default=300)
    for name, default in more.items():
        ap.add_argument(f"--{name.replace('_', '-')}", dest=name, default=default)
    a = ap.parse_args()
    a.tokenizer = os.path.abspath(a.tokenizer)
    for w in a.workloads.split(","):
        if w not in WORKLOADS:
            sys.exit(f"unknown workload {w!r} (one of {', '.join(WORKLOADS)})")
    return a


def main():
    a = parse_args(__doc__, ",".join(WORKLOADS))
    tmp = tempfile.mkdtemp(prefix="wr-precise-live-")
    print("| workload | mode | index error | requests | keys | hit rate | TTFT p50 ms | "
          "TTFT p90 ms | failed | event lag mean ms (p50, p99 bucket) |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---|")
    for workload in a.workloads.split(","):
        for mode in a.modes.split(","):
            r = run(a, workload, mode, tmp)
            keys = ", ".join(f"{k} {v}" for k, v in sorted(r["keys"].items()))
            hit = f"{r['hit'] * 100:.1f}%" if r["hit"] is not None else "n/a"
            lag = r["lag"]
            lag = (f"{lag[0] * 1e3:.2f} (≤ {lag[1] * 1e3:g}, ≤ {lag[2] * 1e3:g})"
                   if lag else "")
            print(f"| {workload} | {mode} | {r['error'] * 100:.2f}% | {r['n']} | {keys} | {hit} | "
                  f"{r['ttft50'] * 1e3:.0f} | {r['ttft90'] * 1e3:.0f} | {r['failed']} | {lag} |",
                  flush=True)
    print(f"\n{REPLICAS} x {a.profile} with {a.kv} KV tokens each, engine --tokenizer (Qwen 3), "
          f"{a.requests} requests per run, policy {a.policy}, --time-scale {a.time_scale}; "
          "TTFTs in emulated time.")


if __name__ == "__main__":
    sys.exit(main())
