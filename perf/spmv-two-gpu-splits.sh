#!/usr/bin/env bash
# SpMV 2^24 over two GPUs: LogFit (with its debug log's last call), dev0 alone, and static splits that
# give the CPU a share, one `hetflow run` each (median of calls 2-7 of 8). perf/RESULTS.md,
# 2026-11-28 19:01Z.   bash perf/spmv-two-gpu-splits.sh [BUNDLE]   (on the two-GPU host)
set -uo pipefail
B=${1:-bundle}
source "$(dirname "${BASH_SOURCE[0]}")/two-gpu-runs.sh"
date -u; nproc
one() { local label=$1; shift; echo "$label $(timeout 120 "$B/bin/hetflow" run spmv --size 24 --calls 8 "$@" 2>&1 | median)"; }
HETFLOW_LOG=debug timeout 120 "$B/bin/hetflow" run spmv --size 24 --calls 10 --devices 1:0,1:1 > /tmp/spmv-logfit.log 2>&1
grep -E '^[0-9]+ +[0-9.]+ ' /tmp/spmv-logfit.log
grep -E "parallel_for: (device|a device|logfit)|parallel_for over" /tmp/spmv-logfit.log | tail -n 8 | cut -c1-330
one dev0-alone --devices 1:0,1:1 --scheduler static:1,0
for s in 0.47,0.53 0.46,0.51 0.45,0.50 0.44,0.49 0.43,0.48 0.44,0.48 0.42,0.47; do
  one "static:$s" --devices 1:0,1:1 --scheduler "static:$s"
done
one logfit --devices 1:0,1:1
