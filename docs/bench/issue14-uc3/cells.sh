#!/bin/sh
# Issue 14: UC3 with the cell-by-cell check against the single pass (rows_equal_limit_cells):
# 2M on one and two buckets, 10M on two.   docs/bench/issue14-uc3/cells.sh OUTDIR
set -u
cd "$(dirname "$0")/../../.."
OUT=$1; mkdir -p "$OUT"
B=".venv/bin/python bench/throughput.py --pathway-events 0 --skip-python-loop --usecase uc3"
. docs/bench/run_one.sh
run_one uc3-2m-1bucket $B --events 2000000 --data /tmp/bench2m --buckets 1
run_one uc3-2m-2buckets $B --events 2000000 --data /tmp/bench2m
run_one uc3-10m-2buckets $B --events 10000000 --data /tmp/bench10m --batch-events 2000000 --limit-repeat 2
