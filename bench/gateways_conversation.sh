#!/usr/bin/env bash
# The Mooncake conversation trace behind 1 and 4 gateway replicas (docs/many-gateways.md):
# warmroute with and without placement gossip, and sglang_cache_aware, in both prefix modes, on
# the trace's own timestamps and with each arrival moved by U(0, 3) s — the trace gives its
# requests 3-second ticks, about 10 of them on one instant, which 4 gateways decide without
# seeing each other's decisions whatever they share.
#   usage: bench/gateways_conversation.sh [path/to/warmroute] > table.md
# 8 replicas of llama-3.1-70b-tp4-h100, seed 1. About 20 minutes on one core.
set -euo pipefail
bin=$(realpath "${1:-build/release/src/cli/warmroute}")
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--replicas 8 --profile llama-3.1-70b-tp4-h100 --seed 1 --no-bounds
        --workload trace:workloads/traces/conversation_trace.jsonl --requests 100000
        --trace-speed 1)
for jitter in 0 3; do
  for mode in approximate precise; do
    for n in 1 4; do
      "$bin" sim "${common[@]}" --trace-jitter-s "$jitter" --prefix-mode "$mode" --gateways "$n" \
        --policies warmroute,sglang_cache_aware --json "$tmp/$jitter.$mode.$n.on.json" \
        >/dev/null 2>&1
    done
    "$bin" sim "${common[@]}" --trace-jitter-s "$jitter" --prefix-mode "$mode" --gateways 4 \
      --policies warmroute --gossip off --json "$tmp/$jitter.$mode.4.off.json" >/dev/null 2>&1
  done
done
echo "Every run is \`warmroute sim ${common[*]} --trace-jitter-s J --prefix-mode MODE"
echo "--gateways N --policies warmroute,sglang_cache_aware\` (gossip on for warmroute, its default"
echo "with several gateways; \`--gossip off --policies warmroute\` for the rows without it)."
echo
/usr/bin/python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
def load(j, mode, n, g):
    return {p["name"]: p for p in json.load(open(f"{tmp}/{j}.{mode}.{n}.{g}.json"))["policies"]}
print("| arrivals | mode | policy | hit N=1 | N=4 | TTFT p50 ms N=1 | N=4 | TTFT p90 ms N=1 | N=4 "
      "| hit N=4 / N=1 | p50 N=4 / N=1 |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for j, label in (("0", "trace"), ("3", "trace + U(0, 3 s)")):
    for mode in ("approximate", "precise"):
        one, four, off = load(j, mode, 1, "on"), load(j, mode, 4, "on"), load(j, mode, 4, "off")
        rows = [("**warmroute**", one["warmroute"], four["warmroute"]),
                ("warmroute, no gossip", one["warmroute"], off["warmroute"]),
                ("sglang_cache_aware", one["sglang_cache_aware"], four["sglang_cache_aware"])]
        for name, a, b in rows:
            print(f"| {label} | {mode} | {name} | {100 * a['hit_rate']:.1f}% | "
                  f"{100 * b['hit_rate']:.1f}% | {1000 * a['ttft_p50_s']:,.0f} | "
                  f"{1000 * b['ttft_p50_s']:,.0f} | {1000 * a['ttft_p90_s']:,.0f} | "
                  f"{1000 * b['ttft_p90_s']:,.0f} | {b['hit_rate'] / a['hit_rate']:.1%} | "
                  f"{b['ttft_p50_s'] / a['ttft_p50_s']:.2f}× |")
PY
