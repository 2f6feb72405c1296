#!/bin/sh
# Issue 14: output.merge_partials before (np.unique rows + np.add.at, commit 59388b9) and after
# (one lexsort + np.add.reduceat), alternating; the driver's collect_seconds of a UC3 2M run.
#   docs/bench/issue14-uc3/merge.sh OUTDIR
set -u
cd "$(dirname "$0")/../../.."
OUT=$1; mkdir -p "$OUT"
F=tefq/spark/output.py
NEW=$(mktemp); OLD=$(mktemp)
cp $F "$NEW"; git show 59388b9:$F > "$OLD"
. docs/bench/run_one.sh
i=0
for v in old new old new; do
  i=$((i + 1)); if [ $v = old ]; then cp "$OLD" $F; else cp "$NEW" $F; fi
  run_one uc3-2m-merge-$v-$i .venv/bin/python bench/throughput.py --usecase uc3 --events 2000000 --data /tmp/bench2m \
    --pathway-events 0 --skip-python-loop --limit-repeat 1
  cp "$NEW" $F
done
rm -f "$NEW" "$OLD"
