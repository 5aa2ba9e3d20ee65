#!/usr/bin/env bash
# Regenerates docs/routing-results.md: every routing policy side by side in `warmroute sim` on the
# same request streams (same seed), 8 replicas of llama-3.1-70b-tp4-h100.
#   usage: bench/routing_results.sh [path/to/warmroute] > docs/routing-results.md
# Plots go to docs/img/routing/. Takes a few minutes on one core.
set -euo pipefail
bin=$(realpath "${1:-build/release/src/cli/warmroute}")
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"  # so that the commands printed below use paths relative to the repository
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
img="$root/docs/img/routing"
mkdir -p "$img"
common=(--replicas 8 --profile llama-3.1-70b-tp4-h100 --policies all --seed 1)

run() {  # run TITLE NAME ARGS...: one comparison table with its exact command
  local title=$1 name=$2
  shift 2
  "$bin" sim "${common[@]}" "$@" --markdown "$tmp/$name.md" --plots "$tmp/$name" >"$tmp/$name.txt"
  # Keep the repository small: the TTFT CDF of every policy, and the per-replica load of ours
  # and round robin's (the other policies' load plots are in --plots output when run by hand).
  mkdir -p "$img/$name"
  cp "$tmp/$name"/{ttft_cdf,load_warmroute,load_round_robin}.png "$img/$name/"
  echo "### $title"
  echo
  echo '```sh'
  echo "warmroute sim ${common[*]} $*"
  echo '```'
  echo
  cat "$tmp/$name.md"
  echo
  echo "![TTFT CDF per policy](img/routing/$name/ttft_cdf.png)"
  echo "![per-replica load, warmroute](img/routing/$name/load_warmroute.png)"
  echo "![per-replica load, round_robin](img/routing/$name/load_round_robin.png)"
  echo
}

cat <<'HEAD'
# Routing results: every policy on the same stream

Produced by `bench/routing_results.sh build/release/src/cli/warmroute > docs/routing-results.md`
(`warmroute sim`, discrete-event simulation of the engine model on virtual time; the router sees
only what a live gateway sees). Fleet: 8 replicas of `llama-3.1-70b-tp4-h100` (460k-token KV
cache each, 3.68M in the fleet). Every policy gets the identical request stream (seed 1).

**Regime.** Each workload is sized so that its distinct shared prefixes exceed one replica's KV
capacity but fit the fleet's — the regime where routing decides the hit rate. (With the default
16 support-bot prompts, ~48k tokens, every replica can hold every prefix and all policies tie.)
Load is 70% of the fleet's calibrated capacity unless stated. Bounds on the same stream: the
*pooled-cache bound* is one engine with the whole fleet's KV capacity (and compute); the
*infinite-cache bound* counts every repeated block as a hit.

Columns: token hit rate (engine-reported cached / prompt tokens), TTFT and E2E percentiles,
throughput, prefill-token and busy-time imbalance (max / mean over replicas), preemptions.
HEAD
echo
run "support-bot: 1,000 system prompts of ~3,000 tokens (≈ 3M tokens of prefixes, fleet 3.68M), Zipf exponent 0.6 (many bots of similar popularity)" support_bot_1000 \
  --workload support-bot --workload-param system_prompts=1000 --workload-param zipf_exponent=0.6 \
  --requests 10000 --load 0.7
run "support-bot: 300 system prompts of ~3,000 tokens (≈ 900k tokens of prefixes), Zipf exponent 1.0 (a few dominant bots: round robin's median request is a hit too)" support_bot \
  --workload support-bot --workload-param system_prompts=300 --requests 10000 --load 0.7
run "shared-prefix: SGLang's generated-shared-prefix shape, 512 groups (≈ 1.05M tokens of prefixes)" shared_prefix \
  --workload shared-prefix --workload-param groups=512 --requests 8192 --load 0.7
run "multi-turn chat sessions" multi_turn --workload multi-turn --requests 5000 --load 0.7
run "agent trajectories (tool definitions then a growing trajectory: the key covers the whole prompt)" agent \
  --workload agent --requests 4000 --load 0.7
run "unique: no shared prefixes (negative control)" unique --workload unique --requests 8000 --load 0.7
run "Mooncake conversation trace (real timestamps)" conversation \
  --workload trace:workloads/traces/conversation_trace.jsonl --requests 100000 --trace-speed 1
run "Mooncake synthetic trace (real timestamps)" synthetic \
  --workload trace:workloads/traces/synthetic_trace.jsonl --requests 100000 --trace-speed 1

echo "### Load sweep: support-bot (300 prompts), TTFT p99 per policy, 30% → 110% of capacity"
echo
echo '```sh'
echo "warmroute sim ${common[*]} --workload support-bot --workload-param system_prompts=300 --requests 4000 --sweep-loads 0.3,0.5,0.7,0.9,1.1"
echo '```'
echo
"$bin" sim "${common[@]}" --workload support-bot --workload-param system_prompts=300 \
  --requests 4000 --sweep-loads 0.3,0.5,0.7,0.9,1.1 --plots "$tmp/sweep" >"$tmp/sweep.txt"
echo '```'
cat "$tmp/sweep.txt"
echo '```'
cp "$tmp/sweep"/*.png "$img/" 2>/dev/null || true
echo
echo "![TTFT p99 against load](img/routing/ttft_p99_vs_load.png)"

echo
echo "## Precise mode: every policy with and without KV events"
echo
cat <<'PRECISE'
Produced by `bench/precise_results.sh build/release/src/cli/warmroute` (called from here). Each
workload runs twice with every policy: `--prefix-mode approximate` (text keys; the index learns
from routing and the engines' reported cached tokens) and `--prefix-mode precise` (token keys;
the engines' KV events reach the index through the gateway's feed, 0.5 ms after each engine
step, none lost). *Index error*: mean over requests of |predicted − engine-reported cached
tokens| / prompt tokens, the prediction being the routing decision's (the chosen backend's
matched depth). Shorter runs than above (one core, a few minutes for all four); the prefix keys
cover the whole prompt in both modes (the gateway's defaults). Under heavy queueing (the
overloaded policies on llmd-73) the error also counts what the engine evicted between the
decision and the prefill, which no index can know at decision time.
[precise-mode.md](precise-mode.md#the-simulator-in-precise-mode) reads the tables.
PRECISE
echo
"$root/bench/precise_results.sh" "$bin" modes
