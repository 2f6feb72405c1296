#!/bin/bash
# BEFORE, NOW: two checkouts (git worktree), NOW with its .venv (make setup); DATA: made by the bench when absent
: "${BEFORE:?}" "${NOW:?}" "${DATA:=/tmp/big10m}" "${OUT:=/tmp/ab10m}"
mkdir -p $OUT
# alternate bench/throughput.py UC1 10M (2 files per trigger, 2 warm runs): before vs now; $1 pairs
for i in $(seq 1 $1); do
  for side in before now; do
    if [ $side = before ]; then pp=$BEFORE; else pp=$NOW; fi
    cd $pp
    PYTHONPATH=$pp $NOW/.venv/bin/python bench/throughput.py --usecase uc1 --events 10000000 --skip-python-loop --pathway-events 0 --files-per-trigger 2 --warm-runs 2 --limit-repeat 1 --data $DATA --json $OUT/10m-$side-$i.json >$OUT/10m-$side-$i.log 2>&1 || echo FAIL
    python3 -c "
import json;d=json.load(open('$OUT/10m-$side-$i.json'))
print('$i $side', 'wall %.2f'%d['wall_seconds'], 'ev/s %.0f'%d['events_per_s'], 'steady %.0f'%d['steady_events_per_s'], 'ratio %.2f'%d['steady_vs_limit'], 'warm', d.get('warm_runs') or d.get('warm_wall_seconds'), d['rows_agree'])"
  done
done
