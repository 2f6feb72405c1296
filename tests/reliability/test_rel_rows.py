"""Issue 17, fault 3: one input validation. Every kind of bad row is named, located (FILE:LINE:COL),
recorded with `--bad-rows` and counted; nothing is lost silently. Each engine is one entry of
ENGINES: the oracle's readers, and the Spark engine (text streams staged through the same readers,
Parquet rows checked in its mappers by the Parquet reader's rules)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.io.bad_rows import BadRow, BadRowLog
from tefq.io.readers import read_stream
from tefq.io.validate import KINDS, classify_cells, classify_line
from tests.support.paths import ROOT

pytestmark = pytest.mark.reliability

S, P, O = "<http://x/s>", "<http://x/p>", "<http://x/o>"
TSV_H, CSV_H = "ts\ts\tp\to\n", "ts,s,p,o\n"
TEFQ = os.environ.get("TEFQ_CLI", f"{sys.executable} -m tefq").split()  # TEFQ_CLI: to try old code
UC1 = os.path.join(ROOT, "usecases", "uc1.tef")


def oracle_verdicts(path: str, bad_dir: str) -> tuple[int, list[tuple[int, str]]]:
    """(number of elements read, [(line, kind)] of the bad rows recorded)."""
    log = BadRowLog(bad_dir)
    n = sum(1 for _ in read_stream(path, log))
    log.close()
    return n, read_records(bad_dir)


def read_records(bad_dir: str) -> list[tuple[int, str]]:
    out = []
    for name in sorted(os.listdir(bad_dir)) if os.path.isdir(bad_dir) else []:
        with open(os.path.join(bad_dir, name), encoding="utf-8") as fh:
            for rec in fh:
                file, line, kind, reason, row = rec.rstrip("\n").split("\t", 4)
                out.append((int(line), kind))
    return sorted(out)


def spark_verdicts(path: str, bad_dir: str) -> tuple[int, list[tuple[int, str]]]:
    """The same, from a Spark run of UC1 with --bad-rows: rows read = events_in (+ the duplicate
    elements, applied once); the bad-rows count in the metrics must equal the records."""
    from tefq.api import load
    from tefq.spark import run
    from tefq.spark.runtime.session import get_session

    spark = get_session("local[2]")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    m = run(load(UC1).document(), [path], spark=spark, buckets=2, progress=False, bad_rows=bad_dir).metrics
    records = read_records(bad_dir)
    assert m.extra["bad_rows"] == len(records), (m.extra, records)
    return m.events_in + m.extra["duplicates"], records


ENGINES = {"oracle": oracle_verdicts, "spark": spark_verdicts}
ENGINE_PARAMS = [pytest.param(e, marks=[pytest.mark.spark] if e == "spark" else []) for e in ENGINES]
SPARK_FUZZ_EXAMPLES = max(1, int(os.environ.get("TEFQ_FUZZ_EXAMPLES", "150")) // 10)  # a Spark run each

# (file name, bytes, line, column, kind): one row of every kind, in TSV and CSV
CASES = [
    ("nul.tsv", TSV_H + f'1\t{S}\t{P}\t"a\x00b"\n', 2, 31, "nul-byte"),
    ("nul.csv", CSV_H + f'1,{S},{P},"""a\x00"""\n', 2, 33, "nul-byte"),
    ("utf8.tsv", TSV_H.encode() + b"1\t<http://x/\xff>\t" + P.encode() + b"\t" + O.encode() + b"\n", 2, 13,
     "invalid-utf8"),
    ("binary.tsv", b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\n", 1, 8, "nul-byte"),
    ("escape.tsv", TSV_H + f'1\t{S}\t{P}\t"a\\qb"\n', 2, 29, "bad-escape"),
    ("escape.csv", CSV_H + f'1,{S},{P},"""a\\qb"""\n', 2, 29, "bad-escape"),
    ("fifth.tsv", TSV_H + f"1\t{S}\t{P}\t{O}\textra\n", 2, 42, "column-count"),
    ("fifth.csv", CSV_H + f"1,{S},{P},{O},extra\n", 2, 42, "column-count"),
    ("three.csv", CSV_H + f"1,{S},{P}\n", 2, 28, "column-count"),
    ("noheader.tsv", f"1\t{S}\t{P}\t{O}\n", 1, 1, "bad-header"),
    ("noheader.csv", f"1,{S},{P},{O}\n", 1, 1, "bad-header"),
    ("quote.csv", CSV_H + f'1,{S},{P},"""x""\n', 2, 29, "csv-quoting"),
    ("after_quote.csv", CSV_H + f'1,"{S}"x,{P},{O}\n', 2, 3, "csv-quoting"),
    ("empty.tsv", TSV_H + f"1\t\t{P}\t{O}\n", 2, 3, "empty-cell"),
    ("empty_ts.csv", CSV_H + f",{S},{P},{O}\n", 2, 1, "empty-cell"),
    ("ts.tsv", TSV_H + f"noon\t{S}\t{P}\t{O}\n", 2, 1, "bad-timestamp"),
    ("ts_range.tsv", TSV_H + f"99999999999999999999\t{S}\t{P}\t{O}\n", 2, 1, "timestamp-range"),
    ("term.tsv", TSV_H + f"1\t<http://x/a b>\t{P}\t{O}\n", 2, 3, "bad-term"),
    ("position.tsv", TSV_H + f'1\t{S}\t"p"\t{O}\n', 2, 16, "term-position"),
    ("statement.nq", f"{S} {P} {O} <urn:g>\n", 1, 47, "bad-statement"),
    ("term.stream", f'{S} {P} "a\\qb" "1" .\n', 1, 27, "bad-escape"),
    ("ts_range.stream", f'{S} {P} {O} "99999999999999999999" .\n', 1, 40, "timestamp-range"),
    ("long_line.tsv", TSV_H + f'1\t{S}\t{P}\t"' + "a" * (1 << 20) + '"\n', 2, 1, "line-too-long"),
    ("long_term.tsv", TSV_H + "1\t<http://x/" + "a" * 70_000 + f">\t{P}\t{O}\n", 2, 3, "term-too-long"),
]


def write(tmp_path, name: str, content: str | bytes) -> str:
    f = tmp_path / name
    f.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return str(f)


def test_every_kind_has_a_case() -> None:
    assert {c[4] for c in CASES} == set(KINDS)


def strict_spark(path: str) -> None:
    from tefq.api import load
    from tefq.spark import run
    from tefq.spark.runtime.session import get_session

    run(load(UC1).document(), [path], spark=get_session("local[2]"), buckets=2, progress=False)


STRICT_READERS = {"oracle": lambda path: list(read_stream(path)), "spark": strict_spark}


@pytest.mark.parametrize("engine", ENGINE_PARAMS)
@pytest.mark.parametrize("name,content,line,column,kind", CASES, ids=[c[0] for c in CASES])
def test_bad_row_is_named_and_located(tmp_path, engine, name, content, line, column, kind) -> None:
    path = write(tmp_path, name, content)
    with pytest.raises(BadRow) as info:
        STRICT_READERS[engine](path)
    e = info.value
    assert (e.file, e.line, e.column, e.bad_kind) == (path, line, column, kind), e.render()
    assert e.render().startswith(f"{path}:{line}:{column}: error: ")


@pytest.mark.parametrize("engine", ENGINE_PARAMS)
@pytest.mark.parametrize("name,content,line,column,kind", CASES, ids=[c[0] for c in CASES])
def test_bad_rows_dir_records_every_kind(tmp_path, engine, name, content, line, column, kind) -> None:
    """With a bad-rows directory the row is recorded (file, line, kind) and the good rows still read."""
    ext = name.rsplit(".", 1)[1]
    good = {"tsv": f"5\t{S}\t{P}\t{O}\n", "csv": f"5,{S},{P},{O}\n", "nq": "", "stream": f'{S} {P} {O} "5" .\n'}[ext]
    data = content + (good.encode() if isinstance(content, bytes) else good)
    n, records = ENGINES[engine](write(tmp_path, name, data), str(tmp_path / "bad"))
    assert (line, kind) in records
    if line > 1:  # (a bad first line makes the next one the header candidate)
        assert n == (1 if good else 0)


def test_header_is_checked_not_assumed(tmp_path) -> None:
    """A file without the header loses nothing silently: strict, it stops at line 1; with
    --bad-rows, line 1 is recorded and the rest is read in the default column order."""
    path = write(tmp_path, "s.tsv", f"1\t{S}\t{P}\t{O}\n2\t{S}\t{P}\t{O}\n")
    n, records = oracle_verdicts(path, str(tmp_path / "bad"))
    assert (n, records) == (1, [(1, "bad-header")])


def test_bom_is_accepted(tmp_path) -> None:
    for name, h, row in (("b.tsv", TSV_H, f"1\t{S}\t{P}\t{O}\n"), ("b.csv", CSV_H, f"1,{S},{P},{O}\n")):
        path = write(tmp_path, name, ("\ufeff" + h + row).encode("utf-8"))
        assert list(read_stream(path)) == [(1, S, P, O)]


@pytest.mark.spark
def test_bom_is_accepted_on_spark(tmp_path) -> None:
    """Spark's CSV reader refused a file starting with a UTF-8 BOM (its header did not match)."""
    for name, h, row in (("b.tsv", TSV_H, f"1\t{S}\t{P}\t{O}\n"), ("b.csv", CSV_H, f"1,{S},{P},{O}\n")):
        path = write(tmp_path, name, ("\ufeff" + h + row).encode("utf-8"))
        assert spark_verdicts(path, str(tmp_path / f"bad-{name}")) == (1, [])


def test_classify_cells_matches_the_reader() -> None:
    """The call an engine with its own CSV reader makes: (kind, cell 1..4, message)."""
    assert classify_cells("1", S, P, O) is None
    assert classify_cells("1", S, P, None)[:2] == ("empty-cell", 4)
    assert classify_cells("x", S, P, O)[:2] == ("bad-timestamp", 1)
    assert classify_cells("1", S, '"p"', O)[:2] == ("term-position", 3)
    assert classify_cells("1", S, P, '"a\\qb"')[:2] == ("bad-escape", 4)
    assert classify_cells("1", S, P, '"a\x00"')[:2] == ("nul-byte", 4)


def test_cli_bad_rows_on_the_oracle(tmp_path) -> None:
    """`--bad-rows DIR` on the oracle: records (file, line, kind, reason, row), metrics bad_rows."""
    u, join, ch = "<http://example.org/iptv#u1>", "<http://example.org/iptv#join>", "<http://example.org/iptv#c>"
    stream = write(tmp_path, "s.tsv", TSV_H + f"1000\t{u}\t{join}\t{ch}\nnoon\t{S}\t{P}\t{O}\n"
                   f'2000\t{S}\t{P}\t"a\x00"\n3000\t{S}\t{P}\t{O}\textra\n40000\t{S}\t{P}\t{O}\n')
    r = subprocess.run(TEFQ + ["run", UC1, "--engine", "oracle", "--stream", stream, "--bad-rows",
                               str(tmp_path / "bad"), "--metrics", str(tmp_path / "m.json"), "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert read_records(str(tmp_path / "bad")) == [(3, "bad-timestamp"), (4, "nul-byte"), (5, "column-count")]
    assert json.loads((tmp_path / "m.json").read_text())["bad_rows"] == 3
    rec = next(iter((tmp_path / "bad").iterdir())).read_text().splitlines()[0].split("\t", 4)
    assert rec[0] == stream and rec[4].startswith("noon")
    assert r.stdout.splitlines()[1:] == [f"{t},http://example.org/iptv#c,1" for t in range(10000, 40001, 10000)]


# ---------------------------------------------------------------------------------------------
# Mutation fuzzer: any mutation of good rows is read, or is a located bad row; never a traceback,
# never lost (good + recorded = data lines), and the reader agrees with `classify_line`.

GOOD_ROWS = [f"1000\t{S}\t{P}\t{O}", f'2000\t{S}\t{P}\t"a b"@en', f'3\t_:b1\t{P}\t"1"^^<http://x/dt>',
             f"1970-01-01T00:00:01Z\t{S}\t{P}\t42"]
PIECES = ["\t", ",", '"', "\\", "<", ">", " ", "\x00", "\ufeff", "é", "\\u00", "^^", "@", "_:", "-", "9" * 20,
          "T", ":", "\r", "\x85", "\U0001F600", "\udcff", "\udc80"]  # the last two: raw bytes 0xff, 0x80


@st.composite
def mutated_rows(draw) -> str:
    row = draw(st.sampled_from(GOOD_ROWS))
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(row)))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.one_of(st.sampled_from(PIECES), st.text(max_size=2)))
        if op == "insert":
            row = row[:i] + piece + row[i:]
        elif op == "delete":
            row = row[:i] + row[i + 1:]
        else:
            row = row[:i] + piece + row[i + len(piece):]
    return row


def encode(rows: list[str]) -> bytes:
    """Lone surrogates \udc80-\udcff become raw (invalid UTF-8) bytes; other ones become '?'."""
    return TSV_H.encode() + b"".join(_raw(r) + b"\n" for r in rows)


def _raw(text: str) -> bytes:
    return b"".join(c.encode("utf-8", "surrogateescape") if not 0xD800 <= ord(c) < 0xDC80 else b"?"
                    for c in text)


FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.parametrize("engine", ENGINE_PARAMS)
def test_fuzzed_rows_are_read_or_located(tmp_path_factory, engine) -> None:
    examples = SPARK_FUZZ_EXAMPLES if engine == "spark" else int(os.environ.get("TEFQ_FUZZ_EXAMPLES", "150"))

    @settings(FUZZ, max_examples=examples)
    @given(rows=st.lists(mutated_rows(), min_size=1, max_size=6))
    def fuzz(rows: list[str]) -> None:
        check_fuzzed_rows(tmp_path_factory, engine, rows)

    fuzz()


def check_fuzzed_rows(tmp_path_factory, engine: str, rows: list[str]) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")
    data = encode([r.replace("\n", " ") for r in rows])
    path = write(tmp, "f.tsv", data)
    lines = data.split(b"\n")[1:-1]
    data_lines = [i + 2 for i, raw in enumerate(lines) if raw.strip(b" \t\r")]
    try:
        list(read_stream(path))
    except BadRow as e:  # strict: a located error at a data line, with a column
        assert e.file == path and e.line in data_lines and e.column >= 1, e.render()
    n, records = ENGINES[engine](path, str(tmp / "bad"))
    assert n + len(records) == len(data_lines), (n, records, data_lines)
    for i, raw in enumerate(lines, 2):
        if i in data_lines:
            verdict = classify_line(raw.rstrip(b"\r"), "tsv")
            assert (verdict is None) == (i not in {line for line, _ in records}), (i, raw, verdict)


@pytest.mark.parametrize("engine", ENGINE_PARAMS)
def test_parquet_bad_rows_are_recorded_by_row(tmp_path, engine) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = str(tmp_path / "s.parquet")
    pq.write_table(pa.table({"ts": [1, 2, 3, 4], "s": [S, "<rel>", S, S], "p": [P, P, P, '"p"'],
                             "o": [O, O, None, O]}), path)
    n, records = ENGINES[engine](path, str(tmp_path / "bad"))
    assert (n, records) == (1, [(2, "bad-term"), (3, "empty-cell"), (4, "term-position")])


@pytest.mark.parametrize("how", [
    pytest.param(["--engine", "oracle", "--simulate", "refresh"], id="oracle-simulate"),
    pytest.param(["--engine", "spark", "--stream", "-"], id="spark-stdin", marks=pytest.mark.spark),
])
def test_bad_rows_dir_on_every_input_path(tmp_path, how) -> None:
    """--simulate on the oracle and Spark's standard input read their rows outside the engines'
    readers: they used to stop at the first bad row although --bad-rows was given."""
    u, join, ch = "<http://example.org/iptv#u1>", "<http://example.org/iptv#join>", "<http://example.org/iptv#c>"
    data = TSV_H + f"1000\t{u}\t{join}\t{ch}\nnoon\t{S}\t{P}\t{O}\n40000\t{S}\t{P}\t{O}\n"
    stream = write(tmp_path, "s.tsv", data)
    args = ["run", UC1, *how, "--bad-rows", str(tmp_path / "bad"), "--metrics", str(tmp_path / "m.json"), "--quiet"]
    if "-" not in how:
        args += ["--stream", stream]
    r = subprocess.run(TEFQ + args, capture_output=True, text=True, input=data if "-" in how else None)
    assert r.returncode == 0, r.stderr[-3000:]
    assert read_records(str(tmp_path / "bad")) == [(3, "bad-timestamp")]
    assert json.loads((tmp_path / "m.json").read_text())["bad_rows"] == 1
    assert r.stdout.splitlines()[1].startswith("10000,http://example.org/iptv#c,")
