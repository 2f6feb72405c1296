#!/bin/bash
# BEFORE, NOW: two checkouts (git worktree), NOW with its .venv (make setup); DATA: made by the bench when absent
: "${BEFORE:?}" "${NOW:?}" "${DATA:?}" "${OUT:=/tmp/abtp}"
# alternate `bench/throughput.py` UC1: before vs now; $1 pairs, $2 events, then extra bench options:
#   abtp.sh 3 2000000                                   (1M events a micro-batch: 2m-*.json)
#   abtp.sh 2 10000000 --files-per-trigger 2 --warm-runs 2 --limit-repeat 1   (10m-*.json)
pairs=$1 events=$2; shift 2
mkdir -p $OUT
for i in $(seq 1 $pairs); do
  for side in before now; do
    if [ $side = before ]; then pp=$BEFORE; else pp=$NOW; fi
    cd $pp
    json=$OUT/$((events / 1000000))m-$side-$i.json
    PYTHONPATH=$pp TEFQ_SPARK_PROFILE=$OUT/prof-$side-$i.jsonl $NOW/.venv/bin/python bench/throughput.py --usecase uc1 \
      --events $events --skip-python-loop --pathway-events 0 --data $DATA --json $json "$@" >/dev/null 2>&1 || echo FAIL
    python3 -c "
import json;d=json.load(open('$json'));b=d['micro_batches']
print('$i $side', 'wall %.2f'%d['wall_seconds'], 'steady %.0f'%d['steady_events_per_s'], 'ratio %.2f'%d['steady_vs_limit'],
      'batches', [x['durations_ms']['triggerExecution'] for x in b], 'warm', d.get('warm_wall_seconds'), d['rows_agree'])"
  done
done
