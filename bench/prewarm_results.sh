#!/usr/bin/env bash
# The prewarm table of docs/prewarm.md: the hit rate and TTFT p99 in the minute after one of 8
# replicas joins or leaves, for warmroute without and with prewarm (routing/prewarm_planner.h),
# in `warmroute sim`; the same workloads, fleet, load and changes as bench/membership_change.sh,
# and support-bot on 12 replicas, whose 11 hold its prompts as 12 do (a removal's transient
# alone, without the lasting loss of cache of the 8-replica fleet).
#   usage: bench/prewarm_results.sh [path/to/warmroute] > /tmp/p.md
# Prints the table's header and one pair of rows per case (bench/prewarm_summary.py). About 6
# minutes on one core (the conversation trace's runs take ~15 s each).
set -euo pipefail
bin=$(realpath "${1:-build/release/src/cli/warmroute}")
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fleet=(--profile llama-3.1-70b-tp4-h100 --policies warmroute --no-bounds)
bot1000=(--workload support-bot --workload-param system_prompts=1000
         --workload-param zipf_exponent=0.6 --load 0.7 --hit-window-s 10 --dip-baseline-s 120)
conversation=(--replicas 8 --workload trace:workloads/traces/conversation_trace.jsonl --requests 100000
              --hit-window-s 30 --dip-baseline-s 300)

case_() {  # case_ TITLE NAME "SEEDS" ARGS...: without and with prewarm over the seeds
  local title=$1 name=$2 seeds=$3
  shift 3
  local off=() on=()
  for seed in $seeds; do
    "$bin" sim "${fleet[@]}" --seed "$seed" "$@" --no-prewarm --json "$out/${name}_off_$seed.json" \
      >/dev/null 2>&1
    "$bin" sim "${fleet[@]}" --seed "$seed" "$@" --json "$out/${name}_on_$seed.json" >/dev/null 2>&1
    off+=("$out/${name}_off_$seed.json")
    on+=("$out/${name}_on_$seed.json")
  done
  python3 bench/prewarm_summary.py "$title" "$(IFS=,; echo "${off[*]}")" "$(IFS=,; echo "${on[*]}")"
}

echo '| case | prewarm | hit before | hit in the 60 s after | drop in the 60 s after, pp (per seed) | hit after (new steady state) | 60 s after below the new steady state, pp (per seed) | lowest window drop, pp (per seed) | TTFT p99 60 s before / after (ms) | changed replica share after | prewarm requests |'
echo '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |'
case_ "support-bot 1,000 prompts, remove one of 8 at 480 s (seeds 1-5)" bot1000_remove "1 2 3 4 5" \
  --replicas 8 --requests 20000 "${bot1000[@]}" --membership remove@480
case_ "support-bot 1,000 prompts, add the 8th at 480 s (seeds 1-5)" bot1000_add "1 2 3 4 5" \
  --replicas 8 --requests 20000 "${bot1000[@]}" --membership add@480
# 12 replicas at the same load take 1.5 times the requests per second: 30,000 requests span as
# long a run as 20,000 on 8.
case_ "support-bot 1,000 prompts, remove one of 12 at 480 s (seeds 1-5)" bot1000_remove12 \
  "1 2 3 4 5" --replicas 12 --requests 30000 "${bot1000[@]}" --membership remove@480
case_ "support-bot 1,000 prompts, add the 12th at 480 s (seeds 1-5)" bot1000_add12 "1 2 3 4 5" \
  --replicas 12 --requests 30000 "${bot1000[@]}" --membership add@480
case_ "conversation trace, remove one of 8 at 1,800 s (seeds 1-3)" conversation_remove "1 2 3" \
  "${conversation[@]}" --membership remove@1800
case_ "conversation trace, add the 8th at 1,800 s (seeds 1-3)" conversation_add "1 2 3" \
  "${conversation[@]}" --membership add@1800
