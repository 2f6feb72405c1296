#!/bin/bash
# Same-run A/B: old engine (wt-base) vs new main (wt-perf-a at 5ef7507), alternating.
out=/tmp/ab13
for pair in 1 2; do
  for uc in uc1 uc2; do
    for side in old new; do
      if [ $side = old ]; then dir=/work/wt-base; else dir=/tmp/ab13/new; fi
      echo "$(date -u +%T) start $uc $side pair $pair load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/log.txt
      (cd $dir && if [ $side = old ]; then py=.venv/bin/python; export PYTHONPATH=; else py=/work/wt-perf-a/.venv/bin/python; export PYTHONPATH=/tmp/ab13/new; fi; $py bench/throughput.py --usecase $uc --events 2000000 --data /tmp/bench2m \
         --pathway-events 0 --json $out/$uc-$side-$pair.json > $out/$uc-$side-$pair.out 2>&1)
      echo "$(date -u +%T) end $uc $side pair $pair rc $? load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/log.txt
    done
  done
done
echo ALLDONE >> $out/log.txt
