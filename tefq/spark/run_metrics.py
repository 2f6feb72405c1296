"""A Spark run's metrics (tefq.results.Metrics) from its queries' sink metrics (the operators'
summed `batch_metrics`, `output.Collector.run_metrics`)."""
from __future__ import annotations

from tefq.results import Metrics


def fill_metrics(m: dict, metrics: Metrics) -> Metrics:
    """The run's metrics (filled in) from the first fact query's sink metrics."""
    m["events_in"] = applied_events(m)
    for k in ("events_in", "facts_created", "facts_closed", "unmatched_until", "late_events", "ticks"):
        setattr(metrics, k, int(m.get(k, 0)))
    metrics.extra["bad_rows"] = int(m.get("bad_rows", 0))
    metrics.extra["duplicates"] = int(m.get("duplicates", 0))  # equal elements at one time, applied once
    metrics.extra["micro_batches"] = m.get("micro_batches", [])
    if "state_by_batch" in m:  # a follow run's state size per micro-batch (runtime/follow.SinkTail)
        metrics.extra["state_by_batch"] = m["state_by_batch"]
    metrics.extra["collect_seconds"] = m.get("collect_seconds")
    metrics.extra["ingest"] = m.get("ingest", "rows")
    metrics.extra["state_bytes_per_open_fact"] = m.get("state_bytes_per_open_fact")
    metrics.extra["late_by_index"] = late_by_index(m)
    return metrics


def applied_events(m: dict) -> int:
    """`events_in` as the oracle counts it (docs/semantics.md): the elements applied, each once (a
    stream is a set). The TEF sinks count the elements read, their repeats and the late ones (left
    out: not applied); a plan that counts otherwise hands on its own (`applied_events`: the
    fallback's oracle, the windowed plan, whose late elements still apply to windows open)."""
    if "applied_events" in m:
        return int(m["applied_events"])
    return int(m.get("events_in", 0) - m.get("duplicates", 0) - m.get("late_events", 0))


def late_by_index(m: dict) -> dict[int, int]:
    """Late elements per input stream index, from a sink's `late_stream.<i>` metrics."""
    return {int(k.split(".", 1)[1]): int(v) for k, v in m.items() if k.startswith("late_stream.")}
