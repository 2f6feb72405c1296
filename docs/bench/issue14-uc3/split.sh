#!/bin/sh
# Issue 14, UC3 split by user (partial aggregates added on the driver) against split by show (the
# previous routing: a worktree of 9155263 at BEFORE, imported through PYTHONPATH), and on one
# bucket against two, alternating, same data; the guide cut at the log files' time bounds.
#   docs/bench/issue14-uc3/split.sh OUTDIR BEFORE     (then: python docs/bench/issue14-direct/table.py OUTDIR)
set -u
cd "$(dirname "$0")/../../.."
OUT=$1; BEFORE=$2
mkdir -p "$OUT"
B="bench/throughput.py --pathway-events 0 --skip-python-loop --usecase uc3"
one() {  # name, tree, args...
  name=$1; tree=$2; shift 2
  echo "$(date -u +%T) $name load $(cut -d' ' -f1-3 /proc/loadavg)"
  (cd "$tree" && PYTHONPATH="$tree" "$OLDPWD/.venv/bin/python" $B "$@" --json "$OLDPWD/$OUT/$name.json" > "$OLDPWD/$OUT/$name.log" 2>&1)
  echo "$(date -u +%T) $name done rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)"
}
NOW=$(pwd)
for pair in 1 2; do
  one uc3-2m-byshow-2buckets-$pair "$BEFORE" --events 2000000 --data /tmp/bench2m
  one uc3-2m-byuser-1bucket-$pair "$NOW" --events 2000000 --data /tmp/bench2m --buckets 1
  one uc3-2m-byuser-2buckets-$pair "$NOW" --events 2000000 --data /tmp/bench2m
done
one uc3-10m-byuser-1bucket-1 "$NOW" --events 10000000 --data /tmp/bench10m --batch-events 2000000 --limit-repeat 2 --buckets 1
one uc3-10m-byuser-2buckets-1 "$NOW" --events 10000000 --data /tmp/bench10m --batch-events 2000000 --limit-repeat 2
one uc3-10m-byshow-2buckets-1 "$BEFORE" --events 10000000 --data /tmp/bench10m --batch-events 2000000 --limit-repeat 2
