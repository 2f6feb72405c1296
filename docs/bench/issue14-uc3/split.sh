#!/bin/sh
# Issue 14, UC3 split by user (partial aggregates added on the driver) against split by show (the
# previous routing: a worktree of 9155263 at BEFORE, imported through PYTHONPATH), and on one
# bucket against two, alternating, same data; the guide cut at the log files' time bounds.
#   docs/bench/issue14-uc3/split.sh OUTDIR BEFORE     (then: python docs/bench/issue14-direct/table.py OUTDIR)
set -u
cd "$(dirname "$0")/../../.."
mkdir -p "$1"
OUT=$(cd "$1" && pwd); BEFORE=$2  # absolute: the runs start in their tree
NOW=$(pwd)
B="bench/throughput.py --pathway-events 0 --skip-python-loop --usecase uc3"
. docs/bench/run_one.sh
one() {  # name, tree, args...: bench/ and tefq/ of that tree
  name=$1; tree=$2; shift 2
  run_one "$name" sh -c 'cd "$0" && PYTHONPATH="$0" exec "$@"' "$tree" "$NOW/.venv/bin/python" $B "$@"
}
for pair in 1 2; do
  one uc3-2m-byshow-2buckets-$pair "$BEFORE" --events 2000000 --data /tmp/bench2m
  one uc3-2m-byuser-1bucket-$pair "$NOW" --events 2000000 --data /tmp/bench2m --buckets 1
  one uc3-2m-byuser-2buckets-$pair "$NOW" --events 2000000 --data /tmp/bench2m
done
one uc3-10m-byuser-1bucket-1 "$NOW" --events 10000000 --data /tmp/bench10m --batch-events 2000000 --limit-repeat 2 --buckets 1
one uc3-10m-byuser-2buckets-1 "$NOW" --events 10000000 --data /tmp/bench10m --batch-events 2000000 --limit-repeat 2
one uc3-10m-byshow-2buckets-1 "$BEFORE" --events 10000000 --data /tmp/bench10m --batch-events 2000000 --limit-repeat 2
