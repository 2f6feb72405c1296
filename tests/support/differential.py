"""The differential tests of issue 38: per plan kind, queries the planner gives that kind and the
predicates their generated streams use, and the check of one generated case without Spark, the
engine's kernels against the oracle (tests/spark/test_differential*.py; on Spark:
tests/spark/test_spark_differential.py)."""
from __future__ import annotations

import os
import tempfile
from decimal import Decimal

from hypothesis import HealthCheck, given, settings, strategies as st

import tefq
from tefq.spark.planning.current import CurrentAggregatePlan
from tefq.spark.planning.fact import FactAggregatePlan
from tefq.spark.planning.general import GeneralPlan
from tefq.spark.planning.windowed import WindowedPlan
from tefq.spark.run_metrics import applied_events, late_by_index
from tefq.spark.shapes import plan_document
from tests.support import term_streams as ts
from tests.support.local_engine import run_local

SCALE = int(os.environ.get("TEFQ_PROPS_SCALE", "1"))
EXAMPLES = int(os.environ.get("TEFQ_PROPS_EXAMPLES", 500 * SCALE))

PREFIX = "PREFIX : <http://x/>\n"
FACT = "CONSTRUCT FACT F {?g :has ?v .} (UNION (SINCE ?g :set ?v) (UNTIL ?g :unset ?v))\n"
AIRS = "CONSTRUCT FACT G {?c :airs ?p .} (UNION (SINCE ?c :start ?p) (UNTIL ?c :finish ?p))\n"
SEES = "CONSTRUCT FACT V {?g :sees ?p .} {?g :has ?c . ?c :airs ?p}\n"
EVERY = "EVERY __EVERY__"

# plan kind -> (the plan class, {name: (document, the predicates its streams use)})
KINDS = {
    "current": (CurrentAggregatePlan, {
        "COUNT (UC1)": (FACT + f"SELECT ?v AS V, ?g AS N (AGGREGATE ?v, COUNT ?g WHERE (CURRENT ?g :has ?v) GROUP BY ?v {EVERY})",
                        ["set", "set", "unset"]),
        "SUM DURATION (UC2)": (FACT + "SELECT ?v AS V, ?n AS N, ?t AS T, ?t/?n AS A (AGGREGATE ?v, SUM DURATION(?S,?E) AS ?t,"
                               f" COUNT ?g AS ?n WHERE (CURRENT ?g :has ?v [?S,?E]) GROUP BY ?v {EVERY})",
                               ["set", "set", "unset"]),
        "COUNT DISTINCT": (FACT + "SELECT ?v AS V, ?d AS D (AGGREGATE ?v, COUNT DISTINCT ?g AS ?d"
                           f" WHERE (CURRENT ?g :has ?v) GROUP BY ?v {EVERY})", ["set", "unset"]),
    }),
    "fact": (FactAggregatePlan, {
        "fact pattern": (FACT + "SELECT ?v AS V, ?t AS T, ?n AS N (AGGREGATE ?v, SUM DURATION(?S,?E) AS ?t,"
                         f" COUNT DISTINCT ?g AS ?n WHERE ?g :has ?v [?S,?E] GROUP BY ?v {EVERY})", ["set", "unset"]),
        "derived fact under WHILE (UC3)": (FACT + AIRS + SEES + "SELECT ?p AS P, ?n AS N, ?t AS T (AGGREGATE ?p,"
                                           " SUM DURATION(?S,?E) AS ?t, COUNT DISTINCT ?g AS ?n WHERE ?g :sees ?p [?S,?E]"
                                           f" GROUP BY ?p WHILE ?_ :airs ?p [?SS,?ES] {EVERY})",
                                           ["set", "set", "unset", "start", "finish"]),
    }),
    "general": (GeneralPlan, {
        "numbers of a fact": (FACT + "SELECT ?g AS G, ?s AS S, ?a AS A, ?lo AS Lo, ?hi AS Hi, ?d AS D (AGGREGATE ?g, SUM ?v AS ?s,"
                              " AVG ?v AS ?a, MIN ?v AS ?lo, MAX ?v AS ?hi, COUNT DISTINCT ?v AS ?d"
                              f" WHERE (CURRENT ?g :has ?v) GROUP BY ?g {EVERY})", ["set", "set", "unset"]),
        "numbers of events": ("SELECT ?g AS G, ?s AS S, ?lo AS Lo, ?hi AS Hi, ?n AS N (AGGREGATE ?g, SUM ?v AS ?s, MIN ?v AS ?lo,"
                              f" MAX ?v AS ?hi, COUNT(*) AS ?n WHERE {{ ?g :obs ?v }} GROUP BY ?g {EVERY})", ["obs"]),
        # COUNT DISTINCT of objects counts values (two spellings of one are one): not on the CURRENT
        # or fact kernels, which count codes (planning/literals.py)
        "distinct current objects": (FACT + "SELECT ?g AS G, ?n AS N (AGGREGATE ?g, COUNT DISTINCT ?v AS ?n"
                                     f" WHERE (CURRENT ?g :has ?v) GROUP BY ?g {EVERY})", ["set", "set", "unset"]),
        "distinct objects of facts": (FACT + "SELECT ?g AS G, ?n AS N, ?t AS T (AGGREGATE ?g, COUNT DISTINCT ?v AS ?n,"
                                      f" SUM DURATION(?S,?E) AS ?t WHERE ?g :has ?v [?S,?E] GROUP BY ?g {EVERY})",
                                      ["set", "unset"]),
        "FILTER and the implicit group": (FACT + "SELECT ?n AS N, ?s AS S, ?a AS A, ?s * 2 AS D (AGGREGATE COUNT ?g AS ?n,"
                                          " SUM ?v AS ?s, AVG ?v AS ?a WHERE { (CURRENT ?g :has ?v) FILTER(?v > 1 || ?v = \"a\") }"
                                          f" {EVERY})", ["set", "set", "unset"]),
    }),
    "windowed": (WindowedPlan, {
        "aggregates per window": ("REGISTER QUERY sums AS SELECT ?g (SUM(?v) AS ?s) (AVG(?v) AS ?a) (MIN(?v) AS ?lo)"
                                  " (MAX(?v) AS ?hi) (COUNT(DISTINCT ?v) AS ?d) (COUNT(*) AS ?n) FROM STREAM <http://x/s>"
                                  " [RANGE __RANGE__ STEP __STEP__] WHERE { ?g :obs ?v FILTER(isNumeric(?v)) } GROUP BY ?g",
                                  ["obs"]),
        # over any term: SUM and AVG of a non-number are errors (unbound), MIN and MAX in ORDER BY's order
        "any terms per window": ("REGISTER QUERY terms AS SELECT ?g (MIN(?v) AS ?lo) (MAX(?v) AS ?hi) (COUNT(DISTINCT ?v) AS ?d)"
                                 " (SAMPLE(?g) AS ?x) (SUM(?v) AS ?s) (AVG(?v) AS ?a) FROM STREAM <http://x/s>"
                                 " [RANGE __RANGE__ STEP __STEP__] WHERE { ?g :obs ?v } GROUP BY ?g", ["obs"]),
        # --background in every window (Spark dropped it once: no rows, exit 0)
        "joined with the background": ("REGISTER QUERY kinds AS SELECT ?k (COUNT(*) AS ?n) (SUM(?v) AS ?s)"
                                       " FROM STREAM <http://x/s> [RANGE __RANGE__ STEP __STEP__]"
                                       " WHERE { ?g :obs ?v . ?g :kind ?k } GROUP BY ?k", ["obs"]),
        "arithmetic, comparisons and order": ("REGISTER QUERY ordered AS SELECT ?g ?v (?v + 1 AS ?w) (?v * 2 AS ?m)"
                                              " (?v < 2 AS ?c) (YEAR(?v) AS ?y) FROM STREAM <http://x/s>"
                                              " [RANGE __RANGE__ STEP __STEP__] WHERE { ?g :obs ?v } ORDER BY DESC(?v) ?g"
                                              " LIMIT 5", ["obs"]),
    }),
}


def background_text(rename=lambda term: term) -> str:
    """The background every check runs with (N-Triples): a kind for some of the streams' subjects
    (IRIs only: a blank node of a background is not a stream's), `rename`d as a stream names them."""
    kinds = {"n0": '"a"', "n1": '"a"', "n2": "<http://x/n0>", "é": "\"7\"^^<http://www.w3.org/2001/XMLSchema#integer>"}
    return "".join(f"{rename(f'<{ts.X}{n}>')} <{ts.X}kind> {k} .\n" for n, k in kinds.items())


def document_text(kind: str, name: str, every: int) -> str:
    text = KINDS[kind][1][name][0]
    return PREFIX + text.replace("__EVERY__", f'"PT{Decimal(every) / 1000}S"^^xsd:duration') \
        .replace("__RANGE__", f"{every + every // 2}ms").replace("__STEP__", f"{every}ms")


OBJECTS = {"current": ts.any_term, "fact": ts.any_term, "general": ts.any_term, "windowed": ts.any_term}


PROPS = settings(max_examples=EXAMPLES, deadline=None, derandomize=False, print_blob=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def cases(draw, kind: str):
    name = draw(st.sampled_from(sorted(KINDS[kind][1])))
    t = draw(ts.times())
    els = draw(ts.elements(t, KINDS[kind][1][name][1], objects=OBJECTS[kind]))
    # --lateness (spec §6.1; not for windowed queries, which the oracle evaluates without it):
    # files out of time order, one per stream a micro-batch, as the oracle's arrival rounds
    lateness = None if kind == "windowed" else draw(st.sampled_from([None, None, 1, t.every // 2, min(2 * t.every, 1 << 58)]))
    files_per_trigger = 1 if lateness else draw(st.sampled_from([None, 1]))
    streams = draw(ts.split_streams(els, in_time_order=files_per_trigger is not None and not lateness))
    return name, t.every, streams, files_per_trigger, draw(st.integers(1, 3)), lateness


def check(kind: str, name: str, every: int, streams: list, files_per_trigger, buckets: int,
          lateness: int | None = None) -> None:
    query = tefq.compile(document_text(kind, name, every))
    doc = query.document()
    assert all(isinstance(p, KINDS[kind][0]) for p in plan_document(doc, buckets)), name
    with tempfile.TemporaryDirectory(prefix="tefq-diff-") as tmp:
        paths = ts.write_streams(tmp, streams)
        background = os.path.join(tmp, "background.nt")
        with open(background, "w", encoding="utf-8") as fh:
            fh.write(background_text())
        want = query.run(paths, engine="oracle", lateness=lateness or 0, background=background)
        got, metrics = run_local(doc, paths, background, buckets=buckets, files_per_trigger=files_per_trigger,
                                 lateness_ms=lateness or 0)
    assert [r.sorted_rows() for r in got] == [r.sorted_rows() for r in want.results]
    if lateness:  # the late elements, per stream too, and the elements applied (the first query's)
        m = metrics[0]
        assert m.get("late_events", 0) == want.metrics["late_events"]
        by_stream = want.metrics["late_events_by_stream"].values()
        assert {i: n for i, n in late_by_index(m).items() if n} == {i: n for i, n in enumerate(by_stream) if n}
        assert applied_events(m) == want.metrics["events_in"]


def check_kind(kind: str) -> None:
    """`EXAMPLES` random cases of one plan kind, kernels against the oracle."""
    @PROPS
    @given(cases(kind))
    def run(case):
        check(kind, *case)
    run()
