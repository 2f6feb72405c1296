#!/bin/bash
# Alternated pairs of whole processes (before = 5ea0331, the merge of trial; after = e671f4b, with the
# any-term corrections), same data.
set -e
DATA=/tmp/w3c-bench-data
OUT=/tmp/w3c-ab3
for i in 1 2 3 4 5 6; do
  for side in before after; do
    if [ $((i % 2)) -eq 0 ]; then side=$([ $side = before ] && echo after || echo before); fi
    if [ $side = before ]; then
      (cd /tmp/w3c-before2 && PYTHONPATH=/tmp/w3c-before2 /work/wt/w3c/.venv/bin/python bench/multiwindow.py --events 300000 --sensor-events 300000 --repeat 3 --data $DATA --json $OUT/$side-$i.json) > $OUT/$side-$i.txt 2>&1
    else
      (cd /work/wt/w3c && .venv/bin/python bench/multiwindow.py --events 300000 --sensor-events 300000 --repeat 3 --data $DATA --json $OUT/$side-$i.json) > $OUT/$side-$i.txt 2>&1
    fi
    echo "$side $i done $(uptime)"
  done
done
