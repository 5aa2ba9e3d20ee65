#!/usr/bin/env bash
# The N-gateway table: every policy behind 1, 2, 4 and 8 independent gateway replicas
# (`warmroute sim --gateways N`, each gateway its own router, every request sent to one of them
# at random), in approximate and in precise mode, on support-bot (1,000 prompts, Zipf 0.6),
# shared-prefix, multi-turn and the Mooncake conversation trace. 8 replicas of
# llama-3.1-70b-tp4-h100, the streams of docs/routing-results.md.
#   usage: bench/gateways_results.sh [path/to/warmroute] [policies] [workloads] > table.md
# workloads: a comma-separated subset of support_bot,shared_prefix,multi_turn,conversation (all by
# default). One core: about 25 minutes for the first three with every policy; the conversation
# trace alone takes longer (every policy's run of it is minutes at 4 and 8 gateways).
set -euo pipefail
bin=$(realpath "${1:-build/release/src/cli/warmroute}")
policies=${2:-all}
only=${3:-support_bot,shared_prefix,multi_turn,conversation}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--replicas 8 --profile llama-3.1-70b-tp4-h100 --policies "$policies" --seed 1 --no-bounds)
workloads=(
  "support_bot|support-bot, 1,000 prompts, Zipf 0.6|--workload support-bot --workload-param system_prompts=1000 --workload-param zipf_exponent=0.6 --requests 10000 --load 0.7"
  "shared_prefix|shared-prefix, 512 groups|--workload shared-prefix --workload-param groups=512 --requests 8192 --load 0.7"
  "multi_turn|multi-turn|--workload multi-turn --requests 5000 --load 0.7"
  "conversation|Mooncake conversation trace|--workload trace:workloads/traces/conversation_trace.jsonl --requests 100000 --trace-speed 1"
)
echo "Produced by \`bench/gateways_results.sh build/release/src/cli/warmroute $policies $only\`; every run is"
echo "\`warmroute sim ${common[*]} --prefix-mode MODE --gateways N\` plus the workload's flags below;"
echo "\`warmroute\`'s gateways gossip (\`--gossip on\`, the default)."
echo
for entry in "${workloads[@]}"; do
  IFS='|' read -r name title flags <<<"$entry"
  [[ ",$only," == *",$name,"* ]] || continue
  for mode in approximate precise; do
    for n in 1 2 4 8; do
      # shellcheck disable=SC2086
      "$bin" sim "${common[@]}" $flags --prefix-mode "$mode" --gateways "$n" \
        --json "$tmp/$name.$mode.$n.json" >/dev/null 2>&1
    done
  done
  echo "#### $title"
  echo
  echo "Workload flags: \`$flags\`"
  echo
  /usr/bin/python3 - "$tmp" "$name" <<'PY'
import json, sys
tmp, name = sys.argv[1], sys.argv[2]
ns = [1, 2, 4, 8]
for mode in ("approximate", "precise"):
    runs = {n: {p["name"]: p for p in json.load(open(f"{tmp}/{name}.{mode}.{n}.json"))["policies"]}
            for n in ns}
    print(f"{mode} mode: hit rate at N gateways, TTFT p50 (ms) at N = 1 and 4, and N = 4 against N = 1")
    print()
    print("| policy | hit N=1 | N=2 | N=4 | N=8 | TTFT p50 N=1 | N=4 | hit N=4 / N=1 | p50 N=4 / N=1 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for policy in runs[1]:
        r = [runs[n][policy] for n in ns]
        hit = [100 * x["hit_rate"] for x in r]
        p50 = [1000 * x["ttft_p50_s"] for x in r]
        name_cell = f"**{policy}**" if policy == "warmroute" else policy
        print(f"| {name_cell} | " + " | ".join(f"{h:.1f}%" for h in hit) +
              f" | {p50[0]:.0f} | {p50[2]:.0f} | {hit[2] / hit[0]:.1%} | {p50[2] / p50[0]:.2f}× |")
    print()
PY
done
