"""Issue 39, case 1: nothing read back from a checkpoint (operator state, sink records) can run
code. State was pickled (an allow-list unpickler admitted every class of tefq's, and imported a
module before checking it), and the general plan's sink records were read with plain
`pickle.loads`: a hand-made parquet file plus one `_spark_metadata` entry ran `os.system` on the
next run, a crafted state built `RecordFile(path)` (truncating the file) or `LiveFactWriter`, and
`decode(b'ctefq.__main__\\nX\\n.')` ran the CLI. Every payload now goes through runtime/codec: a
data format checked against the reader's schema, one decoder, no pickle."""
from __future__ import annotations

import json
import os
import pickle
import struct
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tefq.errors import REFUSAL, TefqError, WorkerFailure, failure_message, is_refusal
from tefq.spark.fact_output import FactIntervals, OpenSnapshot
from tefq.spark.kernels.intervals import Events, Intervals
from tefq.spark.operators.current import CurrentState
from tefq.spark.operators.windowed import WindowedBucket
from tefq.spark.output import NumericRows
from tefq.spark.runtime.codec import COMPRESS_ABOVE, MAX_PAYLOAD, ZSTD_MAGIC, CodecError, MAGIC, decode, encode
from tefq.spark.windowed_output import CodedRows
from tests.support.paths import ROOT

pytestmark = [pytest.mark.reliability]


class Payload:
    """Pickles as a call of `target(*args)`: what a hostile file would have held for pickle."""

    def __init__(self, target, *args) -> None:
        self.target, self.args = target, args

    def __reduce__(self):
        return self.target, self.args


def crafted(tree: Any, arrays: list | None = None, data: bytes = b"") -> bytes:
    """A payload in the codec's format with a hand-written tree (what an attacker can write)."""
    head = json.dumps({"v": tree, "a": arrays or []}).encode()
    start = len(MAGIC) + 8 + len(head)
    return MAGIC + len(head).to_bytes(8, "little") + head + b"\0" * (-start % 16) + data


def a_current_state() -> CurrentState:
    st = CurrentState(2)
    st.terms = {1: "<http://x/a>", 2**62: '"caf\u00e9"@fr'}
    st.gmin, st.gmax, st.last_tick = 5, 2**40, None
    st.base = Intervals(np.arange(3, dtype=np.int64), np.zeros(3, np.int64), np.full(3, 7, np.int64),
                        np.arange(6, dtype=np.int64).reshape(3, 2))
    z = np.zeros(2, np.int64)
    st.pending = [Events(z, z + 1, z + 2, z + 3, np.zeros((2, 2), np.int64), None)]
    st.clock.see({0: 10, 1: 12}, 1.5)
    return st


def test_state_round_trips_field_by_field() -> None:
    st = a_current_state()
    back = decode(encode(st, CurrentState), CurrentState)
    assert type(back) is CurrentState and type(back.base) is Intervals and type(back.clock) is type(st.clock)
    assert vars(back).keys() == vars(st).keys() and back.terms == st.terms and back.gmax == 2**40
    assert back.base.groups.tolist() == st.base.groups.tolist() and back.base.groups.flags.writeable
    assert back.pending[0].elem is None and back.clock.latest == {0: 10, 1: 12}


def test_plain_data_round_trips() -> None:
    value = {"ints": [0, -1, 2**63, -2**70], "f": [1.5, float("inf"), -0.0], "t": (1, "a"), "s": {1, 2},
             "fs": frozenset({"x"}), "b": b"\x00\xff", "d": Decimal("-1.25"), "q": Fraction(1, 3),
             "n": np.int32(-4), "u": np.array(["ab", "c"]), "o": np.array(["a", None, ("t", 1)], dtype=object),
             "frame": pd.DataFrame({"ts": np.arange(3), "s": pd.Categorical(["a", "b", "a"]),
                                    "o": np.array(["x", None, "\udc80"], dtype=object)}), 7: {None: [True]}}
    back = decode(encode(value))
    assert back["frame"].equals(value["frame"]) and back["o"].tolist() == value["o"].tolist()
    assert {k: v for k, v in back.items() if k not in ("frame", "o", "u")} == \
        {k: v for k, v in value.items() if k not in ("frame", "o", "u")}
    assert type(back["n"]) is np.int32 and back["u"].dtype == value["u"].dtype


@pytest.mark.parametrize("record, hint", [
    (NumericRows(np.arange(2), np.zeros((2, 1), np.int64), {"n": np.ones(2)}), NumericRows),
    (CodedRows(np.arange(2), np.zeros((2, 1), np.int32), [["<x>"]]), CodedRows),
    (FactIntervals(1, np.zeros((1, 2), np.int64), np.zeros(1, np.int64), np.ones(1, np.int64)), FactIntervals),
    (OpenSnapshot(3, {0: (np.zeros((1, 2), np.int64), np.zeros(1, np.int64))}), OpenSnapshot),
])
def test_sink_records_round_trip(record, hint) -> None:
    back = decode(encode(record, hint), hint)
    assert type(back) is hint and vars(back).keys() == vars(record).keys()


def test_a_large_sink_record_is_compressed_and_reads_back_the_same() -> None:
    n = COMPRESS_ABOVE  # 3 columns of 8 bytes a row: well above the threshold
    rows = NumericRows(np.arange(n) * 1000, np.arange(n).reshape(n, 1) % 7, {"n": np.arange(n, dtype=float)})
    blob = encode(rows, NumericRows, compress=True)
    assert blob.startswith(ZSTD_MAGIC) and len(blob) < len(encode(rows, NumericRows)) // 4
    back = decode(blob, NumericRows)
    assert back.ticks.tolist() == rows.ticks.tolist() and back.values["n"].tolist() == rows.values["n"].tolist()
    assert back.groups.flags.writeable
    small = encode({"rows_out": 3}, dict, compress=True)
    assert small.startswith(MAGIC) and decode(small, dict) == {"rows_out": 3}


@pytest.mark.parametrize("damage, why", [
    (lambda b: b[:len(ZSTD_MAGIC) + 4], "cut off"),
    (lambda b: ZSTD_MAGIC + struct.pack("<Q", MAX_PAYLOAD + 1) + b[len(ZSTD_MAGIC) + 8:], "more than a payload holds"),
    (lambda b: ZSTD_MAGIC + struct.pack("<Q", 10) + b[len(ZSTD_MAGIC) + 8:], "damaged"),  # not the length it holds
    (lambda b: b[:len(ZSTD_MAGIC) + 8] + b"\x00" * 64, "damaged"),
    (lambda b: ZSTD_MAGIC + struct.pack("<Q", 100) + __import__("pyarrow").compress(b"x" * 100, "zstd", asbytes=True),
     "format this tefq writes"),  # a good frame holding something else than a payload
])
def test_a_damaged_compressed_record_is_one_sentence(damage, why) -> None:
    blob = encode(np.zeros(COMPRESS_ABOVE), np.ndarray, compress=True)
    with pytest.raises(CodecError, match=why) as e:
        decode(damage(blob), np.ndarray, "a 'nrows' record")
    assert "\n" not in e.value.message


def test_a_state_class_whose_fields_drift_from_its_annotations_cannot_be_saved() -> None:
    st = a_current_state()
    st.extra = 1
    with pytest.raises(TypeError, match="its annotations name"):
        encode(st, CurrentState)


def no_module_imported_check(blob: bytes, module: str) -> subprocess.CompletedProcess:
    """Decode `blob` in a fresh interpreter; report whether `module` got imported."""
    code = ("import sys; from tefq.spark.runtime.codec import decode, CodecError\n"
            f"try:\n    decode({blob!r}, object, 'the blob')\nexcept CodecError as e:\n    print('refused:', e.message)\n"
            f"print('imported' if {module!r} in sys.modules else 'not imported')\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_a_pickle_naming_a_module_imports_nothing() -> None:
    proc = no_module_imported_check(b"ctefq.__main__\nX\n.", "tefq.__main__")
    assert proc.returncode == 0, proc.stderr
    assert "refused: the blob is not in the format this tefq writes" in proc.stdout
    assert "not imported" in proc.stdout and "usage" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("payload", [
    lambda marker: Payload(os.system, f"touch {marker}"),
    lambda marker: Payload(eval, f"open({marker!r}, 'w')"),
    lambda marker: Payload(np.save, marker, np.arange(3)),
])
def test_a_hostile_pickle_is_refused_and_nothing_runs(tmp_path, payload) -> None:
    marker = str(tmp_path / "ran")
    with pytest.raises(CodecError, match="not in the format this tefq writes"):
        decode(pickle.dumps({"state": payload(marker)}, protocol=5), CurrentState, "the operator state")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("where", ["root", "a field", "an Any position", "an object array"])
@pytest.mark.parametrize("cls", ["RecordFile", "LiveFactWriter", "CurrentState"])
def test_a_payload_naming_a_class_outside_the_schema_is_refused(tmp_path, where, cls) -> None:
    """The crafted states of the issue (RecordFile truncated a file, LiveFactWriter wrote one)."""
    victim = tmp_path / "victim.pth"
    victim.write_text("keep me\n")
    before = os.stat(victim)
    obj = {"c": [cls, {"path": str(victim), "what": "x", "doc": None, "fmt": "csv", "out": str(victim)}]}
    state = json.loads(json.dumps(encode_tree(a_current_state())))
    if where == "root":
        tree, hint = obj, CurrentState
    elif where == "a field":
        state["c"][1]["retained"] = obj
        tree, hint = state, CurrentState
    elif where == "an Any position":  # FrameState.previous: a plain dict, data only
        tree = encode_tree(WindowedBucket())
        tree["c"][1]["windows"]["c"][1]["previous"] = {"d": [[0], [obj]]}
        hint = WindowedBucket
    else:
        tree, hint = {"o": [[1], [obj]]}, np.ndarray
    with pytest.raises(CodecError) as e:
        decode(crafted(tree), hint, "the operator state")
    assert "\n" not in e.value.message and len(e.value.message) < 400
    after = os.stat(victim)
    assert victim.read_text() == "keep me\n" and (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert os.listdir(tmp_path) == ["victim.pth"]


def encode_tree(value: Any) -> Any:
    """The JSON tree `encode` writes for `value` (its arrays left as references)."""
    blob = encode(value, type(value))
    size = int.from_bytes(blob[len(MAGIC):len(MAGIC) + 8], "little")
    return json.loads(blob[len(MAGIC) + 8:len(MAGIC) + 8 + size])["v"]


@pytest.mark.parametrize("tree, arrays, why", [
    ({"c": ["CurrentState", {}]}, [], "has fields"),  # fields missing
    ({"a": 0}, [["|O8", [1], 0]], "described as"),  # an object dtype as raw bytes
    ({"a": 0}, [["<i8", [10**6], 0]], "ends past"),  # an array past the payload's end
    ({"a": 0}, [["<i8", [-1], 0]], "described as"),
    ({"q": [1, 0]}, [], "ZeroDivisionError"),
    ({"d": [[[1]], [2]]}, [], "TypeError"),  # an unhashable key
    ({"zz": 1}, [], "tag"),
    ([[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], [],
     "nested more than"),
])
def test_a_damaged_payload_is_one_sentence(tree, arrays, why) -> None:
    with pytest.raises(CodecError, match=why) as e:
        decode(crafted(tree, arrays), Any if tree != {"c": ["CurrentState", {}]} else CurrentState, "a record")
    assert "\n" not in e.value.message


def test_a_field_of_the_wrong_type_is_refused() -> None:
    tree = encode_tree(a_current_state())
    tree["c"][1]["gmax"] = "not a number"
    with pytest.raises(CodecError, match="an int | None was expected, it holds a str"):
        decode(crafted(tree), CurrentState)


def test_the_worker_refusal_is_exit_2_in_one_sentence() -> None:
    from tefq.spark.operators.base import restored

    with pytest.raises(RuntimeError) as e:
        restored(pickle.dumps(Payload(os.system, "true")), CurrentState)
    wrapped = RuntimeError("An exception was thrown from the Python worker.\nTraceback ...\n" + str(e.value)
                           + "\n\tat org.apache.spark.api.python...\n")
    message = failure_message(wrapped)
    assert is_refusal(wrapped) and "\n" not in message
    assert message.startswith("tefq: error: the operator state in this checkpoint is not in the format this tefq "
                              "writes") and message.endswith("use a fresh --checkpoint")


def test_the_cli_exits_2_on_a_worker_refusal(monkeypatch, capsys) -> None:
    from tefq import cli

    def refuse(args) -> int:
        record = WorkerFailure(REFUSAL, {"message": "the operator state in this checkpoint is not data tefq wrote: "
                                                    "x: use a fresh --checkpoint"})
        raise RuntimeError(f"Py4JJavaError ...\n{record.error()}\n\tat org.apache...")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    monkeypatch.setattr(parser, "parse_args", lambda argv: type("A", (), {"func": staticmethod(refuse)})())
    assert cli.run_command(["run"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["tefq: error: the operator state in this checkpoint is not data tefq wrote: "
                                        "x: use a fresh --checkpoint"]


def test_a_checkpoint_of_the_pickle_format_is_refused(tmp_path) -> None:
    from tefq.spark.runtime.checkpoint import MARKER, STATE_VERSION, claim

    (tmp_path / MARKER).write_text("7\n")
    with pytest.raises(TefqError, match=f"state version 7; this tefq reads version {STATE_VERSION} only"):
        claim(str(tmp_path))


GENRE = """PREFIX : <http://example.org/iptv#>
CONSTRUCT FACT UserFact {?user :watching ?channel .} (UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))
SELECT ?genre AS G, ?n AS N (AGGREGATE ?genre, COUNT ?user AS ?n WHERE { (CURRENT ?user :watching ?channel) .
  ?channel :genre ?genre } GROUP BY ?genre EVERY "PT10S"^^xsd:duration)
"""


def crafted_sink_file(output: str, kind: str, payload: bytes) -> None:
    """A hand-made parquet file of sink records in `output`, listed by one more `_spark_metadata`
    entry: the next run reads it as a committed batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(output, "part-00000-crafted.parquet")
    pq.write_table(pa.table({"kind": [kind], "tick": pa.array([0], pa.int64()), "payload": [payload]}), path)
    log = os.path.join(output, "_spark_metadata")
    last = max(int(n) for n in os.listdir(log) if n.isdigit())
    entry = {"path": f"file://{path}", "size": os.path.getsize(path), "isDir": False,
             "modificationTime": 1, "blockReplication": 1, "blockSize": 1, "action": "add"}
    with open(os.path.join(log, str(last + 1)), "w") as fh:
        fh.write("v1\n" + json.dumps(entry) + "\n")


@pytest.mark.spark
def test_a_hand_made_sink_record_in_a_checkpoint_runs_nothing(tmp_path) -> None:
    """The issue's attack: the general plan's records were `pickle.loads`ed on the driver."""
    doc, bg, stream, ck, out = (tmp_path / n for n in ("genre.tef", "bg.nt", "s.tsv", "ck", "out.csv"))
    doc.write_text(GENRE)
    x = "http://example.org/iptv#"
    bg.write_text("".join(f"<{x}c{i}> <{x}genre> <{x}{g}> .\n" for i, g in enumerate(["News", "Sports"])))
    stream.write_text("ts\ts\tp\to\n" + "".join(f"{1000 * k}\t<{x}u{k}>\t<{x}join>\t<{x}c{k % 2}>\n"
                                                 for k in range(1, 30)))
    command = [sys.executable, "-m", "tefq", "run", str(doc), "--engine", "spark", "--background", str(bg),
               "--stream", str(stream), "--checkpoint", str(ck), "--out", str(out)]
    first = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert first.returncode == 0, first.stderr
    rows = out.read_text()
    marker = tmp_path / "ran"
    outputs = [os.path.join(ck, q, "output") for q in os.listdir(ck) if os.path.isdir(os.path.join(ck, q, "output"))]
    assert len(outputs) == 1
    crafted_sink_file(outputs[0], "grows", pickle.dumps(Payload(os.system, f"touch {marker}"), protocol=5))
    again = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert again.returncode == 2, again.stderr
    assert "Traceback" not in again.stderr and not marker.exists() and out.read_text() == rows
    error = [line for line in again.stderr.splitlines() if "error:" in line]
    assert len(error) == 1 and error[0].startswith(outputs[0] + ": error: a 'grows' record of the query's sink is "
                                                   "not in the format this tefq writes"), again.stderr
