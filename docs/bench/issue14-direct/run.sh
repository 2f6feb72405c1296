#!/bin/sh
# Issue 14, direct ingestion: the previous default (columnar ingestion, two shuffle partitions per
# core) against the new one (`--ingest auto`: direct ingestion, one partition per core), same data,
# alternating; UC3 with 1 and 2 buckets. See docs/spark.md "Measured".
#   docs/bench/issue14-direct/run.sh OUTDIR
set -u
cd "$(dirname "$0")/../../.."
OUT=$1
mkdir -p "$OUT"
B=".venv/bin/python bench/throughput.py --pathway-events 0 --skip-python-loop"
. docs/bench/run_one.sh
one() {  # name, env, args...
  name=$1; envs=$2; shift 2
  run_one "$name" env $envs $B "$@"
}
OLD="TEFQ_SPARK_PARTITIONS=4"
NEW="TEFQ_BENCH=new"
for pair in 1 2; do
  one uc1-10m-before-$pair "$OLD" --usecase uc1 --events 10000000 --data /tmp/bench10m --batch-events 2000000 --ingest columnar
  one uc1-10m-after-$pair "$NEW" --usecase uc1 --events 10000000 --data /tmp/bench10m --batch-events 2000000
done
one uc2-10m-before-1 "$OLD" --usecase uc2 --events 10000000 --data /tmp/bench10m --batch-events 2000000 --ingest columnar
one uc2-10m-after-1 "$NEW" --usecase uc2 --events 10000000 --data /tmp/bench10m --batch-events 2000000
for pair in 1 2; do
  for uc in uc1 uc2; do
    one $uc-2m-before-$pair "$OLD" --usecase $uc --events 2000000 --data /tmp/bench2m --ingest columnar
    one $uc-2m-after-$pair "$NEW" --usecase $uc --events 2000000 --data /tmp/bench2m
  done
done
one uc3-2m-before-1 "$OLD" --usecase uc3 --events 2000000 --data /tmp/bench2m --ingest columnar
one uc3-2m-after-1 "$NEW" --usecase uc3 --events 2000000 --data /tmp/bench2m
for pair in 1 2; do
  for b in 1 2; do
    one uc3-2m-buckets$b-$pair "$NEW" --usecase uc3 --events 2000000 --data /tmp/bench2m --buckets $b
  done
done
