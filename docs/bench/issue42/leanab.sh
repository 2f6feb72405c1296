#!/bin/bash
# Cold `tefq run` pairs, alternated: Spark from pyspark's own directory (TEFQ_SPARK_HOME=pyspark)
# and from tefq's directory without the ML jars (the default). Each side needs its start-up archive:
#   TEFQ_SPARK_HOME=pyspark python -m tefq.jvm_archive_setup; python -m tefq.jvm_archive_setup
# usage: leanab.sh QUERY STREAM PAIRS   (from the repository root, the venv's python on the PATH)
q=$1; stream=$2; n=$3; out=$(mktemp -d)
for i in $(seq 1 "$n"); do
  for v in pyspark lean; do
    s=$(date +%s.%N)
    if [ $v = pyspark ]; then export TEFQ_SPARK_HOME=pyspark; else unset TEFQ_SPARK_HOME; fi
    TEFQ_SERVER=0 python -m tefq run "$q" --stream "$stream" --engine spark --out "$out/$v.csv" --format csv --quiet || echo FAIL
    echo "$v $(echo "$(date +%s.%N) - $s" | bc)"
  done
  cmp -s "$out/pyspark.csv" "$out/lean.csv" || echo DIFFER
done
rm -rf "$out"
