"""The windowed operator's columnar result records (tefq.spark.windowed_output) and its late
counts, without Spark: records decode to the rows `QueryResult.sorted_rows` gives, cells
canonical; late elements are counted per micro-batch and per input stream and summed on the
driver (the operator is called as Spark calls it, on a stand-in state)."""
from __future__ import annotations

import pandas as pd
from hypothesis import given, settings, strategies as st

from tefq.oracle.windowed.runner import canonical_cell
from tefq.results import QueryResult
from tefq.spark.kernels.windowed.windowed import Report
from tefq.spark.output import metric_record, read_record
from tefq.spark.windowed_output import WindowedCollector, ordered_rows, read_coded_rows, windowed_rows_record
from tefq.vocabulary import RunSettings

XSD = "http://www.w3.org/2001/XMLSchema#"
CELLS = [None, "<http://a/x>", "<http://a/x1>", "_:b1", '"abc"@en', '"x\\u0000y"', '"\ud800"',
         f'"1"^^<{XSD}integer>', f'"01"^^<{XSD}integer>', f'"2.0"^^<{XSD}double>', f'"10"^^<{XSD}integer>']


def reports_of(ticks_rows: list[tuple[int, list[tuple]]]) -> list[Report]:
    return [Report(0, t, rows) for t, rows in ticks_rows if rows]


@settings(max_examples=60, deadline=None)
@given(width=st.integers(0, 3), data=st.data())
def test_records_decode_to_the_sorted_canonical_rows(width: int, data) -> None:
    row = st.tuples(*[st.sampled_from(CELLS)] * width)
    records = data.draw(st.lists(st.lists(st.tuples(st.integers(0, 50), st.lists(row, max_size=4)), max_size=4),
                                 max_size=4))
    want = QueryResult("q", ("c",) * width)
    parts = []
    for rec in records:
        reports = reports_of(sorted(rec, key=lambda x: x[0]))
        if reports:
            parts.append(read_coded_rows(windowed_rows_record(0, reports)[2]))
        want.rows.extend((r.tick, tuple(canonical_cell(c) for c in cells)) for r in reports for cells in r.rows)
    assert ordered_rows(parts) == want.sorted_rows()
    collector = WindowedCollector(("q",), (want.columns,))
    for rec in records:
        reports = reports_of(sorted(rec, key=lambda x: x[0]))
        if reports:
            collector.add(*windowed_rows_record(0, reports))
    got = collector.results()[0]
    assert got.ordered and got.sorted_rows() == want.sorted_rows()  # the writers take its order as it is


def test_collector_sums_late_counts_and_keeps_the_largest_running_totals() -> None:
    col = WindowedCollector(("q",), (("c",),))
    records = [{"events_in": 10, "ticks": 3, "feedback_triples": 0, "late_events": 1, "late_stream.0": 1,
                "bad_rows": 0},
               {"events_in": 10, "ticks": 0, "feedback_triples": 0, "late_events": 2, "late_stream.0": 1,
                "late_stream.1": 1, "bad_rows": 1}]
    for m in records:
        col.add(*metric_record(0, m))
    got = col.run_metrics()
    assert (got["events_in"], got["ticks"], got["late_events"], got["bad_rows"]) == (10, 3, 3, 1)
    assert (got["late_stream.0"], got["late_stream.1"]) == (2, 1)


def test_operator_counts_late_elements_per_input_stream(tmp_path) -> None:
    """Two inputs (their index carried in the unranked tie key): a late element of each is
    counted in the batch's metrics, per input, and warned about once."""
    from tefq.analysis import load
    from tefq.spark.operators.windowed import make_windowed_operator
    from tefq.spark.protocol import HB_STREAM_SHIFT, UNRANKED, UNRANKED_STREAM_SHIFT, RowKind

    path = tmp_path / "q.rspql"
    path.write_text("""PREFIX : <http://example.org/iptv#>
REGISTER RSTREAM <http://example.org/q> AS
SELECT ?c (COUNT(?u) AS ?n) FROM NAMED WINDOW :w ON <http://example.org/iptv/log> [RANGE PT6S STEP PT2S]
WHERE { WINDOW :w { ?u :join ?c } } GROUP BY ?c""")
    op = make_windowed_operator(load(str(path)), RunSettings(0, 0), 0)
    state = StandInState()

    def element(ts: int, stream: int) -> dict:
        return dict(k=int(RowKind.ELEMENT), ts=ts, o=UNRANKED | (stream << UNRANKED_STREAM_SHIFT), f=0, n=0,
                    s="<http://example.org/iptv#u1>", p="<http://example.org/iptv#join>",
                    obj="<http://example.org/iptv#ch1>", b=0)

    def heartbeat(lo: int, hi: int, count: int, stream: int) -> dict:
        return dict(k=int(RowKind.HEARTBEAT), ts=lo, o=hi, f=(stream << HB_STREAM_SHIFT) | count, n=0,
                    s=None, p=None, obj=None, b=0)

    call(op, state, [element(1000, 0), element(9000, 1), heartbeat(1000, 9000, 1, 0), heartbeat(9000, 9000, 1, 1)])
    metric, warns = call(op, state, [element(2000, 0), element(3000, 1), element(12_000, 0),
                                     heartbeat(2000, 12_000, 2, 0), heartbeat(3000, 3000, 1, 1)])
    assert metric["late_events"] == 2 and metric["late_stream.0"] == 1 and metric["late_stream.1"] == 1
    assert warns == ["2 late events: windows up to 9000 ms were already reported"]


class StandInState:
    def __init__(self) -> None:
        self.exists, self.get = False, None

    def update(self, v) -> None:
        self.exists, self.get = True, v


def call(op, state, rows: list[dict]) -> tuple[dict, list[str]]:
    out = next(op((0,), iter([pd.DataFrame(rows)]), state))
    recs = list(out.itertuples(index=False))
    metric = next(read_record(k, p, dict) for k, _, p in recs if k == "metric")
    return metric, [read_record(k, p, str) for k, _, p in recs if k == "warn"]
