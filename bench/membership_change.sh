#!/usr/bin/env bash
# Regenerates docs/membership-changes.md: the hit-rate dip and recovery when
# one of 8 replicas is added or removed mid-run, for warmroute, consistent_hash and
# sglang_cache_aware, in `warmroute sim` (every policy of one invocation sees the same request
# stream and loses or gains the same replica, chosen by the seed).
#   usage: bench/membership_change.sh [path/to/warmroute] > /tmp/m.md && mv /tmp/m.md docs/membership-changes.md
# Prints the page's hand-written part (everything down to its "## Measurements" heading: the
# summary and reading, to be checked against the new figures), then for each case seed 1's full
# tables and hit-rate plot and a summary over several seeds (bench/membership_summary.py). Plots
# go to docs/img/membership/. About 6 minutes on one core.
set -euo pipefail
bin=$(realpath "${1:-build/release/src/cli/warmroute}")
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"  # so that the commands printed below use paths relative to the repository
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
img="$root/docs/img/membership"
mkdir -p "$img"
# --no-prewarm: the dip as it is without prewarm and handoff (docs/prewarm.md measures those).
fleet=(--replicas 8 --profile llama-3.1-70b-tp4-h100
       --policies warmroute,consistent_hash,sglang_cache_aware --no-bounds --no-prewarm)

case_() {  # case_ TITLE NAME "SEEDS" ARGS...: one workload and change over several seeds
  local title=$1 name=$2 seeds=$3
  shift 3
  local jsons=()
  for seed in $seeds; do
    local extra=()
    [[ $seed == 1 ]] && extra=(--markdown "$out/$name.md" --plots "$out/$name")
    "$bin" sim "${fleet[@]}" --seed "$seed" "$@" --json "$out/${name}_$seed.json" "${extra[@]}" \
      >"$out/${name}_$seed.txt" 2>&1
    jsons+=("$out/${name}_$seed.json")
  done
  cp "$out/$name/hit_rate_series.png" "$img/$name.png"
  echo "### $title"
  echo
  echo '```sh'
  echo "warmroute sim ${fleet[*]} --seed SEED $*    # SEED in: $seeds"
  echo '```'
  echo
  echo "**Seed 1.**"
  echo
  cat "$out/$name.md"
  echo
  echo "![hit rate per window, seed 1: $title](img/membership/$name.png)"
  echo
  echo "**Over seeds.**"
  echo
  python3 bench/membership_summary.py "${jsons[@]}"
  echo
}

sed '/^## Measurements/q' docs/membership-changes.md
echo
bot1000=(--workload support-bot --workload-param system_prompts=1000
         --workload-param zipf_exponent=0.6 --requests 20000 --load 0.7)
bot300=(--workload support-bot --workload-param system_prompts=300 --requests 20000 --load 0.7)
conversation=(--workload trace:workloads/traces/conversation_trace.jsonl --requests 100000)
windows=(--hit-window-s 10 --dip-baseline-s 120)
trace_windows=(--hit-window-s 30 --dip-baseline-s 300)

case_ "support-bot, 1,000 prompts (≈ 3M tokens of prefixes: fit in 8 replicas' 3.68M, hardly in 7's 3.22M): remove one of 8 at 480 s" \
  bot1000_remove "1 2 3 4 5" "${bot1000[@]}" --membership remove@480 "${windows[@]}"
case_ "support-bot, 1,000 prompts: add the 8th replica at 480 s" \
  bot1000_add "1 2 3 4 5" "${bot1000[@]}" --membership add@480 "${windows[@]}"
case_ "support-bot, 300 prompts, Zipf 1.0 (≈ 900k tokens of prefixes: fit in 7 replicas too): remove one of 8 at 480 s" \
  bot300_remove "1 2 3 4 5" "${bot300[@]}" --membership remove@480 "${windows[@]}"
case_ "support-bot, 300 prompts: add the 8th replica at 480 s" \
  bot300_add "1 2 3 4 5" "${bot300[@]}" --membership add@480 "${windows[@]}"
case_ "Mooncake conversation trace (real timestamps, 12,031 requests over 59 min): remove one of 8 at 1,800 s" \
  conversation_remove "1 2 3" "${conversation[@]}" --membership remove@1800 "${trace_windows[@]}"
case_ "Mooncake conversation trace: add the 8th replica at 1,800 s" \
  conversation_add "1 2 3" "${conversation[@]}" --membership add@1800 "${trace_windows[@]}"
