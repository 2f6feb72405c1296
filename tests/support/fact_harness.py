"""The fact plan's operator driven without Spark (derived facts, WHILE, UC3 variants): wire rows, feeding, the oracle's rows and summed metrics."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import strategies as st

from tefq.plan.logical import Pattern, Var, WherePattern
from tefq.spark.output import Collector
from tefq.spark.planning.fact import FactAggregatePlan
from tefq.spark.protocol import FLUSH, HEARTBEAT
from tests.support import spark_docs as sd
from tests.support.operator_harness import h  # the operator tests' stand-ins

IPTV = sd.IPTV


def fact_rows(plan: FactAggregatePlan, part, offset: int) -> list[dict]:
    """What the Spark projection sends for `part`: one row per matching (fact, clause)."""
    pos = {"s": 0, "p": 1, "o": 2}
    arity = max(len(f.identity) for f in plan.event_facts)
    nterms = max([len(f.terms) for f in plan.event_facts] + [0])
    rows = []
    for j, el in enumerate(part):
        t, triple = el[0], el[1:]
        for i, f in enumerate(plan.event_facts):
            for c in f.clauses:
                if any(triple[pos[col]] != term for col, term in c.consts) or \
                        any(triple[pos[x]] != triple[pos[y]] for x, y in c.same):
                    continue
                terms = [triple[pos[col]] for col in c.binds]
                r = dict(k=c.kind, fact=i, ts=t, o=offset + j, f=h(*terms), e=h(*triple), n=0, b=0)
                for v in range(arity):
                    r[f"v{v}"] = h(terms[v]) if v < len(terms) else 0
                for v in range(nterms):
                    r[f"t{v}"] = terms[f.terms[v]] if c.kind == 0 and v < len(f.terms) else None
                rows.append(r)
    return rows


def feed(call, plan: FactAggregatePlan, elements, batch_sizes: list[int]) -> None:
    """Hand `elements` to an operator call in micro-batches of `batch_sizes`, each followed by its
    heartbeat, then the end-of-input flush (as the engine's mapper does)."""
    def control(kind, ts=0, o=0, f=0):
        return dict(k=kind, fact=0, ts=ts, o=o, f=f, e=0, n=0, b=0)

    i, sizes = 0, list(batch_sizes)
    while i < len(elements):
        n = sizes.pop(0) if sizes else len(elements)
        part = elements[i:i + n]
        call(fact_rows(plan, part, i) + [control(HEARTBEAT, min(e[0] for e in part), max(e[0] for e in part),
                                                 len(part))])
        i += n
    call([control(FLUSH)])


def summed_metrics(col: Collector) -> dict:
    """The buckets' metrics summed, duplicates taken out of events_in (as the engine reports)."""
    metrics: dict = {}
    for d in col.metrics:
        for k, v in d.items():
            metrics[k] = metrics.get(k, 0) + v
    metrics["events_in"] = metrics.get("events_in", 0) - metrics.get("duplicates", 0)
    # a merging routing's bucket emits shares of rows; one bucket fed every row emits whole rows
    metrics["rows_out"] = metrics.get("rows_out", 0) + metrics.get("partial_rows", 0)
    return metrics


def oracle(doc, elements):
    from tefq.oracle import run

    return run(doc, elements, None, 0)


@st.composite
def uc3_streams(draw, max_events: int = 40):
    """Users joining/quitting channels and channels starting/finishing programs, with ties, events on
    tick boundaries (multiples of 1000 and 2000 ms) and programs shown on two channels at once."""
    out, t = [], draw(st.integers(0, 4000))
    for _ in range(draw(st.integers(1, max_events))):
        t += draw(st.sampled_from([0, 0, 1, 999, 1000, 1001, 2000, 3000]))
        if draw(st.integers(0, 2)):
            out.append((t, f"<{IPTV}u{draw(st.integers(0, 3))}>", f"<{IPTV}{draw(st.sampled_from(['join', 'join', 'quit']))}>",
                        f"<{IPTV}ch{draw(st.integers(0, 1))}>"))
        else:
            out.append((t, f"<{IPTV}ch{draw(st.integers(0, 1))}>",
                        f"<{IPTV}{draw(st.sampled_from(['start', 'start', 'finish']))}>",
                        f"<{IPTV}prog{draw(st.integers(0, 2))}>"))
    return out, draw(st.lists(st.integers(1, 12), max_size=6))


def uc3_variant(kind: str, every: int) -> object:
    """UC3 (fact pattern under WHILE) and its relatives: CURRENT under WHILE, no WHILE."""
    doc = sd.uc3(every)
    q = doc.queries[0]
    if kind == "current_while":
        q = replace(q, where=(replace(q.where[0], kind="current"),))
    elif kind == "fact_nowhile":
        q = replace(q, while_=None)
    elif kind == "current_nowhile":
        q = replace(q, where=(replace(q.where[0], kind="current"),), while_=None)
    elif kind == "while_nogroup":  # no GROUP BY: one group, reported while some program is on
        q = replace(q, group_by=(), select=q.select[1:])
    elif kind == "count_all":  # COUNT(*) and AVG over an event fact under WHILE
        from tefq.plan.logical import Aggregate, Call, Projection

        u, c, s, e = Var("user"), Var("channel"), Var("S"), Var("E")
        q = replace(q, group_by=(c,), select=(Projection(c, "Channel"), Projection(Var("N"), "N"),
                                              Projection(Var("Avg"), "Avg")),
                    aggregates=(Aggregate("COUNT", None, False, "N"),
                                Aggregate("AVG", Call("DURATION", (s, e)), False, "Avg")),
                    where=(WherePattern("fact", Pattern(u, sd.t("watching"), c), ("UserFact",), (s, e)),),
                    while_=WherePattern("fact", Pattern(c, sd.t("showing"), Var("p")), ("ProgramFact",)))
        doc = replace(doc, facts=doc.facts[:2])  # facts_created counts the facts the query needs
    return replace(doc, queries=(q,))


def uc3_with_shared_trigger(every: int):
    """UC3 plus an event fact triggered by the same `join` as UserFact, in the derived body: one
    element then matches two clauses (the Spark projection explodes it into one row per fact)."""
    from tefq.plan.logical import Clause, DerivedFact, EventFact

    u, c, p = Var("user"), Var("channel"), Var("program")
    ever = EventFact("EverJoined", Pattern(u, sd.t("joinedonce"), c), (u, c),
                     since=(Clause(Pattern(u, sd.t("join"), c)),), until=())
    doc = sd.uc3(every)
    view = DerivedFact("ViewShipFact", Pattern(u, sd.t("attends"), p), (u, p), (
        WherePattern("fact", Pattern(u, sd.t("watching"), c), ("UserFact",)),
        WherePattern("fact", Pattern(u, sd.t("joinedonce"), c), ("EverJoined",)),
        WherePattern("fact", Pattern(c, sd.t("showing"), p), ("ProgramFact",))))
    return replace(doc, facts=(doc.facts[0], ever, doc.facts[1], view))


SIGN = np.int64(-2 ** 63)  # flips a code's sign bit: xxhash64 codes are negative half the time


def columns(plan: FactAggregatePlan) -> list[str]:
    arity = max(len(f.identity) for f in plan.event_facts)
    nterms = max([len(f.terms) for f in plan.event_facts] + [0])
    return (["k", "fact", "ts", "o", "f", "e", "n"] + [f"v{i}" for i in range(arity)]
            + [f"t{i}" for i in range(nterms)] + ["b"])


def batch_of(plan: FactAggregatePlan, recs: list[dict]) -> pa.RecordBatch:
    df = pd.DataFrame(recs, columns=columns(plan))
    for c in df.columns:
        if c.startswith("v"):
            df[c] = df[c].fillna(0).astype(np.int64) ^ SIGN
    return pa.RecordBatch.from_pandas(df, preserve_index=False)
