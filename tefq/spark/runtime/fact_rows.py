"""The Spark side of the fact-aggregate plan: clause matching for several event facts in Spark SQL,
before the mapper (runtime/mappers.py, `encodings.FactRows`) and `tefq.spark.operators.fact`.

Every element becomes one row per (fact, clause) it matches — UNTIL clauses before SINCE clauses,
as the oracle applies closes before opens within one element. When no two clauses can match the
same element (they differ in a constant, as UC3's four predicates do) this is a plain CASE
expression; otherwise an array of the matches is exploded.
"""
from __future__ import annotations

from itertools import combinations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tefq.spark.planning.fact import FactAggregatePlan
from tefq.spark.runtime.columns import clause_condition, undecided
from tefq.spark.protocol import RowKind
from tefq.spark.runtime.sources import FLUSH_TERM


def exclusive(plan: FactAggregatePlan) -> bool:
    """No two clauses can match one element (they differ in a constant): a CASE, not an array."""
    clauses = [c for f in plan.event_facts for c in f.clauses]
    for a, b in combinations(clauses, 2):
        ca, cb = dict(a.consts), dict(b.consts)
        if not any(col in cb and cb[col] != term for col, term in ca.items()):
            return False
    return True


def project_facts(df: DataFrame, plan: FactAggregatePlan) -> DataFrame:
    """Columns: k, fact, ts, o, f, e, n (1 on an element's first row), v0.., t0.., b, x."""
    arity, nterms = plan.widths

    def row(kind, fact: int, f, codes: list, terms: list) -> "F.Column":
        fields = [kind.cast("int").alias("k"), F.lit(fact).alias("fact"), f.alias("f")]
        fields += [c.alias(f"v{i}") for i, c in enumerate(codes)]
        fields += [t.alias(f"t{i}") for i, t in enumerate(terms)]
        return F.struct(*fields)

    def default(kind) -> "F.Column":
        return row(kind, 0, F.lit(0).cast("long"), [F.lit(0).cast("long")] * arity,
                   [F.lit(None).cast("string")] * nterms)

    matches = []
    for i, f in enumerate(plan.event_facts):
        for c in f.clauses:
            codes = [F.xxhash64(F.col(x)) for x in c.binds] + [F.lit(0).cast("long")] * (arity - len(c.binds))
            terms = [F.col(c.binds[p]) if c.kind == RowKind.SINCE else F.lit(None).cast("string") for p in f.terms]
            terms += [F.lit(None).cast("string")] * (nterms - len(terms))
            matches.append((clause_condition(c), row(F.lit(c.kind), i, F.xxhash64(*[F.col(x) for x in c.binds]),
                                                      codes, terms)))
    flush = F.col("p") == F.lit(FLUSH_TERM)
    special = F.when(flush, F.lit(int(RowKind.FLUSH)))
    # A row not vouched for keeps its kinds: the mapper turns it BAD if the oracle would.
    keep = [F.col("ts"), F.col("fh"), F.xxhash64("s", "p", "o").alias("e"), undecided(flush).alias("x")]
    if exclusive(plan):
        m = F.when(special.isNotNull(), default(special))
        for cond, r in matches:
            m = m.when(cond, r)
        out = df.select(*keep, F.lit(1).cast("long").alias("n"), m.otherwise(default(F.lit(int(RowKind.OTHER)))).alias("m"))
    else:
        arr = F.filter(F.array(*[F.when(cond, r) for cond, r in matches]), lambda z: z.isNotNull())
        arr = (F.when(special.isNotNull(), F.array(default(special))).when(F.size(arr) > 0, arr)
               .otherwise(F.array(default(F.lit(int(RowKind.OTHER))))))
        out = df.select(*keep, F.posexplode(arr).alias("pos", "m"))
        out = out.withColumn("n", (F.col("pos") == 0).cast("long"))
    cols = ([F.col("m.k").alias("k"), F.col("m.fact").alias("fact"), F.col("ts"), F.col("fh").alias("o"),
             F.col("m.f").alias("f"), F.col("e"), F.col("n")]
            + [F.col(f"m.v{i}").alias(f"v{i}") for i in range(arity)]
            + [F.col(f"m.t{i}").alias(f"t{i}") for i in range(nterms)]
            + [F.lit(0).alias("b"), F.col("x")])
    return out.select(*cols)
