#!/bin/bash
# Same-run A/B of the steps on perf-a: s0 main, s1 exact SQL checks, s2 +maxBytesPerBatch, s3 +light sink/read-back
out=/tmp/perfa/steps; mkdir -p $out
for rep in 1 2; do
  for v in s0 s1 s2 s3; do
    echo "$(date -u +%T) start uc1 $v $rep load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/log.txt
    cd /tmp/perfa/$v && PYTHONPATH=/tmp/perfa/$v timeout 900 /work/wt-perf-a/.venv/bin/python /tmp/perfa/ab_engine.py --usecase uc1 --data /tmp/bench2m --json $out/uc1-$v-$rep.json > $out/uc1-$v-$rep.out 2>&1
    echo "$(date -u +%T) end rc $?" >> $out/log.txt
  done
  for v in s0 s3; do
    echo "$(date -u +%T) start uc2 $v $rep load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/log.txt
    cd /tmp/perfa/$v && PYTHONPATH=/tmp/perfa/$v timeout 900 /work/wt-perf-a/.venv/bin/python /tmp/perfa/ab_engine.py --usecase uc2 --data /tmp/bench2m --json $out/uc2-$v-$rep.json > $out/uc2-$v-$rep.out 2>&1
    echo "$(date -u +%T) end rc $?" >> $out/log.txt
  done
done
echo ALLDONE >> $out/log.txt
