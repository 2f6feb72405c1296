#!/bin/bash
# Alternated pairs of whole processes (before = main at the merge base, after = this branch), same data.
set -e
DATA=/tmp/w3c-bench-data
mkdir -p /tmp/w3c-ab
for i in 1 2 3; do
  for side in before after; do
    if [ $((i % 2)) -eq 0 ]; then side=$([ $side = before ] && echo after || echo before); fi
    if [ $side = before ]; then
      (cd /tmp/w3c-before && PYTHONPATH=/tmp/w3c-before /work/wt/w3c/.venv/bin/python bench/multiwindow.py --events 300000 --sensor-events 300000 --repeat 2 --data $DATA --json /tmp/w3c-ab/$side-$i.json) > /tmp/w3c-ab/$side-$i.txt 2>&1
    else
      (cd /work/wt/w3c && .venv/bin/python bench/multiwindow.py --events 300000 --sensor-events 300000 --repeat 2 --data $DATA --json /tmp/w3c-ab/$side-$i.json) > /tmp/w3c-ab/$side-$i.txt 2>&1
    fi
    echo "$side $i done $(uptime)"
  done
done
