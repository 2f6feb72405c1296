#!/bin/bash
# bench/throughput.py UC1 2M, alternated pairs: tp_ab.sh BEFORE AFTER (two checkouts with their .venv)
BEFORE=$1 AFTER=$2
export TEFQ_SERVER=0
[ -d big2m/log ] || $AFTER/.venv/bin/tefq gen iptv --out big2m --events 2000000 --users 228720 --days 2 --epg --format parquet
for i in 1 2 3; do
  for side in before after; do
    R=$BEFORE; [ $side = after ] && R=$AFTER
    export PYTHONPATH=$R/tests/support:$R  # the before checkout's bench imported spark_docs from there
    echo "pair $i $side load $(cut -d' ' -f1 /proc/loadavg)"
    $R/.venv/bin/python $R/bench/throughput.py --usecase uc1 --events 2000000 --data big2m --pathway-events 0 \
        --skip-python-loop --limit-repeat 1 --json tp-$side-$i.json 2>&1 | tail -1
  done
done
