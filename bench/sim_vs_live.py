#!/usr/bin/python3
"""The simulator against a live run of the same workload, seed and fleet, side by side.

Live: `warmroute engine` (8 replicas, --time-scale) behind `warmroute serve --policy P`, driven
by `warmroute bench`; hit rate from the engines' own counters, TTFT measured by the client.
Simulated: `warmroute sim` with the same workload parameters, seed, arrival rate (in emulated
time), profile and KV capacity, and the same policy. TTFTs of the live run are converted back to
emulated time (divided by --time-scale) before comparing.
Targets: hit rates within 3 percentage points, TTFT p50 within 15%.

Usage: /usr/bin/python3 bench/sim_vs_live.py [--bin build/release/src/cli/warmroute]
       [--policies warmroute,round_robin] [--requests 600] [--rate 20] [--time-scale 0.5]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from announce import start

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WORKLOAD = ["--workload", "support-bot", "--workload-param", "system_prompts=100",
            "--workload-param", "zipf_exponent=0.6"]


def live(a, policy, tmp):
    engine, hosts = start([a.bin, "engine", "--profile", a.profile, "--replicas", "8",
                           "--port", "0", "--kv-capacity-tokens", str(a.kv), "--time-scale",
                           str(a.time_scale), "--seed", "1"],
                          r"replica \d+ listening on (\S+)", 8)
    gw_args = [a.bin, "serve", "--port", "0", "--policy", policy, "--threads", "1",
               "--access-log", "off", "--log-level", "warn"]
    for h in hosts:
        gw_args += ["--backend", f"http://{h}"]
    gateway, gw = start(gw_args, r"listening on (\S+) ", 1)
    try:
        out = os.path.join(tmp, policy)
        bench = [a.bin, "bench", "--url", f"http://{gw[0]}", *WORKLOAD, "--requests",
                 str(a.requests), "--rate", str(a.rate / a.time_scale), "--seed", "1",
                 "--out", out, "--no-plots", "--name", policy]
        for h in hosts:
            bench += ["--engine-metrics", f"http://{h}/metrics"]
        subprocess.run(bench, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(out, "results.json")) as f:
            s = json.load(f)["summary"]
        return {"hit": s.get("engine_hit_rate"), "ttft50": s["ttft_s"]["p50"] / a.time_scale,
                "ttft99": s["ttft_s"]["p99"] / a.time_scale, "failed": s["failed"]}
    finally:
        gateway.terminate()
        engine.terminate()
        gateway.wait()
        engine.wait()


def simulated(a, policy, tmp):
    path = os.path.join(tmp, f"sim-{policy}.json")
    subprocess.run([a.bin, "sim", *WORKLOAD, "--requests", str(a.requests), "--rate",
                    str(a.rate), "--seed", "1", "--profile", a.profile, "--replicas", "8",
                    "--kv-capacity-tokens", str(a.kv), "--policies", policy, "--no-bounds",
                    "--json", path], check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        data = json.load(f)
    run = data["runs"][0] if "runs" in data else data["policies"][0]
    return run


def pick(run, *names):
    for n in names:
        cur = run
        ok = True
        for part in n.split("."):
            if isinstance(cur, dict) and part in cur:
                cur = cur[part]
            else:
                ok = False
                break
        if ok:
            return cur
    raise KeyError(f"none of {names} in the sim JSON: {sorted(run)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release/src/cli/warmroute"))
    ap.add_argument("--policies", default="warmroute,round_robin")
    ap.add_argument("--requests", type=int, default=600)
    ap.add_argument("--rate", type=float, default=20, help="requests/s in emulated time")
    ap.add_argument("--time-scale", type=float, default=0.5)
    ap.add_argument("--profile", default="llama-3.1-70b-tp4-h100")
    ap.add_argument("--kv", type=int, default=60000, help="KV capacity per replica, tokens")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="wr-sim-vs-live-")
    print("| policy | hit live | hit sim | Δ pp | TTFT p50 live ms | TTFT p50 sim ms | ratio | "
          "TTFT p99 live ms | TTFT p99 sim ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for policy in a.policies.split(","):
        l = live(a, policy, tmp)
        s = simulated(a, policy, tmp)
        s_hit = pick(s, "hit_rate", "token_hit_rate")
        s50 = pick(s, "ttft_s.p50", "ttft_p50_s")
        s99 = pick(s, "ttft_s.p99", "ttft_p99_s")
        print(f"| {policy} | {l['hit'] * 100:.1f}% | {s_hit * 100:.1f}% | "
              f"{(l['hit'] - s_hit) * 100:+.1f} | {l['ttft50'] * 1e3:.0f} | {s50 * 1e3:.0f} | "
              f"{l['ttft50'] / s50:.2f} | {l['ttft99'] * 1e3:.0f} | {s99 * 1e3:.0f} |",
              flush=True)
    print(f"\nsupport-bot, 100 prompts, Zipf 0.6, {a.requests} requests at {a.rate} req/s "
          f"(emulated), 8 x {a.profile} with {a.kv} KV tokens each; live at --time-scale "
          f"{a.time_scale}, TTFTs converted to emulated time.")


if __name__ == "__main__":
    main()
