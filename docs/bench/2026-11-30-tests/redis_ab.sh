#!/bin/bash
for side in before after; do
  dir=/work/main; [ $side = before ] && dir=/work/wt/before
  (cd $dir && PYTHONPATH=$dir timeout 300 /work/main/.venv/bin/python bench/live.py --rates 50000 --seconds 30 --warmup 10 --source redis --json /tmp/s16/redis-$side.json > /tmp/s16/redis-$side.log 2>&1)
  grep "^       - redis" /tmp/s16/redis-$side.log | cut -c1-200 | sed "s/^/$side /"
  grep -A1 "^       - redis" /tmp/s16/redis-$side.log | tail -1 | cut -c1-300
done
