"""The general kernels (tefq.spark.kernels.general) against the oracle, without Spark: for each
query shape of issue 27, hypothesis streams (ties, tick boundaries, rejoins, unmatched quits,
duplicates, open facts) cut into micro-batches and run over 1-4 buckets (routed as the split says,
partial rows merged) give the oracle's rows, cell for cell and in order."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.spark.planning.common import Refusal
from tefq.spark.planning.general import plan_general
from tefq.spark.runtime.columnar import FileOrder
from tests.support.general_shapes import BACKGROUND, EXAMPLES, PROGRAMS, PROGRAM_FACT, SHAPES, USER_FACT, agg, document, iri, lit, oracle_rows, plan, streams
from tests.support.operator_harness import FakeState, element_rows
from tests.support.general_shapes import assert_like_oracle, check_shape
from tefq.vocabulary import RunSettings

AGED_EVERY = 250  # a multiple of 125 ms: open durations are summed as ages (exact.age_limbs), not per tick


# ---------------------------------------------------------------- streams


# ---------------------------------------------------------------- oracle vs kernels


@pytest.mark.parametrize("shape", list(SHAPES))
def test_shape_rows_equal_the_oracle(shape):
    check_shape(SHAPES[shape], shape in PROGRAMS)


@pytest.mark.parametrize("shape", [s for s in SHAPES if "DURATION" in SHAPES[s] or "AVG" in SHAPES[s]])
def test_shape_rows_equal_the_oracle_with_open_durations_as_ages(shape):
    check_shape(SHAPES[shape], shape in PROGRAMS, AGED_EVERY)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_shape_rows_equal_the_oracle_in_small_advance_steps(shape, monkeypatch):
    """A batch's ticks advanced a few elements and ticks at a time (evaluator.tick_steps: what
    bounds one step's memory) give the same rows as one step."""
    from tefq.spark.kernels.general import evaluator

    monkeypatch.setattr(evaluator, "STEP_ELEMENTS", 3)
    monkeypatch.setattr(evaluator, "STEP_TICKS", 2)
    check_shape(SHAPES[shape], shape in PROGRAMS)


def test_worked_example_of_the_spec():
    """Spec §10 (UC1 and UC2 every 5 s), in one batch and one bucket and in three batches and four."""
    j, q, a, b = iri("join"), iri("quit"), iri("chA"), iri("chB")
    els = [(1000, iri("Alice"), j, a), (3000, iri("Bob"), j, b), (7000, iri("Cathy"), j, b),
           (8000, iri("David"), j, b), (9000, iri("Bob"), q, b), (11000, iri("Eric"), j, a),
           (12000, iri("Fiona"), j, b), (14000, iri("Alice"), q, a)]
    text = USER_FACT + agg("?channel AS C, ?n AS N, ?t AS T, ?t/?n AS A",
                           "?channel, COUNT ?user AS ?n, SUM DURATION(?S,?E) AS ?t",
                           "(CURRENT ?user :watching ?channel [?S,?E])", "?channel")
    doc, _ = plan(text, 1, 5000)
    want = oracle_rows(doc, els)
    assert [r[1][1] for r in want] == [lit(1), lit(1), lit(1), lit(2), lit(1), lit(3)]
    assert_like_oracle(text, els, [], 1, 5000)
    assert_like_oracle(text, els, [2, 5, 6], 4, 5000)


def test_planner_names_what_it_cannot_run():
    doc = document(USER_FACT + agg("?E AS E, ?n AS N", "?E, COUNT ?user AS ?n", "{ ?user :watching ?channel [?S,?E] }",
                                   "?E"))
    refusal = plan_general(doc, doc.queries[0], 4)
    assert isinstance(refusal, Refusal) and "GROUP BY an interval end" in refusal.what
    doc = document(USER_FACT + PROGRAM_FACT + agg("?p AS P, ?n AS N", "?p, COUNT ?user AS ?n",
                                                  "{ (CURRENT ?user :watching ?channel) }", "?p",
                                                  "WHILE ?channel :showing ?p"))
    assert "bound by the WHILE pattern only" in plan_general(doc, doc.queries[0], 4).what


def test_split_choice_per_shape():
    """The genre query splits by the counted user (partials merged, background whole: a user's
    facts all in one bucket, buckets balanced by users); a DISTINCT over a variable that is not
    the split one forbids merging, so a group variable splits (complete rows per bucket)."""
    _, p = plan(SHAPES["genre"], 4)
    assert p.split.var == "user" and p.split.merge and p.split.facts == (("UserFact", 0),) and p.buckets == 4
    _, p = plan(USER_FACT + agg("?channel AS C, ?d AS D", "?channel, COUNT DISTINCT ?g AS ?d",
                                "{ (CURRENT ?user :watching ?channel) . ?channel :genre ?g }", "?channel"), 4)
    assert p.split.var == "channel" and not p.split.merge and p.split.facts == (("UserFact", 1),)
    _, p = plan(SHAPES["UC3 (derived fact, WHILE)"], 4)
    assert p.split.var == "user" and p.split.merge
    assert dict(p.split.facts) == {"UserFact": 0, "ViewShipFact": 0} and "ProgramFact" in p.whole


def test_explain_names_the_operator_and_the_split():
    """`explain --physical` of the issue's first example: the general operator, no fallback, the
    split and why it is exact."""
    _, p = plan(SHAPES["genre"], 8)
    text = p.explain()
    assert "fallback" not in text and "GeneralOperator" in text
    assert "hashpartitioning(bucket = code(?user) mod 8): UserFact split by ?user" in text
    assert "current ?user :watching ?channel (UserFact) JOIN background ?channel :genre ?genre" in text
    assert "exact: each bucket reports partial aggregates" in text
    _, p = plan(SHAPES["genre"], 1)
    assert "SinglePartition" in p.explain()


# ---------------------------------------------------------------- the mapper's two inputs
def mapper_rows(plan, elements, path: str | None) -> "pd.DataFrame":
    """The general mapper's rows (bucket `only` alone when `plan` carries it as `only`): over the
    projection's rows, or over the Parquet file `path` holding `elements` (columnar ingestion)."""
    import pyarrow as pa

    from tefq.spark.runtime.mappers import make_mapper

    from tefq.spark.protocol import ELEMENT, RowKind

    plan, only = plan
    if path is None:  # the projection: terms only for the predicates that matter (OTHER rows: none)

        named = plan.relevant_predicates()
        kinds = [int(ELEMENT) if named is None or e[2] in named else int(RowKind.OTHER) for e in elements]
        batches = make_mapper(plan, None, {0: 7}, only=only)(iter([element_rows(elements, kinds)]), 0)
    else:
        flush = pa.RecordBatch.from_pydict({"path": [path], "flush": [False]})
        batches = make_mapper(plan, None, files=FileOrder({path: 7}), only=only)(iter([flush]), 0)
    return pa.Table.from_batches(list(batches)).to_pandas()


@pytest.mark.parametrize("shape", list(SHAPES))
@settings(max_examples=max(EXAMPLES // 3, 5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_columnar_mapper_sends_what_the_row_mapper_sends(shape, data, tmp_path_factory):
    """Columnar and direct ingestion (GeneralRows.from_file) send the projection's rows
    (GeneralRows.projected): the same elements to the same buckets, in the same order, with the
    same tie keys, first copies and OTHER rows; with `only`, that bucket's share of them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dataclasses import replace

    buckets = data.draw(st.integers(1, 4))
    doc, p = plan(SHAPES[shape], buckets)
    p = replace(p, background=tuple(BACKGROUND))
    from tefq.spark.kernels.general.coding import encode
    from tefq.spark.kernels.general.coding import row_hash
    from tefq.spark.protocol import RowKind
    from tefq.spark.runtime.spark_hash import element_hash

    stray = (5, iri("u9"), iri("other"), iri("c9"))  # a predicate no pattern names: only its duplicates count
    elements = data.draw(streams(shape in PROGRAMS)) + [stray]
    path = str(tmp_path_factory.mktemp("columnar") / "part-0.parquet")
    pq.write_table(pa.table({"ts": [e[0] for e in elements], "s": [e[1] for e in elements],
                             "p": [e[2] for e in elements], "o": [e[3] for e in elements]}), path)
    rows = mapper_rows((p, None), elements, None)
    # an OTHER row's hash for such an element: of its cells where Spark SQL projects it, of its
    # codes where the file is read
    named = p.relevant_predicates()
    unnamed = {e[1:] for e in elements if named is not None and e[2] not in named}
    by_cells = {element_hash(*e): int(row_hash(encode(list(e)).reshape(1, 3))[0]) for e in unnamed}
    assert ((rows["k"] == int(RowKind.OTHER)) & rows["f"].isin(list(by_cells))).sum() >= len(unnamed) > 0
    rows = rows.replace({"f": by_cells})
    assert mapper_rows((p, None), elements, path).equals(rows)

    for only in range(p.buckets):
        mine = rows[(rows["b"] == only) & (rows["k"] != int(RowKind.HEARTBEAT))].reset_index(drop=True)
        got = mapper_rows((p, only), elements, path)
        assert got[got["k"] != int(RowKind.HEARTBEAT)].reset_index(drop=True).equals(mine)


@pytest.mark.parametrize("shape", list(SHAPES))
@settings(max_examples=max(EXAMPLES // 6, 3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_direct_ingestion_gives_the_oracles_rows(shape, data, tmp_path_factory):
    """Direct ingestion without Spark (runtime/pipelines.reading_operator): each bucket's operator
    reads the Parquet files itself (GeneralRows.from_file, only its rows), gets them as one frame
    with categorical terms (operators/base.coded_frames) and codes each distinct term once
    (coding.code_categorical); the collector merges the buckets' rows into the oracle's."""
    from dataclasses import replace

    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tefq.spark.operators.general import make_general_operator
    from tefq.spark.shapes import collector_of
    from tefq.spark.runtime.pipelines import reading_operator

    buckets = data.draw(st.integers(1, 4))
    doc, p = plan(SHAPES[shape], buckets)
    p = replace(p, background=tuple(BACKGROUND))
    elements = sorted(data.draw(streams(shape in PROGRAMS)), key=lambda e: e[0])
    cut = data.draw(st.integers(0, len(elements)))
    folder = tmp_path_factory.mktemp("direct")
    paths = []
    for i, part in enumerate([elements[:cut], elements[cut:]]):
        if part:
            paths.append(str(folder / f"part-{i}.parquet"))
            pq.write_table(pa.table({"ts": [e[0] for e in part], "s": [e[1] for e in part],
                                     "p": [e[2] for e in part], "o": [e[3] for e in part]}), paths[-1])
    op = reading_operator(make_general_operator(p, RunSettings(0, 0)), p, None, FileOrder({path: i for i, path in enumerate(paths)}))
    col = collector_of(p)
    for b in range(p.buckets):
        files = pd.DataFrame({"path": paths + [None], "flush": [False] * len(paths) + [True]})
        for kind, tick, payload in next(op((b,), iter([files]), FakeState())).itertuples(index=False):
            col.add(kind, tick, payload)
    assert col.results()[0].rows == oracle_rows(doc, elements)
