#!/bin/bash
# UC1-UC3 on Spark, byte-compared: run_ab.sh BEFORE AFTER DATA (two checkouts with their .venv;
# DATA from `tefq gen iptv --out DATA --epg --seed 1`)
BEFORE=$1 AFTER=$2 DATA=$3
export TEFQ_SERVER=0
for uc in uc1 uc2 uc3; do
  if [ $uc = uc3 ]; then S="--stream $DATA"; else S="--stream $DATA/log"; fi
  for side in before after; do
    R=$BEFORE; [ $side = after ] && R=$AFTER
    /usr/bin/time -f "$uc $side %e s" $R/.venv/bin/tefq run $AFTER/usecases/$uc.tef $S --engine spark --quiet --out out-$uc-$side.csv
  done
  cmp out-$uc-before.csv out-$uc-after.csv && echo "$uc byte-equal ($(wc -l < out-$uc-after.csv) lines)"
done
