"""Whether a live run's state stays bounded (bench/live.py; issue 24): the operator's state (open
facts, bytes: `state_by_batch` in the run's metrics, `tefq.spark.runtime.follow.SinkTail`) and the
state store's own figures and work per micro-batch (`micro_batches[i]["state_sizes"]` and
`["state_ms"]`, Spark's progress: `tefq.spark.runtime.progress`), the median of the first third of
the run's micro-batches against that of the last third. Sizes do not depend on the machine's load,
so a growing state shows in short runs at a low rate."""
from __future__ import annotations

# name in the trend -> (where it is, key): the operator's state, the store's state and its work
SIZES = {"open_facts": ("operator", "open_facts"), "state_bytes": ("operator", "state_bytes"),
         "store_rows": ("state_sizes", "numRowsTotal"), "store_memory_bytes": ("state_sizes", "memoryUsedBytes"),
         "sst_bytes": ("state_sizes", "rocksdbSstFileSize"),
         "bytes_written": ("state_sizes", "rocksdbTotalBytesWritten")}
PER_100K_EVENTS = ("allUpdatesTimeMs", "commitTimeMs", "rocksdbPutLatency", "rocksdbGetLatency")


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


def first_and_last_third(values: list[float]) -> dict:
    third = max(len(values) // 3, 1)
    return {"first": median(values[:third]), "last": median(values[-third:]), "peak": max(values, default=float("nan"))}


def state_trend(metrics: dict) -> dict:
    """Per figure: the first third's median, the last third's and the peak over the micro-batches."""
    operator = [b for b in metrics.get("state_by_batch") or [] if isinstance(b, dict)]
    busy = [b for b in metrics.get("micro_batches") or [] if isinstance(b, dict) and b.get("rows")][1:]
    out: dict[str, dict] = {}
    for name, (where, key) in SIZES.items():
        rows = operator if where == "operator" else [b.get(where) or {} for b in busy]
        values = [float(r[key]) for r in rows if key in r]
        if values:
            out[name] = first_and_last_third(values)
    full = [b for b in busy if b["rows"] >= median([b["rows"] for b in busy]) / 2]  # not the trickles of warm-up
    for key in PER_100K_EVENTS:  # the store's work per event: grows only if something per batch grows
        values = [1e5 * (b.get("state_ms") or {}).get(key, 0) / b["rows"] for b in full if key in (b.get("state_ms") or {})]
        if values:
            out[f"{key}_per_100k_events"] = first_and_last_third(values)
    return out


def trend_line(trend: dict) -> str:
    """One printed line: first -> last third (peak)."""
    return "; ".join(f"{k} {v['first']:,.0f} -> {v['last']:,.0f} (peak {v['peak']:,.0f})" for k, v in trend.items())
