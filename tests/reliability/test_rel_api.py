"""Issue 26, case 9: the Python API's wrong arguments are TefqErrors, never a raw TypeError;
an empty table gives no rows; uint64 timestamps >= 2^63 are `timestamp-range` bad rows on the
oracle and in the table handed to Spark as Parquet (docs/formats.md, "Bad rows")."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tefq
from tefq.io.bad_rows import BadRow
from tefq.io.staging import as_parquet
from tefq.io.run_inputs import events_table, stage

pytestmark = pytest.mark.reliability

X = "http://example.org/iptv#"
EVENTS = [(1000, f"<{X}u1>", f"<{X}join>", f"<{X}c1>"), (25_000, f"<{X}u1>", f"<{X}quit>", f"<{X}c1>")]
UC1 = """PREFIX : <http://example.org/iptv#>
CONSTRUCT FACT UserFact {?user :watching ?channel .}
(UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))
SELECT ?channel AS CHANNEL, ?n AS N (AGGREGATE ?channel, COUNT ?user AS ?n
  WHERE (CURRENT ?user :watching ?channel) GROUP BY ?channel EVERY "PT10S"^^xsd:Duration)
"""


@pytest.fixture(scope="module")
def query() -> tefq.Query:
    return tefq.compile(UC1)


@pytest.mark.parametrize("events", [None, 42, 4.5, True, {"ts": [1]}, b"events", object()],
                         ids=["None", "int", "float", "bool", "dict", "bytes", "object"])
def test_events_of_a_wrong_type_are_a_tefq_error(query, events) -> None:
    with pytest.raises(tefq.TefqError) as e:
        query.run(events)
    assert "<events>" in e.value.render()


@pytest.mark.parametrize("kwargs,option", [
    ({"engine": 3}, "--engine"), ({"engine": None}, "--engine"), ({"t0": "0"}, "--t0"), ({"t0": 1.5}, "--t0"),
    ({"t0": None}, "--t0"), ({"lateness": [1]}, "--lateness"), ({"lateness": -5}, "--lateness"),
    ({"background": 5}, "--background"), ({"background": ["a.ttl"]}, "--background"),
])
def test_options_of_a_wrong_type_are_a_tefq_error(query, kwargs, option) -> None:
    with pytest.raises(tefq.TefqError) as e:
        query.run(EVENTS, **kwargs)
    assert e.value.file == option


@pytest.mark.parametrize("call", [
    lambda: tefq.compile(None), lambda: tefq.compile(b"SELECT"), lambda: tefq.compile(UC1, name=3),
    lambda: tefq.compile(UC1, prefixes=["ex"]), lambda: tefq.compile(UC1, prefixes={"ex": 1}),
    lambda: tefq.load(None), lambda: tefq.load(42),
], ids=["none", "bytes", "name", "prefix-list", "prefix-value", "load-none", "load-int"])
def test_compile_and_load_arguments_of_a_wrong_type_are_a_tefq_error(call) -> None:
    with pytest.raises(tefq.TefqError):
        call()


@pytest.mark.parametrize("frame,dtype", [
    (pd.DataFrame({"ts": [1.5], "s": [f"<{X}u>"], "p": [f"<{X}join>"], "o": [f"<{X}c>"]}), "double"),
    (pd.DataFrame({"ts": ["1000"], "s": [f"<{X}u>"], "p": [f"<{X}join>"], "o": [f"<{X}c>"]}), "string"),
    (pd.DataFrame({"ts": [1000], "s": [7], "p": [f"<{X}join>"], "o": [f"<{X}c>"]}), "int64"),
    (pd.DataFrame({"ts": [1000], "s": [f"<{X}u>"], "p": [f"<{X}join>"], "o": [[1]]}), "list"),
], ids=["float-ts", "string-ts", "int-s", "list-o"])
def test_columns_of_a_wrong_dtype_are_a_tefq_error(query, frame, dtype) -> None:
    with pytest.raises(tefq.TefqError) as e:
        query.run(frame)
    assert dtype in e.value.message


@pytest.mark.parametrize("empty", [
    pd.DataFrame(columns=["ts", "s", "p", "o"]),
    pd.DataFrame({"ts": pd.Series([], dtype="int64"), "s": pd.Series([], dtype=object),
                  "p": pd.Series([], dtype=object), "o": pd.Series([], dtype=object)}),
    pa.table({"ts": pa.array([], pa.null()), "s": pa.array([], pa.null()), "p": pa.array([], pa.null()),
              "o": pa.array([], pa.null())}),
    [],
], ids=["no-dtypes", "dtypes", "arrow-null", "list"])
def test_an_empty_table_gives_no_rows(query, empty) -> None:
    result = query.run(empty)
    assert result.results[0].rows == [] and list(result.to_pandas().columns) == ["tick", "CHANNEL", "N"]


def test_a_null_cell_is_a_bad_row_not_a_type_error(query) -> None:
    frame = pd.DataFrame({"ts": [1000], "s": [None], "p": [f"<{X}join>"], "o": [f"<{X}c>"]})
    with pytest.raises(BadRow) as e:
        query.run(frame)
    assert e.value.bad_kind == "empty-cell"


def uint64_frame() -> pd.DataFrame:
    return pd.DataFrame({"ts": np.array([1000, 2 ** 63 + 5], dtype="uint64"), "s": [f"<{X}u1>", f"<{X}u2>"],
                         "p": [f"<{X}join>"] * 2, "o": [f"<{X}c1>"] * 2})


def test_uint64_timestamps_beyond_int64_are_a_timestamp_range_bad_row(query) -> None:
    with pytest.raises(BadRow) as e:
        query.run(uint64_frame())
    assert e.value.bad_kind == "timestamp-range" and e.value.line == 2 and "9223372036854775813" in e.value.message


def test_the_table_staged_for_spark_is_checked_the_same_way(tmp_path) -> None:
    """Spark reads in-memory events from a Parquet file tefq writes (tefq.io.staging.as_parquet):
    the same bad row, not an OverflowError while writing it."""
    staged = stage([], None, str(tmp_path), events_table(uint64_frame()))
    with pytest.raises(BadRow) as e:
        as_parquet(staged, str(tmp_path))
    assert e.value.bad_kind == "timestamp-range" and e.value.line == 2


def test_uint64_timestamps_in_range_are_read(query) -> None:
    frame = uint64_frame().iloc[:1]
    assert query.run(frame).results[0].rows == query.run(EVENTS[:1]).results[0].rows
