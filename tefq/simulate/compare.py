"""`tefq compare`: TEF with native facts against the simulated-fact baselines, side by side.

For each window size every approach runs the same use-case on the same events in the same
windowed executor (only the way state crosses a window differs), the rows of every simulation
are checked against the TEF rows, and the intermediate bindings and throughput are reported —
the paper's Fig. 3 (UC1) and Fig. 4 (UC2), regenerated. See docs/baselines.md.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Iterable

from tefq.errors import TefqError
from tefq.plan.logical import AggregateQuery, Document
from tefq.simulate import STRATEGIES, run, run_native
from tefq.vocabulary import Element

APPROACHES = ("tef",) + STRATEGIES
IPTV_NS = "http://example.org/iptv#"


@dataclass
class Measurement:
    approach: str
    window_s: float
    intermediate_bindings: int
    wall: list[float] = field(default_factory=list)
    events: int = 0
    rows_out: int = 0
    agrees: bool = True
    note: str = ""

    def row(self) -> dict:
        eps = [self.events / w if w > 0 else 0.0 for w in self.wall]
        out = {
            "approach": self.approach, "window_s": self.window_s,
            "intermediate_bindings": self.intermediate_bindings,
            "events_per_s": round(statistics.mean(eps), 1) if eps else None,
            "wall_s": round(statistics.mean(self.wall), 3) if self.wall else None,
            "events_per_s_min": round(min(eps), 1) if eps else None,
            "events_per_s_max": round(max(eps), 1) if eps else None,
            "wall_s_min": round(min(self.wall), 3) if self.wall else None,
            "wall_s_max": round(max(self.wall), 3) if self.wall else None,
            "repeats": len(self.wall), "events": self.events, "rows_out": self.rows_out,
            "agrees_with_tef": self.agrees,
        }
        if self.note:
            out["note"] = self.note
        return out


def with_every(doc: Document, every_ms: int) -> Document:
    return replace(doc, queries=tuple(replace(q, every_ms=every_ms) if isinstance(q, AggregateQuery) else q
                                      for q in doc.queries))


def _rows(result) -> list:
    return [(r.name, r.rows) for r in result.results]


def compare(doc: Document, elements: Iterable[Element], windows_ms: list[int], approaches: Iterable[str] = APPROACHES,
            repeat: int = 1, background=None, t0: int = 0, check_oracle: bool = False,
            progress=None, *, engine: str = "oracle", stream_paths: list[str] | None = None,
            csparql: str | None = None, spark=None) -> list[Measurement]:
    """Run every approach at every window size `repeat` times; rows are checked against TEF's.

    `engine="spark"` runs TEF and the simulations on Spark over `stream_paths` (one session, `spark`
    or a new one, for every run); `csparql-query` (the .rspql at `csparql`) always runs on the
    windowed oracle."""
    approaches = list(approaches)
    for a in approaches:
        if a not in APPROACHES + ("csparql-query",):
            raise TefqError(f"unknown approach '{a}' (expected {', '.join(APPROACHES + ('csparql-query',))})",
                            file="--approaches")
    if repeat < 1:
        raise TefqError(f"--repeat must be at least 1, got {repeat}", file="--repeat")
    if "csparql-query" in approaches and csparql is None:
        raise TefqError("csparql-query needs the use-case's C-SPARQL queries (usecases/ucN_csparql.rspql)",
                        file="--approaches")
    if engine == "spark":
        if not stream_paths:
            raise TefqError("compare --engine spark needs stream paths", file="--stream")
        if background is not None:
            raise TefqError("background knowledge is not yet supported on Spark (try --engine oracle)",
                            file="--background")
        if spark is None:
            from tefq.spark.runtime.session import get_session

            spark = get_session()
    from tefq.oracle import prepare

    events = prepare(elements)
    if engine == "spark" and windows_ms:
        # One unmeasured run: a session's first query pays Spark's JIT and worker start-up (TEF at
        # 10 s measured 4,753 events/s first, 15,536 after), and TEF always runs first.
        _run_one("tef", doc, events, windows_ms[0], background, t0, engine, stream_paths, spark)
    out: list[Measurement] = []
    for w in windows_ms:
        reference = None
        if check_oracle:
            from tefq.oracle import run as oracle_run

            reference = _rows(oracle_run(with_every(doc, w), events, background, t0=t0))
        tef_rows = None
        for a in ["tef"] + [a for a in approaches if a != "tef"]:
            m = Measurement(a, w / 1000, 0, events=len(events))
            for _ in range(repeat):
                if a == "csparql-query":
                    from tefq.simulate.csparql import check, run_csparql

                    c = run_csparql(csparql, events, w, t0)
                    m.wall.append(c.wall)
                    m.intermediate_bindings, m.rows_out = c.feedback_triples, len(c.rows)
                    m.agrees, m.note = check(c.rows, tef_rows[0][1] if tef_rows else [], events, w, t0)
                    if engine == "spark":
                        m.note = "csparql-query runs on the windowed oracle; " + m.note
                    continue
                started = time.perf_counter()
                r = _run_one(a, doc, events, w, background, t0, engine, stream_paths, spark)
                m.wall.append(time.perf_counter() - started)
                m.intermediate_bindings = r.metrics.intermediate_bindings
                m.rows_out = r.metrics.rows_out
                rows = _rows(r)
                if a == "tef":
                    tef_rows = rows
                    m.agrees = reference is None or rows == reference
                    if not m.agrees:
                        m.note = "TEF rows differ from the oracle's"
                else:
                    m.agrees = rows == tef_rows
                    if not m.agrees:
                        m.note = "rows differ from TEF's"
                del r, rows
            if a in approaches:
                out.append(m)
            if progress:
                progress(m)
    return out


def _run_one(approach: str, doc: Document, events: list[Element], w: int, background, t0: int, engine: str,
             stream_paths: list[str] | None, spark):
    if engine == "spark":
        if approach == "tef":
            from tefq.spark.engine import run as spark_run

            return spark_run(with_every(doc, w), list(stream_paths or []), t0=t0, progress=False, spark=spark)
        from tefq.spark.simulate import run as spark_simulate

        return spark_simulate(doc, list(stream_paths or []), approach, w, t0=t0, progress=False, spark=spark)
    if approach == "tef":
        return run_native(doc, events, w, background, t0)
    return run(doc, events, approach, w, background, t0)


def format_table(ms: list[Measurement]) -> str:
    head = f"{'approach':<14} {'window':>8} {'bindings':>12} {'events/s':>12} {'spread':>19} {'wall s':>8} {'agree':>6}"
    lines = [head, "-" * len(head)]
    for m in ms:
        r = m.row()
        spread = f"{r['events_per_s_min']:.0f}-{r['events_per_s_max']:.0f}" if r["events_per_s"] is not None else ""
        lines.append(f"{m.approach:<14} {_fmt_window(m.window_s):>8} {m.intermediate_bindings:>12} "
                     f"{(r['events_per_s'] or 0):>12.0f} {spread:>19} {(r['wall_s'] or 0):>8.2f} "
                     f"{'yes' if m.agrees else 'NO':>6}")
    return "\n".join(lines)


def _fmt_window(s: float) -> str:
    return f"{s:g}s"


# ---------------------------------------------------------------- inputs
def stream_paths(directory: str, usecase: str) -> list[str]:
    """A generated data set (`tefq gen iptv`) has log/ and epg/; UC3 reads both, UC1/UC2 the log."""
    if not os.path.exists(directory):
        raise TefqError(f"no such stream file or directory: {directory}", file="--stream")
    log, epg = os.path.join(directory, "log"), os.path.join(directory, "epg")
    if os.path.isdir(log):
        paths = [log]
        if usecase == "uc3":
            if not os.path.isdir(epg):
                raise TefqError(f"UC3 needs the program guide: {epg} is missing (generate with --epg)", file="--stream")
            paths.append(epg)
        return paths
    return [directory]


def read_elements(paths: list[str]) -> list[Element]:
    from tefq.io.readers import read_stream

    out: list[Element] = []
    for p in paths:
        out.extend(read_stream(p))
    return out
