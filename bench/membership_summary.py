#!/usr/bin/env python3
"""Summarises `warmroute sim --membership ... --json` files of several seeds as one Markdown table.

usage: bench/membership_summary.py RUN_1.json RUN_2.json ...   (one file per seed, same policies)

Per policy: the hit rate before the change and after it (median over the seeds), the drop (pp),
the recovery and settling times (s) of every seed in order, with their median, and the changed
replica's share of the requests that arrived after the change. The definitions are those of
src/sim/hit_rate_dip.h; "-" marks a seed that did not recover within the run.
"""
import json
import statistics
import sys


def pct(x):
    return "n/a" if x is None else f"{100 * x:.1f}%"


def series(values, fmt):
    shown = ["-" if v is None else fmt(v) for v in values]
    known = [v for v in values if v is not None]
    median = fmt(statistics.median(known)) if known else "-"
    return f"{' / '.join(shown)} (median {median})"


def main(paths):
    runs = [json.load(open(p)) for p in paths]
    names = [p["name"] for p in runs[0]["policies"]]
    m0 = runs[0]["policies"][0]["membership"]
    print(f"{len(runs)} seeds ({', '.join(str(r['seed']) for r in runs)}); per seed the replica "
          f"changed is chosen by the seed. Windows of {runs[0]['policies'][0]['hit_rate_series']['window_s']:g} s, "
          f"before/after over {m0['baseline_s']:g} s, recovery within {m0['tolerance_pp']:g} pp for "
          f"{m0['hold_windows']} windows.")
    print()
    print("| policy | hit before (median) | noise: before - lowest window before, pp (median) "
          "| drop, pp (per seed) | recovery to before, s (per seed) "
          "| settled to after, s (per seed) | hit after (median) "
          "| changed replica's share after (median) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for i, name in enumerate(names):
        ms, shares = [], []
        for r in runs:
            p = r["policies"][i]
            assert p["name"] == name
            ms.append(p["membership"])
            after = sum(x["requests_after_change"] for x in p["replicas"])
            shares.append(p["membership"]["requests_to_replica_after_change"] / after if after else None)
        med = lambda key: statistics.median(m[key] for m in ms)
        noise = statistics.median(100 * (m["hit_rate_before"] - m["lowest_window_before"]) for m in ms)
        print(f"| {name} | {pct(med('hit_rate_before'))} | {noise:.1f} "
              f"| {series([m['dip_pp'] for m in ms], lambda v: f'{v:.1f}')} "
              f"| {series([m['recovery_s'] for m in ms], lambda v: f'{v:g}')} "
              f"| {series([m['settle_s'] for m in ms], lambda v: f'{v:g}')} "
              f"| {pct(med('hit_rate_after'))} | {pct(statistics.median(shares))} |")


if __name__ == "__main__":
    main(sys.argv[1:])
