#!/bin/bash
for i in 3; do
  for side in before after; do
    dir=/work/main; [ $side = before ] && dir=/work/wt/before
    s=$(date +%s.%N)
    (cd $dir && PYTHONPATH=$dir /work/main/.venv/bin/python bench/w3c.py --engine spark > /tmp/s16/w3c-$side-$i.txt 2>&1)
    e=$(date +%s.%N)
    echo "$side $i $(echo "$e - $s" | bc) $(grep '^all' /tmp/s16/w3c-$side-$i.txt)" >> /tmp/s16/w3cpairs.txt
  done
done
