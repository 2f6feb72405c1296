#!/bin/sh
# Issue 14: UC3 with the cell-by-cell check against the single pass (rows_equal_limit_cells):
# 2M on one and two buckets, 10M on two.   docs/bench/issue14-uc3/cells.sh OUTDIR
set -u
cd "$(dirname "$0")/../../.."
OUT=$1; mkdir -p "$OUT"
B=".venv/bin/python bench/throughput.py --pathway-events 0 --skip-python-loop --usecase uc3"
$B --events 2000000 --data /tmp/bench2m --buckets 1 --json "$OUT/uc3-2m-1bucket.json" > "$OUT/uc3-2m-1bucket.log" 2>&1
$B --events 2000000 --data /tmp/bench2m --json "$OUT/uc3-2m-2buckets.json" > "$OUT/uc3-2m-2buckets.log" 2>&1
$B --events 10000000 --data /tmp/bench10m --batch-events 2000000 --limit-repeat 2 --json "$OUT/uc3-10m-2buckets.json" \
  > "$OUT/uc3-10m-2buckets.log" 2>&1
