#!/usr/bin/python3
"""A flooding tenant against a quiet one: how much does the quiet tenant's TTFT rise?

Fleet: `warmroute engine` (--replicas 2, llama-3.1-8b-h100 timing) behind `warmroute serve` with
two tenants, each with its API key, and admission capped at --max-in-flight (the fleet's
capacity, so weighted-fair admission decides under saturation). Load: `warmroute bench`
processes, one per tenant, open loop, the `unique` workload (no shared prefixes: every request
is a full prefill, the worst case for interference).

Phases, each with fresh processes:
  alone      the quiet tenant only (quiet rate)
  limited    quiet + flood at 10x its rate limit (flood's requests_per_s = --flood-limit)
  unlimited  the same flood with no limit on the flood tenant (what the limit protects from)
Target: in `limited`, the quiet tenant's TTFT p50 rises by at most 10% over `alone`.

Usage: /usr/bin/python3 bench/tenant_flood.py [--bin build/release/src/cli/warmroute]
       [--quiet-rate 4] [--flood-limit 4] [--seconds 20] [--max-in-flight 32] [--repeat 1]
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

from announce import start

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KEYS = {"quiet": "sk-quiet-bench", "flood": "sk-flood-bench"}


def gateway_config(hosts, flood_limit, max_in_flight):
    flood = {"name": "flood", "api_keys_sha256": [hashlib.sha256(KEYS["flood"].encode()).hexdigest()]}
    if flood_limit:
        flood["rate_limits"] = {"requests_per_s": flood_limit}
    return {
        "listen": {"host": "127.0.0.1", "port": 0, "threads": 1},
        "backends": [{"url": f"http://{h}"} for h in hosts],
        "admission": {"max_in_flight": max_in_flight, "max_queue": 4096},
        "observability": {"access_log": "off"},
        "tenancy": {"salt_secret": "tenant-flood-benchmark-secret"},
        "tenants": [
            {"name": "quiet", "api_keys_sha256": [hashlib.sha256(KEYS["quiet"].encode()).hexdigest()]},
            flood,
        ],
    }


def bench_args(a, url, tenant, rate, requests, out, seed):
    return [a.bin, "bench", "--url", url, "--api-key", KEYS[tenant], "--workload", "unique",
            "--requests", str(requests), "--rate", str(rate), "--seed", str(seed), "--out", out,
            "--no-plots", "--name", tenant, "--timeout-s", "120"]


def phase(a, name, tmp, flood_rate, flood_limit):
    engine, hosts = start([a.bin, "engine", "--profile", "llama-3.1-8b-h100", "--replicas", "2",
                           "--port", "0", "--seed", "1"], r"replica \d+ listening on (\S+)", 2,
                          stderr=subprocess.DEVNULL)
    config_path = os.path.join(tmp, f"{name}.yaml")
    with open(config_path, "w") as f:
        json.dump(gateway_config(hosts, flood_limit, a.max_in_flight), f)
    gateway, gw = start([a.bin, "serve", "--config", config_path, "--port", "0"],
                        r"listening on (\S+) ", 1, stderr=subprocess.DEVNULL)
    url = f"http://{gw[0]}"
    try:
        quiet_out = os.path.join(tmp, name, "quiet")
        procs = [subprocess.Popen(bench_args(a, url, "quiet", a.quiet_rate,
                                             int(a.quiet_rate * a.seconds), quiet_out, 1),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        flood_out = os.path.join(tmp, name, "flood")
        if flood_rate:
            procs.append(subprocess.Popen(
                bench_args(a, url, "flood", flood_rate, int(flood_rate * a.seconds), flood_out, 2),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for p in procs:
            if p.wait() != 0:
                raise RuntimeError(f"{name}: warmroute bench exited with {p.returncode}")
        with open(os.path.join(quiet_out, "results.json")) as f:
            quiet = json.load(f)["summary"]
        flood = None
        if flood_rate:
            with open(os.path.join(flood_out, "results.json")) as f:
                flood = json.load(f)["summary"]
        return quiet, flood
    finally:
        for p in (gateway, engine):
            p.terminate()
            p.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--bin", default=os.path.join(ROOT, "build/release/src/cli/warmroute"))
    p.add_argument("--quiet-rate", type=float, default=4)
    p.add_argument("--flood-limit", type=float, default=4)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--max-in-flight", type=int, default=32)
    p.add_argument("--repeat", type=int, default=1, help="runs of each phase (medians reported)")
    a = p.parse_args()
    flood_rate = 10 * a.flood_limit
    results = {"alone": [], "limited": [], "unlimited": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.repeat):
            for name, rate, limit in (("alone", 0, a.flood_limit),
                                      ("limited", flood_rate, a.flood_limit),
                                      ("unlimited", flood_rate, 0)):
                quiet, flood = phase(a, f"{name}{r}", tmp, rate, limit)
                results[name].append((quiet, flood))
                fl = ""
                if flood:
                    fl = (f"; flood: {flood['succeeded']} ok, {flood['failed']} refused/failed "
                          f"of {flood['sent']}")
                print(f"{name:9} run {r}: quiet TTFT p50 {quiet['ttft_s']['p50'] * 1e3:7.1f} ms "
                      f"p99 {quiet['ttft_s']['p99'] * 1e3:7.1f} ms, {quiet['succeeded']}/"
                      f"{quiet['sent']} ok{fl}", flush=True)
    p50 = {k: statistics.median(q["ttft_s"]["p50"] for q, _ in v) for k, v in results.items()}
    p99 = {k: statistics.median(q["ttft_s"]["p99"] for q, _ in v) for k, v in results.items()}
    print(f"\nquiet tenant ({a.quiet_rate:g} req/s) vs a flood at {flood_rate:g} req/s "
          f"(10x its limit of {a.flood_limit:g} req/s), {a.seconds:g} s per phase, "
          f"medians of {a.repeat} run(s):")
    print("| phase | quiet TTFT p50 (ms) | p99 (ms) | p50 vs alone |")
    print("|---|---:|---:|---:|")
    for k in ("alone", "limited", "unlimited"):
        print(f"| {k} | {p50[k] * 1e3:.1f} | {p99[k] * 1e3:.1f} | {p50[k] / p50['alone']:.3f}x |")
    rise = p50["limited"] / p50["alone"] - 1
    print(f"\nTTFT p50 rise under a limited flood: {rise * 100:+.1f}% (target <= +10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
