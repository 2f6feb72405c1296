"""The general fallback: any aggregate query shape on Spark, evaluated by the oracle per micro-batch.

One bucket holds every element read so far (its state) and, each micro-batch, asks the oracle for
the rows of the ticks that just became final (rows at `tau` depend only on events `t <= tau`).
Correct for every shape the oracle knows (derived facts, WHILE, FILTER, background patterns, ...),
with restart and late-data handling like the vectorised operator, but O(input) per micro-batch and
one bucket: use it for correctness, not for throughput. The planner picks it only when the vectorised
operator does not support the query.
"""
from __future__ import annotations

import pickle
from typing import Iterator

import pandas as pd

from tefq.plan.logical import Document
from tefq.spark.facts import tick_at_or_after, tick_at_or_before
from tefq.spark.operator import FLUSH, MAX_WARNINGS
from tefq.spark.output import json_record

ORDER_SHIFT = 1 << 42


class FallbackState:
    def __init__(self) -> None:
        self.elements: list[tuple[int, int, str, str, str]] = []  # (ts, order, s, p, o)
        self.gmin: int | None = None
        self.gmax: int | None = None
        self.last_tick: int | None = None
        self.batches = 0
        self.flushed = False


def make_fallback_operator(doc: Document, query_index: int, every: int, t0: int, lateness_ms: int,
                           background: list | None = None, evaluate=None):
    """`background`: the background graph's triples as rdflib terms (picklable, so they travel to
    the executors inside this closure; the oracle indexes them). `evaluate(doc, elements, background,
    t0) -> RunResult` defaults to the oracle (the simulations pass theirs)."""
    from dataclasses import replace

    single = replace(doc, queries=(doc.queries[query_index],))

    def op(key, pdfs: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        from tefq.oracle import run as oracle_run

        run = evaluate or oracle_run
        st: FallbackState = pickle.loads(state.get[0]) if state.exists else FallbackState()
        st.batches += 1
        out: list[tuple[str, int, bytes]] = []
        metrics: dict = {"late_events": 0, "rows_out": 0}
        flush = False
        for pdf in pdfs:
            if not len(pdf):
                continue
            flush = flush or bool((pdf["k"] == FLUSH).any())
            data = pdf[pdf["k"] == 0]
            if not len(data):
                continue
            lo, hi = int(data["ts"].min()), int(data["ts"].max())
            st.gmin = lo if st.gmin is None else min(st.gmin, lo)
            st.gmax = hi if st.gmax is None else max(st.gmax, hi)
            metrics["read"] = metrics.get("read", 0) + len(data)
            if st.last_tick is not None:
                late = data["ts"] <= st.last_tick
                metrics["late_events"] += int(late.sum())
                for ts in data["ts"][late].head(MAX_WARNINGS).tolist():
                    out.append(("warn", int(ts), (f"late event at {ts} ms ignored: ticks up to "
                                                  f"{st.last_tick} were already reported").encode("utf-8")))
                data = data[~late]
            st.elements.extend(zip(data["ts"].tolist(), (st.batches * ORDER_SHIFT + data["o"]).tolist(),
                                   data["s"].tolist(), data["p"].tolist(), data["obj"].tolist()))
        if st.gmax is not None and not st.flushed:
            first = tick_at_or_after(st.gmin, t0, every)
            start = first if st.last_tick is None else st.last_tick + every
            upto = (tick_at_or_after(st.gmax, t0, every) if flush
                    else tick_at_or_before(st.gmax - lateness_ms - 1, t0, every))
            if upto >= start:
                st.elements.sort(key=lambda e: (e[0], e[1]))
                res = run(single, [(t, s, p, o) for t, _, s, p, o in st.elements], background, t0)
                rows = [r for r in res.results[0].rows if start <= r[0] <= upto]
                out.extend(json_record("row", t, list(cells)) for t, cells in rows)
                metrics["rows_out"] = len(rows)
                metrics["ticks"] = (upto - start) // every + 1
                st.last_tick = upto
                if flush:
                    m = res.metrics
                    metrics.update(events_in=m.events_in, facts_created=m.facts_created,
                                   facts_closed=m.facts_closed, unmatched_until=m.unmatched_until,
                                   intermediate_bindings=m.intermediate_bindings)
            if flush:
                st.flushed = True
        metrics["batch"] = st.batches
        blob = pickle.dumps(st, protocol=5)
        metrics["state_bytes"] = len(blob)
        state.update((blob,))
        out.append(json_record("metric", st.gmax or 0, metrics))
        yield pd.DataFrame(out, columns=["kind", "tick", "payload"])

    return op
