#!/usr/bin/env bash
# Times `warmroute analyze` on a file of 100,000 chat requests (about 600 MB: support-bot prompts
# of about 6,000 characters, every planted defect mixed in; workloads/requests/make_planted.py),
# and prints the wall time, the requests per second and the peak memory.
#   usage: bench/analyze_speed.sh [path/to/warmroute] [requests]
set -euo pipefail
bin=$(realpath "${1:-build/release/src/cli/warmroute}")
requests=${2:-100000}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$root/workloads/requests/make_planted.py" mixed --requests "$requests" > "$tmp/requests.jsonl"
size=$(du -m "$tmp/requests.jsonl" | cut -f1)
/usr/bin/time -f "%e %M" -o "$tmp/time" "$bin" analyze "$tmp/requests.jsonl" > "$tmp/report.txt"
read -r seconds kb < "$tmp/time"
echo "requests: $requests ($size MB), wall: ${seconds} s, $(python3 -c "print(round($requests / $seconds))") requests/s, peak memory: $((kb / 1024)) MB"
echo "findings: $(grep -c '^  \[' "$tmp/report.txt")"
