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
from tefq.io.readers import read_stream
from tefq.oracle import prepare, run as oracle_run
from tefq.plan.logical import AggregateQuery, Document
from tefq.results import RunResult
from tefq.service import RunRequest, SparkOptions, execute
from tefq.simulate import STRATEGIES, run, run_native
from tefq.simulate.csparql import check, run_csparql
from tefq.vocabulary import Element

APPROACHES = ("tef",) + STRATEGIES


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

    `engine="spark"` runs TEF and the simulations on Spark over `stream_paths` through the run
    service (one session, `spark` or a new one, for every run); `csparql-query` (the .rspql at
    `csparql`) always runs on the windowed oracle."""
    approaches = list(approaches)
    check_approaches(approaches, repeat, csparql)
    bench = Bench(doc, prepare(elements), background, t0, engine, stream_paths, csparql, spark)
    if engine == "spark":
        bench.start_spark(windows_ms[0] if windows_ms else None)
    out: list[Measurement] = []
    for w in windows_ms:
        reference = _rows(oracle_run(with_every(doc, w), bench.events, background, t0=t0)) if check_oracle else None
        tef_rows = None
        for a in ["tef"] + [a for a in approaches if a != "tef"]:
            m, rows = bench.measure(a, w, repeat, reference, tef_rows)
            if a == "tef":
                tef_rows = rows
            if a in approaches:
                out.append(m)
            if progress:
                progress(m)
    return out


def check_approaches(approaches: list[str], repeat: int, csparql: str | None) -> None:
    for a in approaches:
        if a not in APPROACHES + ("csparql-query",):
            raise TefqError(f"unknown approach '{a}' (expected {', '.join(APPROACHES + ('csparql-query',))})",
                            file="--approaches")
    if repeat < 1:
        raise TefqError(f"--repeat must be at least 1, got {repeat}", file="--repeat")
    if "csparql-query" in approaches and csparql is None:
        raise TefqError("csparql-query needs the use-case's C-SPARQL queries (usecases/ucN_csparql.rspql)",
                        file="--approaches")


@dataclass
class Bench:
    """One comparison's fixed inputs: the document, the events (read once, prepared), the engine."""

    doc: Document
    events: list[Element]
    background: object
    t0: int
    engine: str
    stream_paths: list[str] | None
    csparql: str | None
    spark: object

    def start_spark(self, warm_up_window: int | None) -> None:
        """A session for every run, and one unmeasured run: a session's first query pays Spark's
        JIT and worker start-up (TEF at 10 s measured 4,753 events/s first, 15,536 after), and TEF
        always runs first."""
        if not self.stream_paths:
            raise TefqError("compare --engine spark needs stream paths", file="--stream")
        if self.background is not None:
            raise TefqError("background knowledge is not yet supported on Spark (try --engine oracle)",
                            file="--background")
        if self.spark is None:
            # deferred: pyspark takes ~2 s to import; only a Spark run needs it
            from tefq.spark.runtime.session import get_session

            self.spark = get_session()
        if warm_up_window is not None:
            self.run_one("tef", warm_up_window)

    def measure(self, approach: str, w: int, repeat: int, reference: list | None,
                tef_rows: list | None) -> tuple[Measurement, list | None]:
        """`repeat` runs of one approach at window `w`, checked against the oracle's rows
        (`reference`, TEF only) or TEF's (`tef_rows`); and the last run's rows per query."""
        m = Measurement(approach, w / 1000, 0, events=len(self.events))
        rows = None
        for _ in range(repeat):
            if approach == "csparql-query":
                self.measure_csparql(m, w, tef_rows)
                continue
            started = time.perf_counter()
            r = self.run_one(approach, w)
            m.wall.append(time.perf_counter() - started)
            m.intermediate_bindings, m.rows_out = r.metrics.intermediate_bindings, r.metrics.rows_out
            rows = _rows(r)
            del r
            if approach == "tef":
                m.agrees = reference is None or rows == reference
                if not m.agrees:
                    m.note = "TEF rows differ from the oracle's"
            else:
                m.agrees = rows == tef_rows
                if not m.agrees:
                    m.note = "rows differ from TEF's"
        return m, rows

    def measure_csparql(self, m: Measurement, w: int, tef_rows: list | None) -> None:
        c = run_csparql(self.csparql, self.events, w, self.t0)  # type: ignore[arg-type]
        m.wall.append(c.wall)
        m.intermediate_bindings, m.rows_out = c.feedback_triples, len(c.rows)
        m.agrees, m.note = check(c.rows, tef_rows[0][1] if tef_rows else [], self.events, w, self.t0)
        if self.engine == "spark":
            m.note = "csparql-query runs on the windowed oracle; " + m.note

    def run_one(self, approach: str, w: int) -> RunResult:
        """One approach at window `w`: on Spark through the run service; on the oracle side the
        simulations' shared windowed executor over the events read once (what is measured)."""
        if self.engine == "spark":
            tef = approach == "tef"
            request = RunRequest(with_every(self.doc, w) if tef else self.doc, list(self.stream_paths or []),
                                 engine="spark", t0=self.t0, simulate=None if tef else approach,
                                 window=None if tef else w, progress=False, spark=SparkOptions(session=self.spark))
            return execute(request).run
        if approach == "tef":
            return run_native(self.doc, self.events, w, self.background, self.t0)
        return run(self.doc, self.events, approach, w, self.background, self.t0)


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
    out: list[Element] = []
    for p in paths:
        out.extend(read_stream(p))
    return out
