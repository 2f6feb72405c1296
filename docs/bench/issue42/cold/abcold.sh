#!/bin/bash
# BEFORE, NOW: two checkouts (git worktree), NOW with its .venv (make setup); DATA: `tefq gen iptv --out DATA`
: "${BEFORE:?}" "${NOW:?}" "${DATA:=/tmp/b42/default}"
# alternate cold UC1 runs (TEFQ_SERVER=0): before (PYTHONPATH=$BEFORE) vs now; $1 pairs
cd $NOW
for i in $(seq 1 $1); do
  for side in before now; do
    if [ $side = before ]; then pp=$BEFORE; else pp=$NOW; fi
    s=$(date +%s.%N)
    PYTHONPATH=$pp TEFQ_SERVER=0 .venv/bin/tefq run usecases/uc1.tef --stream $DATA/log --engine spark --out /tmp/ab_$side.csv >/dev/null 2>&1 || echo FAIL
    e=$(date +%s.%N)
    printf "%s %s %.2f\n" $i $side $(echo "$e - $s" | bc)
  done
done
cmp /tmp/ab_before.csv /tmp/ab_now.csv && echo csv-equal
