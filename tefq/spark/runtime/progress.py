"""A running streaming query on the driver: progress lines, waiting for the end, worker errors."""
from __future__ import annotations

import sys

from tefq.errors import TefqError
from tefq.spark.runtime.mappers import BAD_ROW

def as_dict(v) -> dict:
    if v is None:
        return {}
    return v.asDict() if hasattr(v, "asDict") else dict(v)



class Progress:
    def __init__(self, enabled: bool, name: str) -> None:
        self.enabled, self.name, self.seen = enabled, name, -1
        self.batches: list[dict] = []  # per micro-batch: id, input rows, ms, state bytes (for the bench)

    def report(self, query) -> None:
        for p in query.recentProgress:
            if p["batchId"] > self.seen:
                self._one(p)

    def _one(self, p) -> None:
        self.seen = p["batchId"]
        self.batches.append({"batch": p["batchId"], "rows": p.get("numInputRows", 0),
                             "ms": p.get("durationMs", {}).get("triggerExecution", 0),
                             "durations_ms": dict(p.get("durationMs", {})),
                             "state_bytes": sum(op.get("memoryUsedBytes", 0) for op in p.get("stateOperators", []))})
        if not self.enabled:
            return
        observed = p.get("observedMetrics") or {}
        obs, obs_out = (as_dict(observed.get(name)) for name in ("tefq_in", "tefq_out"))
        state = sum(op.get("memoryUsedBytes", 0) for op in p.get("stateOperators", []))
        print(f"[spark {self.name}] batch {p['batchId']}: events read {p.get('numInputRows', 0)}, "
              f"event time {obs.get('event_time')}, ticks emitted {obs_out.get('ticks') or 0}, "
              f"rows emitted {obs_out.get('rows') or 0}, "
              f"state {state} bytes, {p.get('durationMs', {}).get('triggerExecution', 0)} ms", file=sys.stderr)



def run_until_done(query, progress: Progress) -> None:
    while query.isActive:
        query.awaitTermination(1.0)
        progress.report(query)
    progress.report(query)
    exc = query.exception()
    if exc is not None:
        raise exc



def bad_row_error(text: str) -> TefqError:
    i = text.find(BAD_ROW + "\t")
    tail = text[i + len(BAD_ROW) + 1:].split("\n", 1)[0]
    file, reason, *_ = (tail.split("\t") + ["", ""])[:3]
    from urllib.parse import unquote, urlparse

    path = unquote(urlparse(file).path) if file.startswith("file:") else file
    try:  # the readers know the line and column
        from tefq.io.readers import read_stream_file

        for _ in read_stream_file(path):
            pass
    except TefqError as e:
        return e
    except Exception:  # noqa: BLE001 - fall back to Spark's view of the row
        pass
    return TefqError(f"bad stream row: {reason}", path)



def ours(e: Exception) -> Exception:
    """Spark wraps worker errors: a bad row becomes the reader's located TefqError."""
    text = str(e)
    return bad_row_error(text) if BAD_ROW in text else e
