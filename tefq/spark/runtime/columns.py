"""Spark SQL column expressions and projections: the current-aggregate pipeline's, and the
whole-element ones of the general, fallback and windowed pipelines: clause matching,
vouching for well-formed rows (bad-row checks), xxhash64 codes, the row kind (`protocol.RowKind`)."""
from __future__ import annotations

import re
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tefq.io.ntriples import IRI_FAST, XSD_STRING_SUFFIX
from tefq.io.limits import max_term_chars
from tefq.io.readers import fast_term_patterns
from tefq.io.validate import TS_MAX, TS_MIN
from tefq.spark.planning.current import CurrentAggregatePlan
from tefq.spark.planning.general import GeneralPlan
from tefq.spark.planning.windowed import WindowedPlan
from tefq.spark.protocol import RowKind
from tefq.spark.runtime.sources import FLUSH_TERM

# The cells the oracle's Parquet reader takes unchanged (its fast patterns), per role, ending in
# `\z`, not `$`: Java's `$` also matches before a final newline.
NORMAL_CELL = {role: pattern.removesuffix("$") + "\\z" for role, pattern in fast_term_patterns().items()}


def clause_condition(c) -> "F.Column":
    conds = [F.col(col) == F.lit(term) for col, term in c.consts] + [F.col(a) == F.col(b) for a, b in c.same]
    return reduce(lambda x, y: x & y, conds, F.lit(True))


def fixes_p(c) -> bool:
    """The clause matches a constant predicate in normal form: rows it matches need no p check."""
    return any(col == "p" and re.fullmatch(IRI_FAST, term) for col, term in c.consts)


def vouched(plan: CurrentAggregatePlan | None = None, m: "F.Column | None" = None) -> "F.Column":
    """True only for a row the oracle accepts as it is: ts in range, every cell already in normal
    form (one regex per cell; p only where the matched clause `m` of `plan` fixes it). False
    means "not decided here": the mapper classifies those rows with the oracle's own rules
    (`scan.settle_undecided`; they are rare), so Spark accepts and rejects exactly the rows
    the oracle does, in every pipeline."""
    fixed = [i for i, c in enumerate(plan.clauses) if fixes_p(c)] if plan is not None else []
    longest = F.lit(max_term_chars())  # a longer term is the oracle's to refuse (term-too-long)
    cell = {c: F.col(c).rlike(NORMAL_CELL[c]) & (F.length(F.col(c)) <= longest) for c in "spo"}
    p_ok = F.when(m.isin(fixed), F.lit(True)).otherwise(cell["p"]) if fixed else cell["p"]
    o_ok = cell["o"] & ~F.col("o").endswith(XSD_STRING_SUFFIX)
    in_range = F.col("ts").between(F.lit(TS_MIN), F.lit(TS_MAX))  # null: not vouched for either
    return F.coalesce(in_range & cell["s"] & p_ok & o_ok, F.lit(False))


def undecided_cells(sure: "F.Column") -> "F.Column":
    """[file, row, ts, s, p, o] of a row the projection could not vouch for, as JSON text, else
    null. Text, not an array column: Spark's per-row Arrow batch-size check is quadratic on
    list columns (seen in jstack: ListVector.setValueCount per row)."""
    cells = [F.col(c).cast("string") for c in ("file", "row", "ts", "s", "p", "o")]
    return F.when(~sure, F.to_json(F.array(*cells)))


def undecided(flush: "F.Column") -> "F.Column":
    """`undecided_cells` for the pipelines without a clause shortcut (every cell checked)."""
    return undecided_cells(F.coalesce(flush, F.lit(False)) | vouched())


def project_current(df: DataFrame, plan: CurrentAggregatePlan) -> DataFrame:
    """Clause matching and dictionary encoding in Spark SQL: only int64 codes (and the group
    terms, for decoding the output) cross into Python. Two steps: the row checks and the matching
    clause are computed once per row (`good`, `m`), then every column reads them (Spark keeps
    the two projections apart because `good` is used more than once)."""
    match = F.lit(-1)
    for i, c in reversed(list(enumerate(plan.clauses))):
        match = F.when(clause_condition(c), F.lit(i)).otherwise(match)
    df = df.select("*", match.alias("m"))
    m = F.col("m")
    flush = F.col("p") == F.lit(FLUSH_TERM)
    df = df.select("*", F.coalesce(flush, F.lit(False)).alias("flush"))
    df = df.select("*", (F.col("flush") | vouched(plan, m)).alias("sure"))

    def per_clause(make) -> "F.Column":
        expr = None
        for i, c in enumerate(plan.clauses):
            expr = F.when(m == i, make(c)) if expr is None else expr.when(m == i, make(c))
        return expr

    # A row not vouched for keeps its clause's kind: the mapper turns it BAD if the oracle would.
    kind = F.when(F.col("flush"), F.lit(int(RowKind.FLUSH)))
    for i, c in enumerate(plan.clauses):
        kind = kind.when(m == i, F.lit(c.kind))
    kind = kind.otherwise(F.lit(int(RowKind.OTHER)))
    var_pos = {v: i for i, v in enumerate(plan.identity)}
    fid = per_clause(lambda c: F.xxhash64(*[F.col(x) for x in c.binds]))
    # A stream is a set: duplicates are equal elements at one time (the element hash e), also of
    # an element no clause matches (an OTHER row: its hash, no terms, counted by the operator).
    whole = F.xxhash64("s", "p", "o")
    elem = F.when(m >= 0, fid).otherwise(whole) if plan.identity_is_element else whole
    zero = F.lit(0).cast("long")
    cols = [kind.cast("int").alias("k"), F.col("ts"), F.col("fh").alias("o"), F.coalesce(fid, zero).alias("f"),
            elem.alias("e"), zero.alias("n")]
    # Only a SINCE opens a fact, so only SINCE rows' group terms can reach the output: the strings
    # of other rows are not sent to Python at all (strings are the costly cells there).
    since = reduce(lambda x, y: x | y, [m == j for j, c in enumerate(plan.clauses) if c.kind == RowKind.SINCE],
                   F.lit(False))
    terms = []
    for i, g in enumerate(plan.group_vars):
        term = per_clause(lambda c, j=var_pos[g]: F.col(c.binds[j]))
        terms.append(term)
        cols.append(F.xxhash64(term).alias(f"g{i}"))
        cols.append(F.when(since, term).alias(f"t{i}"))
    bucket = F.pmod(F.xxhash64(*terms), F.lit(plan.buckets)) if terms else F.lit(0)
    bucket = F.when(m >= 0, bucket).otherwise(F.pmod(elem, F.lit(plan.buckets)))  # OTHER rows: by element
    cols.append(F.coalesce(bucket, F.lit(0)).cast("int").alias("b"))
    cols.append(undecided_cells(F.col("sure")).alias("x"))
    return df.select(*cols)


def project_elements(df: DataFrame, relevant: "F.Column | None" = None,
                     in_run: "F.Column | None" = None, hashed: tuple[RowKind, ...] = ()) -> DataFrame:
    """Whole stream elements (`protocol.ELEMENT_WIRE`), for the pipelines that match them later:
    kind ELEMENT where `relevant` (default: every row), else OTHER where `in_run` (an element of the
    run: it advances time, its terms stay in the JVM), else IGNORED; the control source's FLUSH.
    Rows of the kinds `hashed` carry the element's hash in `f` (xxhash64(s, p, o)): a repeat of it
    at one ms is a duplicate (a stream is a set), counted by the operator."""
    flush = F.col("p") == F.lit(FLUSH_TERM)
    kind = F.when(flush, F.lit(int(RowKind.FLUSH)))
    if relevant is None:
        kind = kind.otherwise(F.lit(int(RowKind.ELEMENT)))
    else:
        kind = (kind.when(relevant, F.lit(int(RowKind.ELEMENT))).when(in_run, F.lit(int(RowKind.OTHER)))
                .otherwise(F.lit(int(RowKind.IGNORED))))
    df = df.select(kind.cast("int").alias("k"), "ts", "fh", "s", "p", "o", undecided(flush).alias("x"))
    element = F.col("k") == F.lit(int(RowKind.ELEMENT))
    zero = F.lit(0).cast("long")
    f = F.when(F.col("k").isin(*[int(k) for k in hashed]), F.xxhash64("s", "p", "o")).otherwise(zero) if hashed \
        else zero
    return df.select("k", "ts", F.col("fh").alias("o"), f.alias("f"), zero.alias("n"),
                     *[F.when(element, F.col(c)).alias(name) for c, name in (("s", "s"), ("p", "p"), ("o", "obj"))],
                     F.lit(0).cast("int").alias("b"), "x")


def project_windowed(df: DataFrame, plan: WindowedPlan, t0: int) -> DataFrame:
    """For the windowed operator: the elements at or after t0 whose predicate some query can match
    keep their terms; the others only advance time and count repeats (OTHER rows, bucket 0); those
    before t0 are not elements of the run. Every element of the run carries its hash (`f`).
    With a join key (`plan.key`), each element goes to the bucket of its key term's hash (the
    subject or the object, by its predicate); literals all go to bucket 0, so that two spellings
    of one literal (rdflib normalises them later) never land in two buckets. A row with a cell not
    in normal form (`vouched` false) gets its kind and bucket again in the mapper, from the
    oracle's normal cells, by the same rules (runtime/normal_cells.py)."""
    in_run = F.col("ts") >= F.lit(t0)
    relevant = in_run & F.col("p").isin(*sorted(plan.predicates)) if plan.predicates is not None else in_run
    out = project_elements(df, relevant, in_run, hashed=(RowKind.ELEMENT, RowKind.OTHER))  # for the repeats
    if plan.key is None or plan.buckets <= 1:
        return out
    term = F.when(F.col("p").isin(*plan.key.subject_predicates), F.col("s")).otherwise(F.col("obj"))
    hashed = F.pmod(F.xxhash64(term), F.lit(plan.buckets))
    bucket = F.when(term.startswith("<") | term.startswith("_:"), hashed).otherwise(F.lit(0))
    return out.withColumn("b", F.coalesce(bucket, F.lit(0)).cast("int"))


def project_general(df: DataFrame, plan: GeneralPlan) -> DataFrame:
    """Whole elements for the general mapper, terms only where the predicate is one a SINCE/UNTIL
    trigger or an event pattern names (the others advance time and count duplicates by their hash:
    no strings into Python)."""
    predicates = plan.relevant_predicates()
    relevant = None if predicates is None else F.col("p").isin(*sorted(predicates))
    return project_elements(df, relevant, F.lit(True), hashed=(RowKind.OTHER,))
