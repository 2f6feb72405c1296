"""Print one line per JSON of a run directory (run.sh OUTDIR), oldest first: path, steady rate,
limit, ratio, wall, rows and late events checked, load at start and end."""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for f in sorted(glob.glob(os.path.join(sys.argv[1] if len(sys.argv) > 1 else HERE, "*.json")), key=os.path.getmtime):
    r = json.load(open(f))
    steady = r.get("steady_events_per_s") or 0
    batches = [b["seconds"] for b in r["micro_batches"]]
    print(f"{os.path.basename(f):26} {r.get('ingest'):8} steady {steady / 1e3:7.1f}k "
          f"limit {r['limit_events_per_s'] / 1e6:5.2f}M ratio {r.get('steady_vs_limit') or 0:.3f} "
          f"whole {r['events_per_s'] / 1e3:6.1f}k wall {r['wall_seconds']:5.1f}s batches {batches} "
          f"rows {r['rows_out']} late {r.get('late_events', '?')} cells {r.get('rows_equal_limit_cells', '-')} agree {r['rows_agree']} load {r['load_average_start'][0]}-{r['load_average_end'][0]}")
