#!/bin/bash
# BEFORE, NOW: two checkouts (git worktree), NOW with its .venv (make setup)
: "${BEFORE:?}" "${NOW:?}"
# alternate fresh-process runs of the tour's query (TEFQ_SERVER=0): before vs now; $1 pairs; $2 engine (oracle|spark)
cd $NOW
for i in $(seq 1 $1); do
  for side in before now; do
    if [ $side = before ]; then pp=$BEFORE; else pp=$NOW; fi
    s=$(date +%s.%N)
    PYTHONPATH=$pp TEFQ_SERVER=0 .venv/bin/tefq run $pp/examples/spec10/uc1.tef --stream $pp/examples/spec10/events.tsv \
      --engine $2 --out /tmp/tour_$side.csv >/dev/null 2>&1 || echo FAIL
    e=$(date +%s.%N)
    printf "%s %s %s %.2f\n" $2 $i $side $(echo "$e - $s" | bc)
  done
done
cmp /tmp/tour_before.csv /tmp/tour_now.csv && echo csv-equal
