"""Numbers as SPARQL defines them, the same on both engines (issue 38): MIN/MAX in one total order
(another group's value came out on Spark), decimals exact (rounded to 28 digits on both), double
overflow to INF (Spark's SUM of two 1e308 exited 1), and the time range at both of its ends
(Spark dropped every row near the int64 minimum with exit 0)."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from decimal import Decimal

import pytest

import tefq
from tefq.semantics.expressions import aggregate, arith
from tefq.semantics.values import to_term, to_value
from tests.support.paths import ROOT
from tests.support.spark import oracle, run_spark

SPEC10 = ROOT / "examples" / "spec10"
XSD = "http://www.w3.org/2001/XMLSchema#"
BIG = "12345678901234567890123456789012"
TIME_MIN, TIME_MAX = -(1 << 61), (1 << 61) - 1  # tefq.vocabulary's (test_the_time_range_is_the_documented_one)
HALF = "123456789012345678901234567890.5"

DOCUMENT = """PREFIX : <http://x/>
CONSTRUCT FACT F { ?g :val ?v . } (UNION (SINCE ?g :set ?v) (UNTIL ?g :unset ?v))
SELECT ?g AS G, ?mn AS MN, ?mx AS MX, ?sm AS SM, ?av AS AV
 (AGGREGATE ?g, MIN ?v AS ?mn, MAX ?v AS ?mx, SUM ?v AS ?sm, AVG ?v AS ?av
  WHERE (CURRENT ?g :val ?v) GROUP BY ?g EVERY "PT1S"^^xsd:duration)
"""


def typed(lex: str, datatype: str) -> str:
    return f'"{lex}"^^<{XSD}{datatype}>'


# Group -> its values: the groups (g1-g3), a decimal beyond 28 digits, a double overflow, a mix.
VALUES = {
    "g1": [typed("INF", "double")],
    "g2": [typed(BIG, "integer")],
    "g3": [typed("1.5", "decimal"), typed("NaN", "double")],
    "g4": [typed(HALF, "decimal")],
    "g5": [typed("1e308", "double"), typed("1.0e308", "double")],
    "g6": [typed("1e309", "double"), typed("1", "integer"), typed("2.5", "decimal"), '"text"'],
}
EVENTS = [(1000, f"<http://x/{g}>", "<http://x/set>", v) for g, vs in VALUES.items() for v in vs]
MAX_DOUBLE_1E308 = "1" + "0" * 308

# (MIN, MAX, SUM, AVG) per group, as docs/semantics.md decides them.
EXPECTED = {
    "g1": [typed("INF", "double")] * 4,
    "g2": [typed(BIG, "integer")] * 3 + [typed(BIG, "decimal")],
    "g3": [typed("1.5", "decimal"), typed("NaN", "double"), typed("NaN", "double"), typed("NaN", "double")],
    "g4": [typed(HALF, "decimal")] * 4,
    "g5": [typed(MAX_DOUBLE_1E308, "double")] * 2 + [typed("INF", "double")] * 2,
    "g6": [typed("1", "integer"), '"text"', typed("INF", "double"), typed("INF", "double")],
}


def expected_rows() -> list:
    return [(1000, (f"<http://x/{g}>", *cells)) for g, cells in EXPECTED.items()]


def test_the_oracle_gives_the_documented_numbers():
    result = tefq.compile(DOCUMENT).run(EVENTS)
    assert result.results[0].sorted_rows() == expected_rows()


def test_min_and_max_follow_one_total_order():
    from tefq.semantics.expressions import order_key

    nan, inf = math.nan, math.inf
    values = [1.5, nan, inf, -inf, int(BIG), Decimal("1.5"), 1, Decimal("1.0"), 1.0, -0.0, 0, '"a"', "a"]
    keys = [order_key(v) for v in values if not isinstance(v, str) or v == "a"]
    assert sorted(keys) == sorted(keys, reverse=True)[::-1]  # comparable throughout: a total order
    for first, second in [(1.5, nan), (nan, 1.5)]:  # the order of the solutions does not matter
        assert aggregate("MIN", [first, second], False) == 1.5
        assert math.isnan(aggregate("MAX", [first, second], False))
    assert aggregate("MIN", [1.0, Decimal("1.0"), 1], False) == 1 and \
        type(aggregate("MIN", [1.0, Decimal("1.0"), 1], False)) is int  # equal values: integer < decimal < double
    assert aggregate("MAX", [int(BIG), inf], False) == inf


def test_distinct_keeps_one_of_each_value_and_one_nan():
    nans = [float("nan"), float("nan"), to_value(f'"NaN"^^<{XSD}float>')]  # three objects, none equal to itself
    assert aggregate("COUNT", nans + [1.5, Decimal("1.5"), Decimal("1.50")], True) == 3
    assert aggregate("COUNT", [to_value(f'"{t}"^^<{XSD}dateTime>') for t in ("2024-01-01T00:00:00Z",
                                                                            "2024-01-01T01:00:00+01:00")], True) == 1


def test_decimals_are_exact():
    a, b = Decimal(HALF), Decimal("0.25")
    assert to_term(arith("+", a, b)) == typed("123456789012345678901234567890.75", "decimal")
    assert to_term(arith("*", a, a)) == typed("15241578753238836750495351562659655576514250878776253619990.25",
                                              "decimal")
    assert arith("/", int(BIG), 1) == Decimal(BIG)  # the integer part of a quotient is exact
    assert str(arith("/", 1, 3)) == "0." + "3" * 28  # at least 28 significant digits
    assert to_term(abs(Decimal("-" + HALF))) != to_term(Decimal(HALF))  # Python's own abs rounds ...
    assert to_term(arith("-", Decimal(0), Decimal("-" + HALF))) == typed(HALF, "decimal")  # ... ours does not


@pytest.mark.spark
def test_spark_gives_the_oracle_numbers(spark, tmp_path):
    from tefq.io.stream_writers import write_stream

    path = tmp_path / "events.tsv"
    write_stream(EVENTS, str(path), fmt="tsv")
    got = run_spark(spark, tefq.compile(DOCUMENT).document(), [str(path)])
    assert got.results[0].sorted_rows() == expected_rows()


# ---------------------------------------------------------------- time range
JOIN, QUIT = "<http://example.org/iptv#join>", "<http://example.org/iptv#quit>"


def edge_events(base: int, sign: int) -> list:
    """Joins and a quit within 12 s of `base`, towards the inside of the range."""
    rows = [(base, "<http://x/u1>", JOIN, "<http://x/a>"), (base + sign * 3000, "<http://x/u2>", JOIN, "<http://x/a>"),
            (base + sign * 7001, "<http://x/u1>", QUIT, "<http://x/a>"),
            (base + sign * 12000, "<http://x/u3>", JOIN, "<http://x/b>")]
    return sorted(rows)


def tefq_run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tefq", "run", *argv], capture_output=True, text=True,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))


OUTSIDE = ["-9223372036854775000", "9223372036854775000", str(TIME_MAX + 1), str(TIME_MIN - 1)]


@pytest.mark.parametrize("ts", OUTSIDE)
def test_a_timestamp_outside_the_range_is_a_located_error(tmp_path, ts):
    path = tmp_path / "events.tsv"
    path.write_text(f"ts\ts\tp\to\n1000\t<http://x/u0>\t{JOIN}\t<http://x/a>\n{ts}\t<http://x/u1>\t{JOIN}\t<http://x/a>\n")
    done = tefq_run(str(SPEC10 / "uc1.tef"), "--stream", str(path), "--engine", "oracle")
    assert done.returncode == 2 and f"{path}:3:1: error: timestamp {ts} is outside tefq's time range" in done.stderr
    assert tefq_run(str(SPEC10 / "uc1.tef"), "--stream", str(path), "--engine", "oracle",
                    "--bad-rows", str(tmp_path / "bad")).returncode == 0  # or recorded as a bad row


@pytest.mark.spark
@pytest.mark.parametrize("ingest, ts", [("rows", OUTSIDE[0]), ("direct", OUTSIDE[2])])
def test_spark_refuses_a_parquet_timestamp_outside_the_range(spark, tmp_path, ingest, ts):
    """Spark reads Parquet itself (no staging): the same bad row, on the row path and the direct one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    uc1 = tefq.load(SPEC10 / "uc1.tef").document()
    path = tmp_path / "events.parquet"
    pq.write_table(pa.table({"ts": pa.array([1000, int(ts)], pa.int64()), "s": ["<http://x/u0>", "<http://x/u1>"],
                             "p": [JOIN] * 2, "o": ["<http://x/a>"] * 2}), path)
    with pytest.raises(tefq.TefqError) as e:
        run_spark(spark, uc1, [str(path)], ingest=ingest)
    assert e.value.line == 2 and f"timestamp {ts} is outside tefq's time range" in e.value.message


def test_the_time_range_is_the_documented_one():
    from tefq import vocabulary

    assert (vocabulary.TIME_MIN, vocabulary.TIME_MAX) == (TIME_MIN, TIME_MAX)


def test_an_every_beyond_the_range_names_it(tmp_path):
    query = tmp_path / "q.tef"
    query.write_text((SPEC10 / "uc1.tef").read_text().replace('"PT5S"', '"PT99999999999999999999S"'))
    done = tefq_run(str(query), "--stream", str(SPEC10 / "events.tsv"), "--engine", "oracle")
    assert done.returncode == 2 and f"{query}:11:8: error: duration 'PT99999999999999999999S' is longer" in done.stderr


def test_ticks_at_the_end_of_the_range_are_written_in_every_format(tmp_path):
    events = tmp_path / "events.tsv"
    from tefq.io.stream_writers import write_stream

    write_stream(edge_events(TIME_MAX - 12000, 1), str(events), fmt="tsv")
    iso = tefq_run(str(SPEC10 / "uc1.tef"), "--stream", str(events), "--engine", "oracle", "--tick-format", "iso")
    assert iso.returncode == 0 and iso.stdout.splitlines()[-1].startswith("73071226-02-26T19:48:15.000Z,")
    out = tmp_path / "r.parquet"
    assert tefq_run(str(SPEC10 / "uc1.tef"), "--stream", str(events), "--engine", "oracle", "--format", "parquet",
                    "--out", str(out)).returncode == 0
    import pyarrow.parquet as pq

    ticks = pq.read_table(out).column("tick").cast("int64").to_pylist()
    assert max(ticks) == TIME_MAX - TIME_MAX % 5000 + 5000


@pytest.mark.spark
def test_spark_at_both_ends_of_the_range(spark, tmp_path):
    from tefq.io.stream_writers import write_stream

    uc2 = tefq.load(SPEC10 / "uc2.tef").document()
    for name, events in (("low", edge_events(TIME_MIN, 1)), ("high", edge_events(TIME_MAX, -1))):
        path = tmp_path / f"{name}.tsv"
        write_stream(events, str(path), fmt="tsv")
        want = oracle(uc2, events).results[0].sorted_rows()
        assert len(want) >= 3 and run_spark(spark, uc2, [str(path)]).results[0].sorted_rows() == want


# ---------------------------------------------------------------- found by the generators (issue 38)
def test_ticks_near_the_end_of_the_range_are_counted_in_integers():
    """np.arange counted its elements in doubles: the last tick of a range near 2^61 was lost."""
    from tefq.plan.ticks import tick_array

    every = 576_460_752_303_423_500
    start = -3 * every
    assert tick_array(start, start + every, every).tolist() == [start, start + every]
    assert tick_array(5, 4, 1).tolist() == [] and tick_array(0, 10, 5).tolist() == [0, 5, 10]


FAR_APART = {  # name -> the events: a fact from one end of the time range to the other; or an
    # unrelated element at one end and 50 young facts at the other (ages small, ticks far: int64 sums)
    "a fact across the range": [(TIME_MIN, "<http://x/a>", "<http://x/set>", "<http://x/c>"),
                                (0, "<http://x/b>", "<http://x/set>", "<http://x/c>"),
                                (TIME_MAX, "<http://x/a>", "<http://x/unset>", "<http://x/c>")],
    "young facts far from the first tick": [(TIME_MIN, "<http://x/z>", "<http://x/other>", "<http://x/c>")] + [
        (TIME_MAX - 10_000_000 - i, f"<http://x/u{i}>", "<http://x/set>", "<http://x/c>") for i in range(50)],
}


@pytest.mark.parametrize("shape", ["current", "fact", "general"])
@pytest.mark.parametrize("every_s", ["576460752303423.488", "576460752303423.375"])  # 2^59 ms; a multiple of 125 ms
@pytest.mark.parametrize("events", list(FAR_APART))
def test_durations_of_hundreds_of_millions_of_years(tmp_path, shape, every_s, events):
    """A DURATION of 2^52 s is beyond the 3 exact limbs (2^34 s): every kernel sums it in the wide
    form, as the oracle's fsum does; young facts at ticks 2^62 ms from the first one overflowed the
    int64 sums of `age_limbs` (wrong rows, exit 0): they go per (fact, tick) pair."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tests.support.local_engine import run_local

    from tefq.spark.planning.current import CurrentAggregatePlan
    from tefq.spark.planning.fact import FactAggregatePlan
    from tefq.spark.planning.general import GeneralPlan
    from tefq.spark.shapes import plan_document

    fact = "PREFIX : <http://x/>\nCONSTRUCT FACT F {?g :has ?v .} (UNION (SINCE ?g :set ?v) (UNTIL ?g :unset ?v))\n"
    every = f'"PT{every_s}S"^^xsd:duration'  # 125 ms: open durations summed as ages
    query = {"current": f"SELECT ?v AS V, ?t AS T (AGGREGATE ?v, SUM DURATION(?S,?E) AS ?t WHERE (CURRENT ?g :has ?v [?S,?E])"
                        f" GROUP BY ?v EVERY {every})",
             "fact": f"SELECT ?v AS V, ?t AS T (AGGREGATE ?v, SUM DURATION(?S,?E) AS ?t WHERE ?g :has ?v [?S,?E]"
                     f" GROUP BY ?v EVERY {every})",
             "general": f"SELECT ?v AS V, ?t AS T, ?m AS M (AGGREGATE ?v, SUM DURATION(?S,?E) AS ?t, MAX DURATION(?S,?E)"
                        f" AS ?m WHERE ?g :has ?v [?S,?E] GROUP BY ?v EVERY {every})"}[shape]
    q = tefq.compile(fact + query)
    plan_kind = {"current": CurrentAggregatePlan, "fact": FactAggregatePlan, "general": GeneralPlan}[shape]
    assert isinstance(plan_document(q.document(), 2)[0], plan_kind)
    events = FAR_APART[events]
    path = tmp_path / "events.parquet"
    pq.write_table(pa.table({"ts": pa.array([e[0] for e in events], pa.int64()),
                             **{c: [e[k] for e in events] for k, c in enumerate("spo", 1)}}), path)
    want = q.run(str(path)).results[0].sorted_rows()
    assert want
    for buckets in (1, 2):
        got, _ = run_local(q.document(), [str(path)], buckets=buckets)
        assert got[0].sorted_rows() == want
