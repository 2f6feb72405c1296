# Sourced by the bench scripts (from the repository root): `run_one NAME CMD...` runs
# `CMD... --json "$OUT/NAME.json"` with its output in "$OUT/NAME.log", and prints when it started
# and ended with the load average (the machine must be near idle for a figure to count).
run_one() {
  name=$1; shift
  echo "$(date -u +%T) $name load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$@" --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
  echo "$(date -u +%T) $name done rc=$? load $(cut -d' ' -f1-3 /proc/loadavg)"
}
