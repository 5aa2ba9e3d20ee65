#!/usr/bin/env bash
# A compiler and linker launcher that logs each command's cost, to find what a build spends its
# time on (docs/performance.md, "Build and test time"). Appends one line per compile or link to
# $TIME_COMPILE_LOG (default /tmp/compile_times.log):
#   <wall s> <user s> <system s> <output file>
# Use it for a measuring build only (ccache off, so the compiler really runs):
#   cmake -S . -B /tmp/bt -DCMAKE_BUILD_TYPE=RelWithDebInfo \
#     -DCMAKE_CXX_COMPILER_LAUNCHER=$PWD/scripts/time_compile.sh \
#     -DCMAKE_CXX_LINKER_LAUNCHER=$PWD/scripts/time_compile.sh
#   CCACHE_DISABLE=1 cmake --build /tmp/bt -j2
#   sort -k2 -rn /tmp/compile_times.log | head     # the most expensive files
set -euo pipefail
out=?
prev=
for arg in "$@"; do
  [[ $prev == -o ]] && out=$arg
  prev=$arg
done
exec /usr/bin/time -f "%e %U %S $out" -a -o "${TIME_COMPILE_LOG:-/tmp/compile_times.log}" "$@"
