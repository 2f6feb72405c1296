#!/bin/sh
# Issue 14: operators/base.batch_frame before (pd.concat) and after (column by column), alternating,
# same data; then UC3 on one and two buckets with the change. The old function is swapped in from
# git for the "before" runs and restored after each.
#   docs/bench/issue14-uc3/frames.sh OUTDIR     (then: python docs/bench/issue14-direct/table.py OUTDIR)
set -u
cd "$(dirname "$0")/../../.."
OUT=$1
mkdir -p "$OUT"
F=tefq/spark/operators/base.py
NEW=$(mktemp); OLD=$(mktemp)
cp $F "$NEW"; git show 9155263~1:$F > "$OLD"
B=".venv/bin/python bench/throughput.py --pathway-events 0 --skip-python-loop"
. docs/bench/run_one.sh
one() {  # name, version file, args...
  name=$1; cp "$2" $F; shift 2
  run_one "$name" $B "$@"
  cp "$NEW" $F
}
for pair in 1 2; do
  one uc3-2m-concat-$pair "$OLD" --usecase uc3 --events 2000000 --data /tmp/bench2m
  one uc3-2m-columns-$pair "$NEW" --usecase uc3 --events 2000000 --data /tmp/bench2m
done
one uc1-2m-concat-1 "$OLD" --usecase uc1 --events 2000000 --data /tmp/bench2m
one uc1-2m-columns-1 "$NEW" --usecase uc1 --events 2000000 --data /tmp/bench2m
for pair in 1 2; do
  for b in 1 2; do
    one uc3-2m-buckets$b-$pair "$NEW" --usecase uc3 --events 2000000 --data /tmp/bench2m --buckets $b
  done
done
rm -f "$NEW" "$OLD"
