#!/usr/bin/env bash
# Precise mode in `warmroute sim`: every policy with the index fed by routing alone (approximate)
# and by the engines' KV events (precise), on the same streams (seed 1), 8 replicas of
# llama-3.1-70b-tp4-h100. Markdown on stdout, each table under the commands that produce it.
#   usage: bench/precise_results.sh [path/to/warmroute] [part]
#     part = modes  (default) index error and routing per policy in both modes, four workloads:
#                   the precise-mode block of docs/routing-results.md
#            llmd-73        llm-d's 73-capacity benchmark beside our run of its shape
#                           (docs/precise-mode.md)
#            loss           lost KV-event messages with and without replay (docs/precise-mode.md)
# All three parts take about 6 minutes on one core.
set -euo pipefail
bin=$(realpath "${1:-build/release/src/cli/warmroute}")
part=${2:-modes}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"  # so that the commands printed below use paths relative to the repository
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--replicas 8 --profile llama-3.1-70b-tp4-h100 --seed 1 --no-bounds)

# table KIND JSON...: a Markdown table from `warmroute sim --json` outputs (python3).
table() {
  python3 - "$@" <<'PY'
import json, sys
kind, files = sys.argv[1], sys.argv[2:]
runs = [json.load(open(f)) for f in files]
ms = lambda s: "%.0f" % (1000 * s)
pct = lambda x: "%.1f%%" % (100 * x)
err = lambda p: "%.3f" % p["index_error"]
if kind == "modes":  # files: approximate, precise
    a, p = runs
    print("| policy | index error, approximate | index error, precise | hit rate, approximate | "
          "hit rate, precise | TTFT p50 / p90 / p99 (ms), approximate | "
          "TTFT p50 / p90 / p99 (ms), precise |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for x, y in zip(a["policies"], p["policies"]):
        t = lambda r: " / ".join(ms(r[k]) for k in ("ttft_p50_s", "ttft_p90_s", "ttft_p99_s"))
        print("| %s | %s | %s | %s | %s | %s | %s |" % (x["name"], err(x), err(y), pct(x["hit_rate"]),
              pct(y["hit_rate"]), t(x), t(y)))
elif kind == "llmd73":  # files: approximate, precise
    theirs = {"random": ("random-scheduling", 92.551, 45.281),
              "approximate": ("estimated-scheduling", 31.083, 13.316),
              "precise": ("precise-scheduling", 0.542, 0.298)}
    rows = [("random", "random", runs[0]), ("approximate", "llmd_weighted", runs[0]),
            ("precise", "llmd_precise", runs[1])]
    print("| llm-d run | their TTFT p90 (s) | their TTFT mean (s) | our policy (mode) | "
          "our TTFT p90 (s) | our TTFT mean (s) | our hit rate | our index error |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for key, name, run in rows:
        r = next(x for x in run["policies"] if x["name"] == name)
        print("| %s | %.3f | %.3f | `%s` (%s) | %.3f | %.3f | %s | %s |" % (theirs[key][0],
              theirs[key][1], theirs[key][2], name, run["prefix_mode"], r["ttft_p90_s"],
              r["ttft_mean_s"], pct(r["hit_rate"]), err(r)))
elif kind == "all":  # one run: every policy
    run = runs[0]
    print("| policy (%s mode) | hit rate | TTFT p50 / p90 / p99 (s) | index error | preemptions |"
          % run["prefix_mode"])
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in run["policies"]:
        print("| %s | %s | %.2f / %.2f / %.2f | %s | %d |" % (r["name"], pct(r["hit_rate"]),
              r["ttft_p50_s"], r["ttft_p90_s"], r["ttft_p99_s"], err(r), r["preemptions"]))
    b = run.get("bounds")
    if b:  # the run was made without --no-bounds
        r = b["pooled_run"]
        print("| *pooled-cache bound* (one engine: the fleet's KV capacity and compute) | %s | "
              "%.2f / %.2f / %.2f | | %d |" % (pct(r["hit_rate"]), r["ttft_p50_s"], r["ttft_p90_s"],
                                              r["ttft_p99_s"], r["preemptions"]))
        print("| *infinite-cache bound* (every repeated block hits) | %s | | | |"
              % pct(b["infinite_cache_hit_rate"]))
elif kind == "loss":  # one run per file, warmroute only
    print("| KV events | lost messages | replayed | missed for good | rebuilds | "
          "requests routed to an uncertain backend | index error | hit rate | TTFT p90 (ms) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for run in runs:
        r = run["policies"][0]
        e = r.get("kv_events")
        label = run.get("kv_events", "none (approximate mode)")
        if e is None:
            print("| %s | | | | | | %s | %s | %s |" % (label, err(r), pct(r["hit_rate"]),
                  ms(r["ttft_p90_s"])))
        else:
            print("| %s | %d | %d | %d | %d | %d | %s | %s | %s |" % (label, e["lost"], e["replayed"],
                  e["missed"], e["rebuilds"], e["routed_uncertain"], err(r), pct(r["hit_rate"]),
                  ms(r["ttft_p90_s"])))
PY
}

# modes TITLE NAME ARGS...: every policy in both modes on one workload.
modes() {
  local title=$1 name=$2
  shift 2
  "$bin" sim "${common[@]}" --policies all "$@" --json "$tmp/$name.a.json" >/dev/null 2>&1
  "$bin" sim "${common[@]}" --policies all "$@" --prefix-mode precise \
    --json "$tmp/$name.p.json" >/dev/null 2>&1
  echo "#### $title"
  echo
  echo '```sh'
  echo "warmroute sim ${common[*]} --policies all $* --prefix-mode approximate"
  echo "warmroute sim ${common[*]} --policies all $* --prefix-mode precise"
  echo '```'
  echo
  table modes "$tmp/$name.a.json" "$tmp/$name.p.json"
  echo
}

case "$part" in
modes)
  modes "support-bot: 1,000 system prompts of ~3,000 tokens, Zipf exponent 0.6, 70% load" \
    support_bot --workload support-bot --workload-param system_prompts=1000 \
    --workload-param zipf_exponent=0.6 --requests 3000 --load 0.7
  modes "multi-turn chat sessions, 70% load" multi_turn --workload multi-turn --requests 2000 \
    --load 0.7
  modes "Mooncake conversation trace (real timestamps, first 3,000 requests)" conversation \
    --workload trace:workloads/traces/conversation_trace.jsonl --requests 3000
  modes "llmd-73: llm-d's 73-capacity shape, 307,328 KV tokens per replica, 15 requests/s" \
    llmd73 --workload llmd-73 --kv-capacity-tokens 307328 --requests 4000 --rate 15
  ;;
llmd-73)
  # llm-d's scorer weights in that benchmark: estimated-scheduling 1/1/1, precise 3/2/2.
  weights=(--policy-param llmd_weighted.prefix_weight=1 --policy-param llmd_weighted.queue_weight=1
    --policy-param llmd_weighted.kv_weight=1 --policy-param llmd_precise.prefix_weight=3
    --policy-param llmd_precise.queue_weight=2 --policy-param llmd_precise.kv_weight=2)
  args=(--workload llmd-73 --kv-capacity-tokens 307328 --requests 4000 --rate 15
    --policies random,llmd_weighted,llmd_precise,dynamo_kv,sglang_cache_aware,preble,warmroute)
  # The approximate run also computes the bounds (without --no-bounds).
  bounded=("${common[@]/--no-bounds/}")
  "$bin" sim ${bounded[@]} "${args[@]}" "${weights[@]}" --json "$tmp/a.json" >/dev/null 2>&1
  "$bin" sim "${common[@]}" "${args[@]}" "${weights[@]}" --prefix-mode precise \
    --json "$tmp/p.json" >/dev/null 2>&1
  echo '```sh'
  echo "warmroute sim" ${bounded[*]} "${args[*]} ${weights[*]}"
  echo "warmroute sim ${common[*]} ${args[*]} ${weights[*]} --prefix-mode precise"
  echo '```'
  echo
  table llmd73 "$tmp/a.json" "$tmp/p.json"
  echo
  echo "Every policy of the two runs:"
  echo
  table all "$tmp/a.json"
  echo
  table all "$tmp/p.json"
  ;;
loss)
  args=(--workload support-bot --workload-param system_prompts=1000 --workload-param
    zipf_exponent=0.6 --requests 3000 --load 0.7 --policies warmroute)
  echo '```sh'
  echo "warmroute sim ${common[*]} ${args[*]}"
  "$bin" sim "${common[@]}" "${args[@]}" --json "$tmp/l0.json" >/dev/null 2>&1
  files=("$tmp/l0.json")
  k=1
  for flags in "--event-loss 0" "--event-loss 0.01" "--event-loss 0.05" \
    "--event-loss 0.01 --event-replay off" "--event-loss 0.05 --event-replay off"; do
    # shellcheck disable=SC2086  # $flags is a list of flags
    "$bin" sim "${common[@]}" "${args[@]}" --prefix-mode precise $flags \
      --json "$tmp/l$k.json" >/dev/null 2>&1
    echo "warmroute sim ${common[*]} ${args[*]} --prefix-mode precise $flags"
    files+=("$tmp/l$k.json")
    k=$((k + 1))
  done
  echo '```'
  echo
  table loss "${files[@]}"
  ;;
*)
  echo "usage: $0 [path/to/warmroute] [modes|llmd-73|loss]" >&2
  exit 2
  ;;
esac
