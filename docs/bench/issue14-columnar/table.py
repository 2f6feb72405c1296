"""Print the A/B table of this directory's JSONs (columnar vs rows ingestion)."""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for f in sorted(glob.glob(os.path.join(sys.argv[1] if len(sys.argv) > 1 else HERE, "*.json")), key=os.path.getmtime):
    r = json.load(open(f))
    steady = [b for b in r["micro_batches"][1:] if b["events"] > 1]
    print(f"{os.path.basename(f):24} {r.get('ingest'):8} steady {r['steady_events_per_s'] / 1e3:7.1f}k "
          f"limit {r['limit_events_per_s'] / 1e6:5.2f}M ratio {r['steady_vs_limit']:.3f} "
          f"batch1 {steady[0]['seconds']:5.2f}s wall {r['wall_seconds']:5.1f}s collect {r['collect_seconds']:4.1f}s "
          f"rows {r['rows_out']} agree {r['rows_agree']} load {r['load_average_start'][0]}-{r['load_average_end'][0]}")
