#!/usr/bin/python3
"""Several gateways live: the same fleet behind 1, 2 and 4 `warmroute serve` processes.

`warmroute engine` (4 replicas, Qwen 3's tokenizer and chat template, vLLM KV events with a replay
endpoint, 60,000 KV tokens each) behind N gateways with the same config (policy warmroute, the
model's tokenizer configured), driven by one `warmroute bench` that sends its requests to the
gateways in turn (`--url` repeated: a client's successive turns reach different gateways, as
behind a load balancer without affinity). Each run on a fresh fleet (bench/precise_live.py's
run()). Hit rate: the engines' own counters; TTFT: measured by the client, in emulated time; index
error: mean |predicted - engine-reported cached tokens| / prompt tokens over every gateway's access
log.

With --gossip on,off (the default) every run with more than one gateway is made twice: with the
gateways telling each other their placements and load (config section `gossip`, each gateway on
its own UDP port with every gateway listed as a peer) and without; --off-at 4 makes the run
without gossip at 4 gateways only.

Usage: /usr/bin/python3 bench/gateways_live.py [--gateways 1,2,4] [--modes approximate,precise]
       [--workloads support-bot,multi-turn] [--gossip on,off] [--off-at 2,4] [--requests 300]
       (and bench/precise_live.py's flags)
"""
import sys
import tempfile

from precise_live import REPLICAS, parse_args, run


def main():
    a = parse_args(__doc__, "support-bot,multi-turn", gateways="1,2,4", gossip="on,off",
                   off_at="")
    counts = [int(n) for n in a.gateways.split(",")]
    gossips = [g == "on" for g in a.gossip.split(",")]
    off_at = {int(n) for n in a.off_at.split(",")} if a.off_at else set(counts)
    tmp = tempfile.mkdtemp(prefix="wr-gateways-live-")
    print("| workload | mode | gateways | gossip | hit rate | TTFT p50 ms | TTFT p90 ms | "
          "index error | hit / 1 gateway | p50 / 1 gateway | failed |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for workload in a.workloads.split(","):
        for mode in a.modes.split(","):
            base = None
            for n in counts:
                for gossip in (gossips if n > 1 else [False]):
                    if not gossip and n > 1 and n not in off_at:
                        continue
                    r = run(a, workload, mode, tmp, gateways=n, gossip=gossip)
                    base = base or r
                    hit = r["hit"] if r["hit"] is not None else float("nan")
                    label = "" if n == 1 else "off"
                    if gossip:
                        label = f"on ({r['gossip_placements']:.0f} placements applied)"
                    print(f"| {workload} | {mode} | {n} | {label} | {hit * 100:.1f}% | "
                          f"{r['ttft50'] * 1e3:.0f} | {r['ttft90'] * 1e3:.0f} | "
                          f"{r['error'] * 100:.2f}% | {hit / base['hit']:.1%} | "
                          f"{r['ttft50'] / base['ttft50']:.2f}× | {r['failed']} |", flush=True)
    print(f"\n{REPLICAS} x {a.profile} with {a.kv} KV tokens each, engine --tokenizer (Qwen 3), "
          f"{a.requests} requests per run, policy {a.policy}, --time-scale {a.time_scale}; "
          "TTFTs in emulated time; ratios against the run with the first gateway count.")


if __name__ == "__main__":
    sys.exit(main())
