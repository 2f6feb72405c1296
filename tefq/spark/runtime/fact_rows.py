"""The Spark side of the fact-aggregate plan: clause matching for several event facts in Spark SQL,
and the mapper that adds the heartbeat, before `tefq.spark.operators.fact`.

Every element becomes one row per (fact, clause) it matches — UNTIL clauses before SINCE clauses,
as the oracle applies closes before opens within one element. When no two clauses can match the
same element (they differ in a constant, as UC3's four predicates do) this is a plain CASE
expression; otherwise an array of the matches is exploded.
"""
from __future__ import annotations

from itertools import combinations

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tefq.spark.planning.fact import FactAggregatePlan
from tefq.spark.runtime.columns import clause_condition, undecided
from tefq.spark.runtime.mappers import PartitionScan, TieOrder, settle_undecided
from tefq.spark.operators.base import RowKind
from tefq.spark.runtime.sources import FLUSH_TERM


def _widths(plan: FactAggregatePlan) -> tuple[int, int]:
    """(identity variable columns, output term columns) of a row."""
    facts = plan.event_facts
    return max(len(f.identity) for f in facts), max([len(f.terms) for f in facts] + [0])


def _exclusive(plan: FactAggregatePlan) -> bool:
    clauses = [c for f in plan.event_facts for c in f.clauses]
    for a, b in combinations(clauses, 2):
        ca, cb = dict(a.consts), dict(b.consts)
        if not any(col in cb and cb[col] != term for col, term in ca.items()):
            return False
    return True


def project_facts(df: DataFrame, plan: FactAggregatePlan) -> DataFrame:
    """Columns: k, fact, ts, o, f, e, n (1 on an element's first row), v0.., t0.., b, x."""
    arity, nterms = _widths(plan)

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
    if _exclusive(plan):
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


def map_schema(plan: FactAggregatePlan) -> str:
    arity, nterms = _widths(plan)
    parts = ["k int", "fact int", "ts long", "o long", "f long", "e long", "n long"]
    parts += [f"v{i} long" for i in range(arity)] + [f"t{i} string" for i in range(nterms)]
    return ", ".join(parts + ["b int"])


def make_fact_mapper(plan: FactAggregatePlan, bad_rows: str | None, ranks: dict[int, int] | None = None):
    """Per input partition: keep the SINCE/UNTIL rows, divert bad rows, number rows for ties, and
    send one heartbeat with the partition's event-time range and element count."""
    arity, nterms = _widths(plan)
    fields = [("k", pa.int32()), ("fact", pa.int32()), ("ts", pa.int64()), ("o", pa.int64()), ("f", pa.int64()),
              ("e", pa.int64()), ("n", pa.int64())]
    fields += [(f"v{i}", pa.int64()) for i in range(arity)] + [(f"t{i}", pa.string()) for i in range(nterms)]
    out_schema = pa.schema(fields + [("b", pa.int32())])

    def mapper(batches):
        import pyarrow.compute as pc
        from pyspark import TaskContext

        ctx = TaskContext.get()
        tie_order = TieOrder(ranks or {}, ctx.partitionId() if ctx is not None else 0)  # stream order of ties
        scan, flush, seen = PartitionScan(bad_rows), False, False
        for rb in batches:
            seen = True
            rb = settle_undecided(rb)
            k = rb.column("k")
            data = pc.or_(pc.equal(k, int(RowKind.SINCE)), pc.equal(k, int(RowKind.UNTIL)))
            first = pc.equal(rb.column("n"), 1)  # an element's first row: counted once
            scan.see(rb, pc.and_(pc.or_(data, pc.equal(k, int(RowKind.OTHER))), first),
                     pc.and_(pc.equal(k, int(RowKind.BAD)), first))
            flush = flush or pc.any(pc.equal(k, int(RowKind.FLUSH))).as_py()
            order = tie_order(rb.column("o"))
            cols = [order if name == "o" else rb.column(name) for name in out_schema.names]
            keep = pa.RecordBatch.from_arrays(cols, schema=out_schema).filter(data)
            if keep.num_rows:
                yield keep
        if not seen:
            return

        def control(kind: int, ts: int, o: int, f: int, n: int) -> pa.RecordBatch:
            # No nulls in integer columns: pandas would turn a whole batch's codes into floats.
            values = {"k": int(kind), "ts": ts, "o": o, "f": f, "n": n}
            return pa.RecordBatch.from_arrays(
                [pa.array([None if name.startswith("t") and name != "ts" else values.get(name, 0)],
                          out_schema.field(name).type) for name in out_schema.names], schema=out_schema)

        if scan.any:
            yield control(RowKind.HEARTBEAT, scan.lo or 0, scan.hi or 0, scan.count, scan.bad)
        if flush:
            yield control(RowKind.FLUSH, 0, 0, 0, 0)

    return mapper
