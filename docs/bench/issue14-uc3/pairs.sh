#!/bin/sh
# Issue 14, UC3 2M split by user: more alternating 1-bucket / 2-bucket pairs (one steady 1M-event
# micro-batch per run, so single runs are noisy).
#   docs/bench/issue14-uc3/pairs.sh OUTDIR PAIRS
set -u
cd "$(dirname "$0")/../../.."
OUT=$1; PAIRS=${2:-3}
mkdir -p "$OUT"
B=".venv/bin/python bench/throughput.py --pathway-events 0 --skip-python-loop --usecase uc3 --limit-repeat 1"
. docs/bench/run_one.sh
for pair in $(seq 1 "$PAIRS"); do
  for b in 1 2; do
    run_one uc3-2m-byuser-buckets$b-$pair $B --events 2000000 --data /tmp/bench2m --buckets $b
  done
done
