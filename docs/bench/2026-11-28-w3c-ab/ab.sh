#!/bin/bash
# Alternated pairs of whole processes (before = main at the merge base, after = this branch), same data.
# ab.sh BEFORE AFTER DATA OUT: BEFORE and AFTER are checkouts (AFTER with its .venv).
set -e
BEFORE=$1 AFTER=$2 DATA=$3 OUT=$4
mkdir -p $OUT
for i in 1 2 3; do
  for side in before after; do
    if [ $((i % 2)) -eq 0 ]; then side=$([ $side = before ] && echo after || echo before); fi
    if [ $side = before ]; then
      (cd $BEFORE && PYTHONPATH=$BEFORE $AFTER/.venv/bin/python bench/multiwindow.py --events 300000 --sensor-events 300000 --repeat 2 --data $DATA --json $OUT/$side-$i.json) > $OUT/$side-$i.txt 2>&1
    else
      (cd $AFTER && .venv/bin/python bench/multiwindow.py --events 300000 --sensor-events 300000 --repeat 2 --data $DATA --json $OUT/$side-$i.json) > $OUT/$side-$i.txt 2>&1
    fi
    echo "$side $i done $(uptime)"
  done
done
