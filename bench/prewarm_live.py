#!/usr/bin/python3
"""Prewarm live: the hit-rate dip and TTFT p99 after a replica leaves or joins, with and without
prewarm.

`warmroute engine` (4 replicas of --profile with --kv KV tokens each, the built-in template and
tokenizer) behind one `warmroute serve` (policy warmroute, approximate prefix keys, the admin
API on), driven open-loop by `warmroute bench` with support-bot (--prompts system prompts of
3,000 tokens at Zipf --zipf, --rate requests per emulated second). --warmup emulated seconds
after the bench starts, then 60 s more for the "before" window, the fleet changes through the
admin API as an operator would change it:
- remove: POST /admin/backends/{name}/drain on one of the 4 (r{(seed - 1) mod 4}), then, once
  its in-flight requests have finished, DELETE /admin/backends/{name};
- add: the gateway starts with r0-r2 and POST /admin/backends adds r3 (cold).
The load goes on for 2 minutes after the change. Each run on a fresh fleet, once with
`prewarm: {enabled: false}` and once with prewarm at its defaults, except max_tokens_per_s, which
is scaled by 1 / --time-scale so that prewarm gets its default 20,000 tokens per emulated second.

Per request, the bench's results.json gives the planned arrival, the engine-reported cached
tokens, the prompt tokens (usage.prompt_tokens_details.cached_tokens, usage.prompt_tokens), the
TTFT and the backend (x-warmroute-backend). The bench's offsets are placed on the wall clock by
the gateway's access log (its arrival timestamps against the bench's send offsets), so the change
falls at a known offset. Hit rate: Σ cached / Σ prompt tokens of the client requests that arrived
in a window; windows of 60 emulated seconds before the change, after it and the minute after
that. TTFT: measured by the client, in emulated time (wall / --time-scale). Prewarm requests:
the gateway's warmroute_prewarm_requests_total{result="ok"} and warmroute_prewarm_tokens_total
at the end of the run.

Sizing (the defaults): the 100 prompts are about 305k tokens of hot prefixes, 51% of the 4
replicas' 150k-token caches and 68% of 3: a good part of the cache, yet they fit in the 3 that
remain after a removal, so the minute after it shows the transient (the prefixes only the removed
replica held, prefilled again), not a lasting loss of capacity (the simulator's table has that).
12 requests/s is 3-4 per replica, a 3,000-token prefill each when it misses: a replica of this
profile prefills about 28k tokens/s, so even if every request missed it would prefill under half
the time. At --time-scale 0.5 a run (290 emulated seconds) takes about 2.5 minutes, a seed's
four runs about 10.

Usage: /usr/bin/python3 bench/prewarm_live.py [--bin build/release/src/cli/warmroute]
       [--seeds 1] [--cases remove,add] [--rate 12] [--prompts 100] [--zipf 0.6] [--warmup 90]
       [--kv 150000] [--time-scale 0.5] [--profile llama-3.1-8b-h100]
       /usr/bin/python3 bench/prewarm_live.py --from RUNS.jsonl[,MORE.jsonl] [the run's flags]
       (the table of saved runs: each run appends its figures to runs.jsonl in its directory)
"""
import collections
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from precise_live import fleet_parser, start_engine, start_gateway

from emulator_process import terminate  # noqa: E402 (tests/integration, put on the path above)
from test_gateway import metric_sum  # noqa: E402

REPLICAS = 4
TOKEN = "prewarm-live"
WINDOW_S = 60  # emulated seconds
# Emulated seconds of load after the change: the two windows, and slack for the Poisson arrivals
# falling short of the planned duration (about 4 s per standard deviation at 12 req/s).
AFTER_S = 2 * WINDOW_S + 20
DEFAULT_PREWARM_TOKENS_PER_S = 20000  # docs/gateway.md, prewarm.max_tokens_per_s


def admin(gw, method, path, body=None):
    """The admin API's JSON answer to `method path` (urllib raises on a non-2xx status)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://{gw}{path}", data=data, method=method,
                                 headers={"Authorization": f"Bearer {TOKEN}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    return json.loads(text) if text.strip() else None


def wait_idle(gw, name, timeout_s=30):
    """Waits until backend `name` has no request in flight, as an operator waits before removing
    a drained replica; the seconds waited."""
    begin = time.monotonic()
    while time.monotonic() - begin < timeout_s:
        backends = admin(gw, "GET", "/admin/backends")["backends"]
        if all(b.get("in_flight", 0) == 0 for b in backends if b["name"] == name):
            break
        time.sleep(0.1)
    return time.monotonic() - begin


def change(case, gw, name, host):
    """Makes the change `case` to backend `name` (at `host`); the wall time just before the
    drain's or the add's call, and the seconds a removal waited for in-flight requests."""
    at = time.time()
    if case == "remove":
        admin(gw, "POST", f"/admin/backends/{name}/drain")
        waited = wait_idle(gw, name)
        admin(gw, "DELETE", f"/admin/backends/{name}")
        return at, waited
    admin(gw, "POST", "/admin/backends", {"name": name, "url": f"http://{host}"})
    return at, 0.0


def bench_start(access_log, requests):
    """Wall time (Unix seconds) of the bench's offset 0: the median over the requests, in order,
    of the gateway's arrival timestamp minus the bench's send offset (both sorted: the k-th
    request sent is the k-th to arrive, up to reordering within milliseconds)."""
    stamps = []
    with open(access_log) as f:
        for line in f:
            r = json.loads(line)
            if r.get("path") == "/v1/chat/completions":
                stamps.append(datetime.datetime.fromisoformat(
                    r["ts"].replace("Z", "+00:00")).timestamp())
    sends = sorted(r["send_s"] for r in requests if r["send_s"] is not None and r["send_s"] >= 0)
    stamps.sort()
    if not stamps or len(stamps) != len(sends):
        raise RuntimeError(f"{len(stamps)} access-log lines for {len(sends)} requests sent")
    return statistics.median(t - s for t, s in zip(stamps, sends))


def p99(values):
    """Nearest-rank 99th percentile; nan for none."""
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, math.ceil(0.99 * len(values)) - 1)]


def window(requests, begin, end, scale, backend):
    """Figures of the successful requests that arrived in [begin, end) emulated seconds: hit rate,
    TTFT p99 (emulated seconds), requests, share served by `backend`."""
    rs = [r for r in requests
          if begin <= r["arrival_s"] / scale < end and not r["error_kind"] and r["usage_reported"]]
    prompt = sum(r["prompt_tokens"] for r in rs)
    return {"hit": sum(r["cached_tokens"] for r in rs) / prompt if prompt else float("nan"),
            "ttft99": p99([r["ttft_s"] / scale for r in rs if r["ttft_s"] is not None]),
            "n": len(rs), "share": sum(r["backend"] == backend for r in rs) / max(1, len(rs)),
            "backends": dict(sorted(collections.Counter(r["backend"] for r in rs).items()))}


def run(a, case, prewarm, seed, tmp):
    """One case ("remove" or "add") with or without prewarm on a fresh fleet, the change
    a.warmup + 60 emulated seconds after the bench's start: the figures of the windows before,
    after and in the second minute after (window()), the gateway's prewarm counters, the bench's
    failed requests and where the change fell (emulated seconds of the bench's run)."""
    scale = a.time_scale
    engine, hosts = start_engine(a, REPLICAS, seed)
    changed = f"r{(seed - 1) % REPLICAS}" if case == "remove" else f"r{REPLICAS - 1}"
    serving = REPLICAS if case == "remove" else REPLICAS - 1
    tag = f"{case}-{'prewarm' if prewarm else 'off'}-{seed}"
    config = os.path.join(tmp, f"{tag}.yaml")
    log = os.path.join(tmp, f"{tag}.access.jsonl")
    with open(config, "w") as f:
        f.write(f"policy: {{name: {a.policy}}}\n")
        f.write(f"admin: {{token: {TOKEN}}}\n")
        tokens_per_s = round(DEFAULT_PREWARM_TOKENS_PER_S / scale)
        f.write(f"prewarm: {{enabled: {'true' if prewarm else 'false'}, "
                f"max_tokens_per_s: {tokens_per_s}}}\n")
        f.write("backends:\n")
        for i, h in enumerate(hosts[:serving]):
            f.write(f"  - name: r{i}\n    url: http://{h}\n")
    procs = [engine]
    try:
        gateway, gw = start_gateway(a, config, log)
        procs.insert(0, gateway)
        change_at = a.warmup + WINDOW_S  # emulated seconds after the bench's start
        out = os.path.join(tmp, tag)
        requests = math.ceil(a.rate * (change_at + AFTER_S))
        bench = [a.bin, "bench", f"--url=http://{gw}", "--workload", "support-bot",
                 "--workload-param", f"system_prompts={a.prompts}", "--workload-param",
                 f"zipf_exponent={a.zipf}", "--requests", str(requests), "--rate",
                 str(a.rate / scale), "--seed", str(seed), "--out", out, "--no-plots", "--name",
                 tag, "--timeout-s", "600"]
        launched = time.time()
        with open(os.path.join(tmp, f"{tag}.bench.log"), "w") as err:
            proc = subprocess.Popen(bench, stdout=subprocess.DEVNULL, stderr=err)
            procs.insert(0, proc)
            time.sleep(max(0.0, launched + change_at * scale - time.time()))
            changed_at, waited = change(case, gw, changed, hosts[REPLICAS - 1])
            if proc.wait() != 0:
                raise RuntimeError(f"bench failed: see {err.name}")
        with urllib.request.urlopen(f"http://{gw}/metrics", timeout=10) as r:
            metrics = r.read().decode()
    finally:
        for p in procs:
            terminate(p)
    with open(os.path.join(out, "results.json")) as f:
        doc = json.load(f)
    start = bench_start(log, doc["requests"])
    c = (changed_at - start) / scale  # the change, in emulated seconds of the bench's run
    reqs = doc["requests"]
    last = max(r["arrival_s"] for r in reqs) / scale
    if last < c + 2 * WINDOW_S:
        print(f"warning: {tag}: the last arrival is {last - c:.0f} s after the change",
              file=sys.stderr)
    r = {"before": window(reqs, c - WINDOW_S, c, scale, changed),
         "after": window(reqs, c, c + WINDOW_S, scale, changed),
         "second": window(reqs, c + WINDOW_S, c + 2 * WINDOW_S, scale, changed),
         "prewarm_ok": metric_sum(metrics, "warmroute_prewarm_requests_total", result="ok"),
         "prewarm_failed": metric_sum(metrics, "warmroute_prewarm_requests_total",
                                      result="failed"),
         "prewarm_tokens": metric_sum(metrics, "warmroute_prewarm_tokens_total"),
         "failed": doc["summary"]["failed"], "change_s": c, "waited_s": waited,
         "startup_s": start - launched}
    print(f"{tag}: change at {c:.1f} s (bench started {r['startup_s'] * 1e3:.0f} ms after launch; "
          f"drain wait {waited:.2f} s wall); hit {r['before']['hit']:.4f} -> "
          f"{r['after']['hit']:.4f} -> {r['second']['hit']:.4f}; n {r['before']['n']}/"
          f"{r['after']['n']}/{r['second']['n']}; backends {r['before']['backends']} -> "
          f"{r['after']['backends']}; prewarm {r['prewarm_ok']:.0f} "
          f"({r['prewarm_tokens']:.0f} tokens, {r['prewarm_failed']:.0f} failed); "
          f"failed {r['failed']}", file=sys.stderr, flush=True)
    return r


def per_seed(values, fmt):
    """'a / b / c (median m)' as the simulator's table gives per-seed figures; one value alone."""
    text = " / ".join(fmt(v) for v in values)
    return text if len(values) == 1 else f"{text} (median {fmt(statistics.median(values))})"


def row(case, prewarm, runs, seeds):
    """The table row of `runs`, one per seed, of one case and prewarm setting: medians over the
    seeds, the drop per seed; `seeds` labels the case."""
    def med(key, field):
        return statistics.median(r[key][field] for r in runs)

    drop = [(r["before"]["hit"] - r["after"]["hit"]) * 100 for r in runs]
    if prewarm:
        pw = (f"{statistics.median(r['prewarm_ok'] for r in runs):.0f} "
              f"({statistics.median(r['prewarm_tokens'] for r in runs) / 1e3:.0f}k tokens)")
    else:
        pw = "off"
    name = ("support-bot {p} prompts, remove one of {n} ({s})" if case == "remove" else
            "support-bot {p} prompts, add the {n}th ({s})")
    label = name.format(p=runs[0]["prompts"], n=REPLICAS, s=seeds) if not prewarm else ""
    return (f"| {label} | {'with prewarm' if prewarm else 'without'} | "
            f"{med('before', 'hit') * 100:.1f}% | {med('after', 'hit') * 100:.1f}% | "
            f"{per_seed(drop, lambda v: f'{v:.1f}')} | {med('second', 'hit') * 100:.1f}% | "
            f"{med('before', 'ttft99') * 1e3:.0f} / {med('after', 'ttft99') * 1e3:.0f} | "
            f"{med('after', 'share') * 100:.1f}% | {pw} | {sum(r['failed'] for r in runs)} |")


def table(a, results, label):
    """Prints the Markdown table of `results`: (case, prewarm) -> the runs of every seed."""
    print("| case | prewarm | hit before | hit in the 60 s after | drop in the 60 s after, pp "
          "(per seed) | hit in the second minute after | TTFT p99 60 s before / after (ms) | "
          "changed replica share after | prewarm requests | failed requests |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (case, prewarm), runs in results.items():
        print(row(case, prewarm, runs, label))
    print(f"\n{REPLICAS} x {a.profile} with {a.kv} KV tokens each (the add case: 3 serving, the "
          f"4th added), one gateway, policy {a.policy}; support-bot, {a.prompts} system prompts "
          f"at Zipf {a.zipf}, {a.rate:g} requests per emulated second open loop; change "
          f"{a.warmup + WINDOW_S:g} s after the start, load until {AFTER_S} s after it; "
          f"--time-scale {a.time_scale}, TTFTs in emulated time; {label} (workload and engine); "
          f"medians over the seeds.")


def main():
    ap = fleet_parser(__doc__, kv=150000)
    ap.add_argument("--seeds", default="1", help="workload and engine seeds, comma-separated")
    ap.add_argument("--cases", default="remove,add")
    ap.add_argument("--rate", type=float, default=12, help="requests per emulated second")
    ap.add_argument("--prompts", type=int, default=100, help="support-bot system prompts")
    ap.add_argument("--zipf", type=float, default=0.6, help="support-bot zipf_exponent")
    ap.add_argument("--warmup", type=float, default=90,
                    help="emulated seconds of load before the 60 s baseline window")
    ap.add_argument("--from", dest="saved", default="",
                    help="print the table of the runs saved in these runs.jsonl files "
                         "(comma-separated) instead of running; the other flags label it")
    a = ap.parse_args()
    results = {}
    if a.saved:
        for path in a.saved.split(","):
            with open(path) as f:
                for line in f:
                    r = json.loads(line)
                    results.setdefault((r["case"], r["prewarm"]), []).append(r)
    else:
        tmp = tempfile.mkdtemp(prefix="wr-prewarm-live-")
        print(f"runs saved in {tmp}/runs.jsonl", file=sys.stderr)
        for case in a.cases.split(","):
            if case not in ("remove", "add"):
                sys.exit(f"unknown case {case!r} (remove or add)")
            for prewarm in (False, True):
                for seed in [int(s) for s in a.seeds.split(",")]:
                    r = dict(run(a, case, prewarm, seed, tmp), case=case, prewarm=prewarm,
                             seed=seed, prompts=a.prompts)
                    with open(os.path.join(tmp, "runs.jsonl"), "a") as f:
                        f.write(json.dumps(r) + "\n")
                    results.setdefault((case, prewarm), []).append(r)
    seeds = sorted({r["seed"] for runs in results.values() for r in runs})
    label = (f"seed {seeds[0]}" if len(seeds) == 1 else
             f"seeds {seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1))
             else "seeds " + ", ".join(map(str, seeds)))
    table(a, results, label)


if __name__ == "__main__":
    sys.exit(main())
