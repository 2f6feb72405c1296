"""Derived facts and WHILE on Spark, vectorised (tefq.spark.kernels.joins*): the kernels against
brute-force models, the operator against the oracle without Spark over hypothesis streams, and
real Spark against the oracle on generated UC3 data."""
from __future__ import annotations

import math
import os
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.plan.logical import Pattern, Var, WherePattern
from tefq.spark.kernels.exact import limb_sums, rounded
from tefq.spark.kernels.intervals import OPEN
from tefq.spark.kernels.joins import Relation, coalesce, derive, interval_join
from tefq.spark.operators.fact import make_fact_operator
from tefq.spark.planning.fact import FactAggregatePlan
from tefq.spark.planning.fallback import FallbackPlan
from tefq.spark.shapes import collector_of, explain_physical, plan_document
from tefq.vocabulary import RunSettings
from tests.support import spark_docs as sd
from tests.support.fact_harness import (IPTV, feed, oracle, summed_metrics, uc3_streams, uc3_variant,
                                        uc3_with_shared_trigger)
from tests.support.operator_harness import FakeState  # the operator tests' stand-ins

# ---------------------------------------------------------------- kernels vs brute force
def rel(names, rows) -> Relation:
    """rows: (codes..., start, end)."""
    a = np.array(rows, dtype=np.int64).reshape(-1, len(names) + 2)
    return Relation(tuple(names), a[:, :len(names)].copy(), a[:, -2].copy(), a[:, -1].copy())


def as_set(r: Relation, names) -> set:
    return {tuple(c) + (s, e) for c, s, e in zip(r.columns(tuple(names)).tolist(), r.start.tolist(), r.end.tolist())}


def maximal(ms_by_key: dict) -> set:
    """Per key, the set of valid milliseconds as maximal half-open intervals."""
    out = set()
    for key, ms in ms_by_key.items():
        run = None
        for t in sorted(ms):
            if run and t == run[1]:
                run[1] = t + 1
            else:
                if run:
                    out.add(key + tuple(run))
                run = [t, t + 1]
        if run:
            out.add(key + tuple(run))
    return out


intervals = st.tuples(st.integers(0, 12), st.integers(0, 6)).map(lambda x: (x[0], x[0] + x[1]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), intervals), max_size=12),
       st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), intervals), max_size=12))
def test_interval_join_finds_every_overlapping_pair_once(left, right):
    a = rel(["u", "c"], [(u, c, s, e) for u, c, (s, e) in left])
    b = rel(["c", "p"], [(c, p, s, e) for c, p, (s, e) in right])
    got = interval_join(a, b)
    want = sorted((u, c, p, max(s1, s2), min(e1, e2)) for u, c, (s1, e1) in left for c2, p, (s2, e2) in right
                  if c == c2 and s1 < e1 and s2 < e2 and max(s1, s2) < min(e1, e2))
    assert got.vars == ("u", "c", "p")
    assert sorted(map(tuple, np.column_stack([got.codes, got.start, got.end]).tolist())) == want


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), intervals), max_size=15))
def test_coalesce_is_the_union_per_key_as_maximal_intervals(rows):
    got = coalesce(rel(["k"], [(k, s, e) for k, (s, e) in rows]))
    ms: dict = {}
    for k, (s, e) in rows:
        ms.setdefault((k,), set()).update(range(s, e))
    assert as_set(got, ["k"]) == maximal(ms)
    assert len(got) == len(as_set(got, ["k"]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1), intervals), max_size=10),
       st.lists(st.tuples(st.integers(0, 1), st.integers(0, 2), intervals), max_size=10),
       st.integers(0, 14))
def test_derive_equals_per_millisecond_model_also_carried_across_a_cut(left, right, at):
    """UC3's ViewShipFact: valid at ms t iff some channel has the user watching and the program on.
    Deriving in two steps (intervals alive at `at`, plus the derived facts open at `at` cut there)
    gives the same facts as deriving once."""
    a = rel(["user", "channel"], [(u, c, s, e) for u, c, (s, e) in left])
    b = rel(["channel", "program"], [(c, p, s, e) for c, p, (s, e) in right])
    ms: dict = {}
    for u, c, (s1, e1) in left:
        for c2, p, (s2, e2) in right:
            if c == c2:
                ms.setdefault((u, p), set()).update(range(max(s1, s2), min(e1, e2)))
    once = derive([a, b], ("user", "program"))
    assert as_set(once, ["user", "program"]) == maximal(ms)
    # Two steps: the state at `at` keeps facts open there (as OPEN), the body keeps what is alive.
    from tefq.spark.kernels.joins import cut

    first = derive([a.take(np.nonzero(a.start <= at)[0]), b.take(np.nonzero(b.start <= at)[0])], ("user", "program"))
    first = Relation(first.vars, first.codes, first.start, np.where(first.end > at, OPEN, first.end))
    open_at = first.take(np.nonzero(first.end == OPEN)[0])
    closed_at = first.take(np.nonzero(first.end != OPEN)[0])
    alive_a, alive_b = a.take(np.nonzero(a.end > at)[0]), b.take(np.nonzero(b.end > at)[0])
    second = derive([alive_a, alive_b], ("user", "program"), cut(open_at, at))
    assert as_set(closed_at, ["user", "program"]) | as_set(second, ["user", "program"]) == maximal(ms)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10**10)), max_size=40))
def test_limb_sums_round_like_math_fsum(pairs):
    cell = np.array([c for c, _ in pairs], dtype=np.int64)
    x = np.array([m for _, m in pairs], dtype=np.int64) / 1000.0
    got = rounded(limb_sums(cell, x, 4))
    for c in range(4):
        want = math.fsum(v for cc, v in zip(cell.tolist(), x.tolist()) if cc == c)
        assert got[c] == want and math.copysign(1, got[c]) == math.copysign(1, want)


# ---------------------------------------------------------------- the operator without Spark


def drive(doc, elements, batch_sizes: list[int], lateness: int = 0):
    (plan,) = plan_document(doc, 4)
    assert isinstance(plan, FactAggregatePlan)
    op = make_fact_operator(plan, RunSettings(0, lateness))
    state = FakeState()
    col = collector_of(plan)
    arity = max(len(f.identity) for f in plan.event_facts)
    nterms = max([len(f.terms) for f in plan.event_facts] + [0])
    cols = ["k", "fact", "ts", "o", "f", "e", "n"] + [f"v{i}" for i in range(arity)] + \
        [f"t{i}" for i in range(nterms)] + ["b"]

    def call(recs: list[dict]) -> None:
        for out in op((0,), iter([pd.DataFrame(recs, columns=cols)]), state):
            for kind, tick, payload in out.itertuples(index=False):
                col.add(kind, tick, payload)

    feed(call, plan, elements, batch_sizes)
    metrics = summed_metrics(col)
    return sorted(col.rows()), metrics


VARIANTS = ["uc3", "current_while", "fact_nowhile", "current_nowhile", "while_nogroup", "count_all"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(uc3_streams(), st.sampled_from(VARIANTS), st.sampled_from([1000, 2000]))
def test_operator_agrees_with_oracle_over_micro_batches(stream, variant, every):
    elements, sizes = stream
    doc = uc3_variant(variant, every)
    rows, metrics = drive(doc, elements, sizes)
    want = oracle(doc, elements)
    assert rows == want.results[0].rows
    for k in ("facts_created", "facts_closed", "unmatched_until", "ticks", "rows_out", "events_in"):
        assert metrics.get(k, 0) == getattr(want.metrics, k), k


def test_derived_fact_whose_parts_change_inside_one_micro_batch():
    """A user switches channel at the very ms the program moves there: one coalesced attends fact."""
    j, q, s, f = (f"<{IPTV}{x}>" for x in ("join", "quit", "start", "finish"))
    u, c1, c2, p = f"<{IPTV}u>", f"<{IPTV}c1>", f"<{IPTV}c2>", f"<{IPTV}news>"
    elements = [(0, c1, s, p), (500, u, j, c1), (3000, u, q, c1), (3000, c1, f, p), (3000, c2, s, p),
                (3000, u, j, c2), (7500, u, q, c2), (9000, c2, f, p)]
    doc = sd.uc3(1000)
    for sizes in ([1] * 8, [3, 5], [8]):
        rows, metrics = drive(doc, elements, sizes)
        assert rows == oracle(doc, elements).results[0].rows
        assert metrics["facts_created"] == oracle(doc, elements).metrics.facts_created
    at5 = [r for r in rows if r[0] == 5000]
    assert at5 and at5[0][1][2] == '"4.5"^^<http://www.w3.org/2001/XMLSchema#double>'  # 5000 - 500 ms


def test_uc3_is_planned_on_the_fact_operator_not_the_fallback():
    (plan,) = plan_document(sd.uc3(), 2)
    assert isinstance(plan, FactAggregatePlan) and plan.buckets == 2 and plan.replicated == {"ProgramFact"}
    assert plan.fact == "ViewShipFact" and not plan.current and plan.while_.fact == "ProgramFact"
    assert [f.name for f in plan.facts] == ["UserFact", "ProgramFact", "ViewShipFact"]
    text = explain_physical(sd.uc3(), 4)
    assert "FactAggregateOperator" in text and "UserFact(?user, ?channel) JOIN ProgramFact(?channel, ?program)" in text
    assert "replicated to every bucket (4 copies of each row): ProgramFact" in text
    assert "interval join" in text and "general fallback" not in text


def test_shapes_beyond_the_fact_operator_still_fall_back():
    from tefq.plan.logical import Call, Term

    doc = sd.uc3()
    q = doc.queries[0]
    flt = replace(q, filters=(Call(">", (Var("SA"), Term('"1"^^<http://www.w3.org/2001/XMLSchema#integer>'))),))
    # without the general plan (issue 27: it runs this shape, tests/spark/test_spark_general.py)
    (plan,) = plan_document(replace(doc, queries=(flt,)), 4, general=False)
    assert isinstance(plan, FallbackPlan) and "FILTER" in plan.reason


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(uc3_streams())
def test_operator_with_clauses_that_match_the_same_element(stream):
    from tefq.spark.runtime.fact_rows import exclusive

    elements, sizes = stream
    doc = uc3_with_shared_trigger(1000)
    (plan,) = plan_document(doc, 4)
    assert isinstance(plan, FactAggregatePlan) and not exclusive(plan)
    rows, metrics = drive(doc, elements, sizes)
    want = oracle(doc, elements)
    assert rows == want.results[0].rows
    assert metrics["facts_created"] == want.metrics.facts_created


# ---------------------------------------------------------------- real Spark
def generated_uc3(tmp_path, nfiles: int) -> tuple[str, list]:
    """IPTV log and program guide from the generator (small), merged on one time line and cut into
    time-ordered files, so that every micro-batch of one file advances both streams together."""
    from tefq.io.readers import read_stream
    from tefq.io.stream_writers import write_stream
    from tefq.iptv.generator import IptvConfig
    from tefq.iptv.writer import generate

    gen = tmp_path / "gen"
    generate(IptvConfig(events=800, users=40, channels=4, days=0.3, seed=3), str(gen), epg=True, fmt="tsv")
    elements = sorted(list(read_stream(str(gen / "log"))) + list(read_stream(str(gen / "epg"))), key=lambda e: e[0])
    d = tmp_path / "stream"
    d.mkdir()
    step = -(-len(elements) // nfiles)
    for i in range(0, len(elements), step):
        p = d / f"part-{i // step:04d}.tsv"
        write_stream(elements[i:i + step], str(p))
        os.utime(p, (1_000_000 + i, 1_000_000 + i))  # Spark's file source goes by modification time
    return str(d), elements


@pytest.mark.spark
def test_spark_uc3_on_generated_data_equals_the_oracle(spark, tmp_path):
    """UC3 with the shared `join` trigger (the exploding projection; plain UC3 on Spark is in
    tests/spark/test_spark.py) over generated IPTV data, one file per micro-batch."""
    from tefq.spark import run

    path, elements = generated_uc3(tmp_path, 2)
    doc = uc3_with_shared_trigger(60_000)
    got = run(doc, [path], spark=spark, buckets=2, progress=False, max_files_per_trigger=1)
    want = oracle(doc, elements)
    assert len(want.results[0].rows) > 50
    assert got.results[0].rows == want.results[0].rows
    for k in ("events_in", "facts_created", "facts_closed", "unmatched_until", "ticks", "rows_out", "late_events"):
        assert getattr(got.metrics, k) == getattr(want.metrics, k), k
    assert len([b for b in got.metrics.extra["micro_batches"] if b["rows"]]) >= 2


@st.composite
def link_streams(draw):
    out, t = [], 0
    for _ in range(draw(st.integers(1, 25))):
        t += draw(st.sampled_from([0, 0, 1, 1000]))
        a, b = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        out.append((t, f"<{IPTV}n{a}>", f"<{IPTV}{draw(st.sampled_from(['link', 'link', 'unlink']))}>", f"<{IPTV}n{b}>"))
    return out, draw(st.lists(st.integers(1, 8), max_size=4))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(link_streams())
def test_one_element_opening_two_identities_of_one_fact(stream):
    """A symmetric fact: `?a :link ?b` opens (a, b) and (b, a) — two identities from one element.
    (COUNT, not COUNT DISTINCT: an object can be a literal, whose spellings only the general
    kernels count by value; planning/literals.py.)"""
    from tefq.plan.logical import Aggregate, AggregateQuery, Clause, EventFact, Projection

    a, b = Var("a"), Var("b")
    linked = EventFact("Linked", Pattern(a, sd.t("linked"), b), (a, b),
                       since=(Clause(Pattern(a, sd.t("link"), b)), Clause(Pattern(b, sd.t("link"), a))),
                       until=(Clause(Pattern(a, sd.t("unlink"), b)), Clause(Pattern(b, sd.t("unlink"), a))))
    q = AggregateQuery("q1", (Projection(a, "A"), Projection(Var("n"), "N")), (a,),
                       (Aggregate("COUNT", b, False, "n"),),
                       (WherePattern("fact", Pattern(a, sd.t("linked"), b), ("Linked",)),), (), None, 1000)
    doc = replace(sd.uc1(), facts=(linked,), queries=(q,))
    elements, sizes = stream
    rows, metrics = drive(doc, elements, sizes)
    want = oracle(doc, elements)
    assert rows == want.results[0].rows
    for k in ("facts_created", "facts_closed", "unmatched_until"):
        assert metrics.get(k, 0) == getattr(want.metrics, k), k


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(uc3_streams(), st.randoms(use_true_random=False))
def test_out_of_order_within_the_lateness_is_applied_in_time_order(stream, rnd):
    elements, sizes = stream
    shuffled = sorted(elements, key=lambda e: e[0] + rnd.randrange(0, 2500))  # at most 2.5 s out of order
    doc = sd.uc3(1000)
    rows, metrics = drive(doc, shuffled, sizes, lateness=2500)
    assert metrics["late_events"] == 0
    assert rows == oracle(doc, shuffled).results[0].rows  # ties keep their arrival order


def test_late_event_is_counted_and_warned_not_applied():
    j, q, s = (f"<{IPTV}{x}>" for x in ("join", "quit", "start"))
    elements = [(0, f"<{IPTV}c>", s, f"<{IPTV}news>"), (1000, f"<{IPTV}u1>", j, f"<{IPTV}c>"),
                (5000, f"<{IPTV}u2>", j, f"<{IPTV}c>"), (2000, f"<{IPTV}u1>", q, f"<{IPTV}c>")]
    doc = sd.uc3(1000)
    rows, metrics = drive(doc, elements, [3, 1])
    assert metrics["late_events"] == 1  # the quit at 2000 came after tick 4000 was reported
    # u1 still attends at 5000: the late quit was not applied
    assert [r[1][1] for r in rows if r[0] == 5000] == ['"2"^^<http://www.w3.org/2001/XMLSchema#integer>']
