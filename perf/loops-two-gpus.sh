#!/usr/bin/env bash
# Issue 15 over two GPUs: SpMV 2^24 (dev0 alone, LogFit, two static splits, two rounds) and Mandelbrot
# 8192² (dev0 alone, LogFit), one `hetflow run W --calls 8 --devices 1:0,1:1` each, the median of calls
# 2-7, then one LogFit SpMV run's per-call table. perf/RESULTS.md, 2026-11-29 16:24Z.
#   bash perf/loops-two-gpus.sh [BUNDLE=bundle]   (on the two-GPU host)
B=${1:-bundle}
source "$(dirname "${BASH_SOURCE[0]}")/two-gpu-runs.sh"
date -u; nproc; nvidia-smi --query-gpu=name --format=csv,noheader | head -2
one() { local w=$1 label=$2; shift 2; echo "$w $label $(timeout 100 "$B/bin/hetflow" run $w --calls 8 "$@" 2>&1 | median)"; }
for round in 1 2; do
  one spmv dev0-alone --size 24 --devices 1:0,1:1 --scheduler static:1,0
  one spmv logfit-2gpu --size 24 --devices 1:0,1:1
  one spmv static:0.43,0.48 --size 24 --devices 1:0,1:1 --scheduler static:0.43,0.48
  one spmv static:0.5,0.5 --size 24 --devices 1:0,1:1 --scheduler static:0.5,0.5
done
one mandelbrot dev0-alone --size 8192 --devices 1:0,1:1 --scheduler static:1,0
one mandelbrot logfit-2gpu --size 8192 --devices 1:0,1:1
timeout 100 "$B/bin/hetflow" run spmv --size 24 --calls 8 --devices 1:0,1:1 2>&1 | tail -12
date -u
