#!/usr/bin/env bash
# What dumps and traces cost at scale, two builds alternating (perf/RESULTS.md 2026-11-28 "dumps at
# scale"): peak memory and time of writing HETFLOW_DUMP + HETFLOW_TRACE for perf/dumps_at_scale.cpp's
# requests, then of `hetflow report` and `hetflow dump --from/--to` on what it wrote.
#   bash perf/ab-dumps.sh OLD_BUILD NEW_BUILD [REQUESTS=50000] [ROUNDS=2]
# Each BUILD: a build directory with libhetflow.so.0 and bin/hetflow (e.g. build-release).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
old=$(cd "${1:?usage: ab-dumps.sh OLD_BUILD NEW_BUILD [REQUESTS] [ROUNDS]}" && pwd)
new=$(cd "${2:?usage: ab-dumps.sh OLD_BUILD NEW_BUILD [REQUESTS] [ROUNDS]}" && pwd)
n=${3:-50000} rounds=${4:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++20 -O2 -I"$root/include" "$root/perf/dumps_at_scale.cpp" -o "$work/dumps_at_scale" -L"$new" -lhetflow -ltbb \
  -lOpenCL -pthread
timed() { /usr/bin/time -f '%e s %M KB' "$@" 2>&1 > /dev/null | tail -1; }
date -u +%Y-%m-%dT%H:%MZ
for round in $(seq "$rounds"); do
  for side in old new; do
    B=$old
    [ "$side" = new ] && B=$new
    d=$work/$side
    rm -rf "$d" && mkdir -p "$d"
    export LD_LIBRARY_PATH=$B
    w=$(HETFLOW_DUMP=$d/r.json HETFLOW_TRACE=$d/r.trace.json timed "$work/dumps_at_scale" "$n")
    r=$(timed "$B/bin/hetflow" report "$d/r.trace.json")
    t=$(timed "$B/bin/hetflow" dump "$d/r.trace.json" --from 100 --to 200 --dot "$d/w.dot")
    j=$(timed "$B/bin/hetflow" dump "$d/r.json" --from 100 --to 200 --dot "$d/w2.dot")
    echo "round $round $side | write dump+trace: $w | report trace: $r | dump trace window: $t | dump json window: $j"
  done
done
