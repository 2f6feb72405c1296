#!/bin/bash
# BEFORE, NOW: two checkouts (git worktree), NOW with its .venv (make setup); DATA: made by the bench when absent
: "${BEFORE:?}" "${NOW:?}" "${DATA:=/tmp/big2m}" "${OUT:=/tmp/ab2m}"
# alternate `bench/throughput.py` UC1 at 2M (1M events a micro-batch): before vs now; $1 pairs
mkdir -p $OUT
for i in $(seq 1 $1); do
  for side in before now; do
    if [ $side = before ]; then pp=$BEFORE; else pp=$NOW; fi
    cd $pp
    PYTHONPATH=$pp TEFQ_SPARK_PROFILE=$OUT/prof-$side-$i.jsonl $NOW/.venv/bin/python bench/throughput.py --usecase uc1 \
      --events 2000000 --skip-python-loop --pathway-events 0 --data $DATA --json $OUT/2m-$side-$i.json >/dev/null 2>&1 || echo FAIL
    python3 -c "
import json;d=json.load(open('$OUT/2m-$side-$i.json'));b=d['micro_batches']
print('$i $side', 'wall %.2f'%d['wall_seconds'], 'steady %.0f'%d['steady_events_per_s'], 'ratio %.2f'%d['steady_vs_limit'],
      'limit %.2f'%min(d['limit_runs_seconds'][0]), 'batches', [x['durations_ms']['triggerExecution'] for x in b], d['rows_agree'])"
  done
done
