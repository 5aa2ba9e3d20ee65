#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets (the `fuzz` preset: clang with ASan and UBSan) and
# runs each for SECONDS (default 600: ten CPU-minutes per target), JOBS targets at a time, then
# prints the table docs/fuzzing.md keeps: executions, coverage, corpus, findings per target.
#
#   bench/fuzz.sh [SECONDS] [TARGET...]          (JOBS=2 by default)
#   bench/fuzz.sh --table                         the table of the last runs' logs, nothing run
#
# Each target starts from its seed corpus (tests/fuzz/corpus/<target>, copied into
# build/fuzz/corpus/<target>, where libFuzzer adds what it finds) with its dictionary
# (tests/fuzz/dict/<target>.dict). An input that crashes, trips a sanitizer, leaks or takes over
# 1 s (-timeout=1) is a finding: libFuzzer writes it to build/fuzz/findings/<target>/, and
# `build/fuzz/tests/fuzz/fuzz_<target> FILE` replays it. Logs: build/fuzz/logs/<target>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
table_only=false
if [[ ${1:-} == --table ]]; then
  table_only=true
  shift
fi
seconds=${1:-600}
shift || true
jobs=${JOBS:-2}
targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in tests/fuzz/targets/*.cc; do targets+=("$(basename "$f" .cc)"); done
fi

run_one() {
  local target=$1 seconds=$2
  local corpus=build/fuzz/corpus/$target findings=build/fuzz/findings/$target
  mkdir -p "$corpus" "$findings" build/fuzz/logs
  cp -n tests/fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
  local dict=()
  [[ -f tests/fuzz/dict/$target.dict ]] && dict=(-dict=tests/fuzz/dict/$target.dict)
  # -rss_limit_mb: the tokenizer targets hold Qwen 3's vocabulary (~0.5 GB under ASan).
  # CPU time (user + system) goes to logs/<target>.cpu: the target is ten CPU-minutes, and a
  # shared machine gives a fuzzer less CPU than its wall-clock time.
  /usr/bin/time -f '%U %S' -o build/fuzz/logs/"$target".cpu \
    build/fuzz/tests/fuzz/fuzz_"$target" "$corpus" "${dict[@]}" -max_total_time="$seconds" \
    -timeout=1 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$findings/" >build/fuzz/logs/"$target".log 2>&1 || true
}
if ! $table_only; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "$jobs" --target fuzzers
  export -f run_one
  printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c "run_one {} $seconds"
fi

echo
# seconds: the run's wall-clock time, from libFuzzer's last line ("Done N runs in S second(s)").
echo "| target | seconds | CPU seconds | executions | exec/s | coverage (edges) | features | corpus | findings |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for target in "${targets[@]}"; do
  log=build/fuzz/logs/$target.log
  runs=$(grep -oP 'stat::number_of_executed_units:\s*\K[0-9]+' "$log" | tail -1 || true)
  speed=$(grep -oP 'stat::average_exec_per_sec:\s*\K[0-9]+' "$log" | tail -1 || true)
  cov=$(grep -oP '\bcov: \K[0-9]+' "$log" | tail -1 || true)
  ft=$(grep -oP '\bft: \K[0-9]+' "$log" | tail -1 || true)
  corpus=$(find build/fuzz/corpus/"$target" -type f | wc -l)
  findings=$(find build/fuzz/findings/"$target" -type f | wc -l)
  cpu=$(awk '{printf "%d", $1 + $2}' build/fuzz/logs/"$target".cpu 2>/dev/null || true)
  wall=$(grep -oP '^Done [0-9]+ runs in \K[0-9]+' "$log" | tail -1 || true)
  echo "| $target | ${wall:-?} | ${cpu:-?} | ${runs:-?} | ${speed:-?} | ${cov:-?} | ${ft:-?} | $corpus | $findings |"
done
