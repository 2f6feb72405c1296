"""Hypothesis strategies for differential tests (issue 38): stream elements drawing every kind of
RDF term (IRIs, blank nodes, plain, escaped and language literals, integers small and beyond 64
bits, decimals beyond 28 digits, doubles with INF, NaN, -0 and overflow, floats, booleans,
dateTimes of any year, unknown datatypes, ill-typed literals, several spellings of one value), timestamps that tie, straddle ticks
and sit at both ends of tefq's time range, and several streams of several files each. Terms are in
the normal form the readers give (`tefq.io.validate.check_term`)."""
from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from tefq.io.validate import check_term
from tefq.vocabulary import TIME_MAX, TIME_MIN

X = "http://x/"
XSD = "http://www.w3.org/2001/XMLSchema#"
EPOCH = 1_383_523_200_000


def typed(lex: str, datatype: str) -> str:
    return f'"{lex}"^^<{XSD}{datatype}>'


NUMBERS = [typed(v, "integer") for v in ("0", "1", "-1", "7", "01", "+5", "9223372036854775807", "9223372036854775808",
                                         "-99999999999999999999999", "4611686018427387904")] + \
    [typed(v, "decimal") for v in ("1.5", "-0.0", "2.50", "0.1", "123456789012345678901234567890.5", "1.", ".5",
                                   "-7.25")] + \
    [typed(v, "double") for v in ("1.5E0", "1e308", "1.7976931348623157e308", "1e309", "INF", "-INF", "NaN", "-0.0e0",
                                  "4.9e-324", "0.1", "-2.5e-3", "1e16", "9007199254740993")] + \
    [typed("2.5", "float"), typed("NaN", "float"), typed("3", "int"), typed("200", "unsignedByte"), typed("-3", "long")]
OTHER_LITERALS = ['"a"', '"b"', '"a\\"b\\\\c\\n"', '"ü€𝄞"', '""', '"x"@en', '"x"@EN-gb', '"y"@fr',
                  typed("true", "boolean"), typed("0", "boolean"), typed("2024-01-01T00:00:00Z", "dateTime"),
                  typed("2024-01-01T01:00:00+01:00", "dateTime"), typed("-0001-12-31T23:59:59.999Z", "dateTime"),
                  typed("12345-06-07T00:00:00Z", "dateTime"), typed("99999999999-01-01T00:00:00Z", "dateTime"),
                  '"x"^^<http://x/dt>', typed("abc", "integer"),
                  typed("1.5.5", "decimal"), typed("a", "string")]
NODES = [f"<{X}n{i}>" for i in range(4)] + [f"<{X}é>", "_:b1", "_:b2"]
# Spellings of one value (two terms, one value: DISTINCT keeps one, a join keeps both), drawn as a
# few small families so that an example often holds two members of one.
TWINS = [[typed("1", "integer"), typed("01", "integer"), typed("+1", "integer"), typed("1", "int")],
         [typed("2.5", "decimal"), typed("2.50", "decimal"), typed("+2.5", "decimal")],
         [typed("1.5E0", "double"), typed("15e-1", "double"), typed("1.5", "double"), typed("1.5", "float")],
         [typed("NaN", "double"), typed("NaN", "float")],
         [typed("2024-01-01T00:00:00Z", "dateTime"), typed("2024-01-01T01:00:00+01:00", "dateTime"),
          typed("2024-01-01T00:00:00", "dateTime"), typed("2024-01-01T00:00:00.000Z", "dateTime")],
         [typed("true", "boolean"), typed("1", "boolean")],
         ['"a"', typed("a", "string")], ['"x"@en', '"x"@EN']]


def normal(term: str, role: str = "o") -> str:
    return check_term(term, role)


numbers = st.sampled_from(NUMBERS).map(normal)
literals = st.sampled_from(OTHER_LITERALS).map(normal)
nodes = st.sampled_from(NODES).map(lambda t: normal(t, "s"))
twins = st.sampled_from(TWINS).flatmap(st.sampled_from).map(normal)
# numbers twice: they are what aggregates compute with
any_term = st.one_of(numbers, numbers, literals, nodes, twins)


@dataclass(frozen=True)
class Times:
    """Where a stream's elements lie: `base` + offsets of a few ticks, `every` the query's EVERY."""

    base: int
    every: int

    def clamp(self, t: int) -> int:
        return min(max(t, TIME_MIN), TIME_MAX)


HUGE_EVERY = 1 << 59  # ticks that span the whole time range in a handful
ODD_HUGE = 576_460_752_303_423_500  # ... and one that is no power of two (np.arange lost a tick there)


@st.composite
def times(draw) -> Times:
    every = draw(st.sampled_from([1000, 1000, 7, HUGE_EVERY]))
    if every == HUGE_EVERY:
        return Times(draw(st.sampled_from([TIME_MIN, -3 * HUGE_EVERY, 0])), draw(st.sampled_from([every, ODD_HUGE])))
    return Times(draw(st.sampled_from([0, EPOCH, TIME_MIN, TIME_MAX - 10 * every, -EPOCH])), every)


def instants(t: Times):
    """Offsets on, just before and just after ticks, half-way, and (huge EVERY) the range's ends."""
    k = st.integers(0, 6)
    near = st.builds(lambda k, d: t.clamp(t.base + k * t.every + d), k, st.sampled_from([0, 0, 1, -1, t.every // 2]))
    if t.every >= HUGE_EVERY:
        return st.one_of(near, st.sampled_from([TIME_MIN, TIME_MAX, TIME_MIN + 1, TIME_MAX - 1, 0]))
    return near


@st.composite
def elements(draw, t: Times, predicates: list[str], subjects=nodes, objects=any_term, max_size: int = 14) -> list:
    """Elements (t, s, p, o) over `predicates` (local names under X); ties likely (few instants)."""
    moments = draw(st.lists(instants(t), min_size=1, max_size=4))
    one = st.tuples(st.sampled_from(moments), subjects, st.sampled_from([f"<{X}{p}>" for p in predicates]), objects)
    out = draw(st.lists(one, min_size=1, max_size=max_size))
    if draw(st.booleans()):  # a stream is a set: the same element twice at one time is one
        out.append(draw(st.sampled_from(out)))
    return out


@st.composite
def split_streams(draw, els: list, in_time_order: bool = False, max_streams: int = 2,
                  max_files: int = 3) -> list[list[list]]:
    """The elements dealt into 1..`max_streams` streams of 1..`max_files` files each, in the given
    order (a stream's order is its files' order, then their rows'). `in_time_order`: every stream
    in time order (ties as drawn), so that no element of a later file is late when each file is a
    micro-batch of its own (spec §6: the oracle's rows are Spark's when nothing is late)."""
    if in_time_order:
        els = sorted(els, key=lambda e: e[0])
    n = draw(st.integers(1, max_streams))
    streams: list[list[list]] = [[[]] for _ in range(n)]
    for e in els:
        s = draw(st.integers(0, n - 1))
        if draw(st.integers(0, 3)) == 0 and len(streams[s]) < max_files:
            streams[s].append([])
        streams[s][-1].append(e)
    return [[f for f in files if f] or [[]] for files in streams]


def write_streams(directory: str, streams: list[list[list]]) -> list[str]:
    """Each stream as a directory of Parquet files (file order = name order = modification-time
    order, as Spark's file source takes them); returns the --stream paths."""
    paths = []
    for i, files in enumerate(streams):
        d = os.path.join(directory, f"stream{i}")
        os.makedirs(d)
        for j, rows in enumerate(files):
            path = os.path.join(d, f"part-{j:04d}.parquet")
            pq.write_table(pa.table({"ts": pa.array([r[0] for r in rows], pa.int64()),
                                     **{c: pa.array([r[k] for r in rows], pa.string()) for k, c in enumerate("spo", 1)}}),
                           path)
            os.utime(path, ns=(1_000_000_000 * (j + 1), 1_000_000_000 * (j + 1)))
        paths.append(d)
    return paths
