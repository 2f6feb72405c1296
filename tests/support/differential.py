"""The documents of the differential tests (issue 38): per plan kind, queries the planner gives that
kind, and the predicates their generated streams use (tests/spark/test_differential.py without
Spark, tests/spark/test_spark_differential.py on Spark)."""
from __future__ import annotations

import os
from decimal import Decimal

from tefq.spark.planning import CurrentAggregatePlan, FactAggregatePlan, GeneralPlan, WindowedPlan
from tests.support import term_streams as ts

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
        "FILTER and the implicit group": (FACT + "SELECT ?n AS N, ?s AS S, ?a AS A, ?s * 2 AS D (AGGREGATE COUNT ?g AS ?n,"
                                          " SUM ?v AS ?s, AVG ?v AS ?a WHERE { (CURRENT ?g :has ?v) FILTER(?v > 1 || ?v = \"a\") }"
                                          f" {EVERY})", ["set", "set", "unset"]),
    }),
    "windowed": (WindowedPlan, {
        # SUM and AVG over numbers only: over other terms the windowed oracle (rdflib) fails the run (issue 37)
        "aggregates per window": ("REGISTER QUERY sums AS SELECT ?g (SUM(?v) AS ?s) (AVG(?v) AS ?a) (MIN(?v) AS ?lo)"
                                  " (MAX(?v) AS ?hi) (COUNT(DISTINCT ?v) AS ?d) (COUNT(*) AS ?n) FROM STREAM <http://x/s>"
                                  " [RANGE __RANGE__ STEP __STEP__] WHERE { ?g :obs ?v FILTER(isNumeric(?v)) } GROUP BY ?g",
                                  ["obs"]),
        "any terms per window": ("REGISTER QUERY terms AS SELECT ?g (MIN(?v) AS ?lo) (MAX(?v) AS ?hi) (COUNT(DISTINCT ?v) AS ?d)"
                                 " (SAMPLE(?g) AS ?x) FROM STREAM <http://x/s> [RANGE __RANGE__ STEP __STEP__]"
                                 " WHERE { ?g :obs ?v } GROUP BY ?g", ["obs"]),
    }),
}


def document_text(kind: str, name: str, every: int) -> str:
    text = KINDS[kind][1][name][0]
    return PREFIX + text.replace("__EVERY__", f'"PT{Decimal(every) / 1000}S"^^xsd:duration') \
        .replace("__RANGE__", f"{every + every // 2}ms").replace("__STEP__", f"{every}ms")


# The windowed oracle (rdflib) fails the run on SUM over an ill-typed number ("abc"^^xsd:integer):
# issue 37 replaces it; here the windowed streams hold well-typed literals only.
OBJECTS = {"current": ts.any_term, "fact": ts.any_term, "general": ts.any_term, "windowed": ts.well_typed}


