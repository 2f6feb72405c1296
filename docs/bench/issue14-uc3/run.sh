#!/bin/sh
# Issue 14, UC3 on one bucket against every bucket (two on this machine), alternating, on data where
# no event is late: the programme guide cut at the log files' time bounds (bench/throughput.py
# guide_by_log_part), so each micro-batch carries the log's and the guide's rows of one time span.
#   docs/bench/issue14-uc3/run.sh OUTDIR      then: python docs/bench/issue14-direct/table.py OUTDIR
set -u
cd "$(dirname "$0")/../../.."
OUT=$1
mkdir -p "$OUT"
B=".venv/bin/python bench/throughput.py --pathway-events 0 --skip-python-loop --usecase uc3"
. docs/bench/run_one.sh
one() {  # name, args...
  name=$1; shift
  run_one "$name" $B "$@"
}
for pair in 1 2; do
  for b in 1 2; do
    one uc3-2m-buckets$b-$pair --events 2000000 --data /tmp/bench2m --buckets $b
  done
done
for b in 1 2; do
  one uc3-10m-buckets$b-1 --events 10000000 --data /tmp/bench10m --batch-events 2000000 --limit-repeat 2 --buckets $b
done
