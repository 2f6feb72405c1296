#!/bin/sh
# Columnar vs rows ingestion, same data, alternating (A B A B) per use-case; see docs/spark.md "Measured".
#   docs/bench/issue14-columnar/run.sh OUTDIR [usecases...]
set -u
cd "$(dirname "$0")/../../.."
OUT=$1; shift
mkdir -p "$OUT"
UCS=${*:-uc1 uc2}
for uc in $UCS; do
  for pair in 1 2; do
    for ingest in columnar rows; do
      echo "$(date -u +%T) $uc $ingest pair $pair load $(cut -d' ' -f1-3 /proc/loadavg)"
      .venv/bin/python bench/throughput.py --usecase $uc --events 2000000 --data /tmp/bench2m --pathway-events 0 \
        --skip-python-loop --ingest $ingest --json $OUT/$uc-$ingest-$pair.json > $OUT/$uc-$ingest-$pair.log 2>&1
      echo "$(date -u +%T) done rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)"
    done
  done
done
