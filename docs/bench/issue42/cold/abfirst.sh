#!/bin/bash
# BEFORE, NOW: two checkouts (git worktree), NOW with its .venv (make setup); DATA: `tefq gen iptv --out DATA`
: "${BEFORE:?}" "${NOW:?}" "${DATA:=/tmp/b42/default}"
# alternate "first" runs (default TEFQ_SERVER, no engine up): $1 pairs
cd $NOW
for i in $(seq 1 $1); do
  for side in before now; do
    if [ $side = before ]; then pp=$BEFORE; else pp=$NOW; fi
    PYTHONPATH=$pp .venv/bin/tefq server stop >/dev/null 2>&1; sleep 1
    s=$(date +%s.%N)
    PYTHONPATH=$pp .venv/bin/tefq run usecases/uc1.tef --stream $DATA/log --engine spark --out /tmp/abf_$side.csv >/dev/null 2>&1 || echo FAIL
    e=$(date +%s.%N)
    printf "%s %s %.2f\n" $i $side $(echo "$e - $s" | bc)
  done
done
PYTHONPATH=$NOW .venv/bin/tefq server stop >/dev/null 2>&1
cmp /tmp/abf_before.csv /tmp/abf_now.csv && echo csv-equal
