#!/usr/bin/env python3
"""Summarises `warmroute sim --membership ... --json` runs with and without prewarm as Markdown rows.

usage: bench/prewarm_summary.py CASE OFF_1.json,OFF_2.json,... ON_1.json,ON_2.json,...
       (one file per seed, warmroute only; OFF with --no-prewarm, ON with prewarm)

Prints one table row per mode (without, with prewarm): medians over the seeds of the hit rate in
the baseline before the change, in the 60 s after it, and at the end of the run (the new steady
state); the drop in the 60 s after (before - 60 s after, pp, per seed); the lowest window's drop
(the `dip` of src/sim/hit_rate_dip.h, per seed); TTFT p99 of the requests that arrived in the
60 s before and after the change; the changed replica's share of the requests after the change;
prewarm requests and their prompt tokens. Definitions: src/sim/hit_rate_dip.h, run_result.h.
"""
import json
import statistics
import sys


def pct(x):
    return f"{100 * x:.1f}%"


def per_seed(values, fmt):
    return f"{' / '.join(fmt(v) for v in values)} (median {fmt(statistics.median(values))})"


def row(case, mode, paths):
    ms, shares, prewarm = [], [], []
    for path in paths:
        run = json.load(open(path))["policies"][0]
        assert run["name"] == "warmroute", path
        m = run["membership"]
        ms.append(m)
        after = sum(x["requests_after_change"] for x in run["replicas"])
        shares.append(m["requests_to_replica_after_change"] / after if after else 0.0)
        prewarm.append(m["prewarm"])
    med = lambda key: statistics.median(m[key] for m in ms)
    requests = statistics.median(p["finished"] for p in prewarm)
    tokens = statistics.median(p["prompt_tokens"] for p in prewarm)
    pw = f"{requests:.0f} ({tokens / 1000:.0f}k tokens)" if prewarm[0]["enabled"] else "off"
    print(f"| {case} | {mode} | {pct(med('hit_rate_before'))} | {pct(med('hit_rate_first_minute'))} "
          f"| {per_seed([m['first_minute_drop_pp'] for m in ms], lambda v: f'{v:.1f}')} "
          f"| {pct(med('hit_rate_after'))} "
          f"| {per_seed([100 * (m['hit_rate_after'] - m['hit_rate_first_minute']) for m in ms], lambda v: f'{v:.1f}')} "
          f"| {per_seed([m['dip_pp'] for m in ms], lambda v: f'{v:.1f}')} "
          f"| {1000 * med('ttft_p99_minute_before_s'):.0f} / {1000 * med('ttft_p99_minute_after_s'):.0f} "
          f"| {pct(statistics.median(shares))} | {pw} |")


def main(case, off, on):
    row(case, "without", off.split(","))
    row("", "with prewarm", on.split(","))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
