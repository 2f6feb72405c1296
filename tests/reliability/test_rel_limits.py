"""Issue 39, cases 3 and 4: one input cannot take all the memory or hang a run, and an error never
repeats more than a few hundred characters of it. A stream line was read and echoed whole (a 2 GiB
file of NUL bytes took 8.4 GB and ended in a MemoryError; a 50 MB one gave a 209 MB message), a
2.2 MB `.ttl.gz` background expanding to 1 GiB took 7.4 GB, a FIFO given as --stream hung forever
and one given as --background was "no such background file". Now (tefq.io.limits) lines, terms
and gzip expansion are capped while reading, and non-regular inputs are refused at start.

The caps are lowered through their environment variables so the inputs stay small."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pytest

from tefq.errors import TefqError
from tefq.io.bad_rows import BadRowLog
from tefq.io.readers import read_background, read_stream
from tefq.io.tsv_columns import plain_tsv_table

pytestmark = pytest.mark.reliability

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
X = "http://example.org/iptv#"
HEADER = "ts\ts\tp\to\n"
ROW = f"1000\t<{X}u1>\t<{X}join>\t<{X}c1>\n"


def tefq(*args: str, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tefq", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, env={**os.environ, **(env or {})})


def one_sentence(proc: subprocess.CompletedProcess, limit: int = 1000) -> None:
    assert proc.returncode == 2, proc.stderr[:2000]
    assert "Traceback" not in proc.stderr and len(proc.stderr) < limit, len(proc.stderr)


def test_a_line_over_the_cap_is_a_short_located_bad_row(tmp_path) -> None:
    stream = tmp_path / "s.tsv"
    stream.write_bytes(HEADER.encode() + b"\x00" * 200_000)  # no newline: one 200 kB line
    proc = tefq("run", UC1, "--engine", "oracle", "--stream", str(stream), env={"TEFQ_MAX_LINE_BYTES": "10000"})
    one_sentence(proc)
    assert f"{stream}:2:1: error: the line is longer than the limit of 10,000 bytes (TEFQ_MAX_LINE_BYTES)" \
        in proc.stderr


def test_with_bad_rows_the_long_line_is_recorded_short_and_reading_goes_on(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TEFQ_MAX_LINE_BYTES", "1000")
    stream = tmp_path / "s.tsv"
    stream.write_text(HEADER + ROW + f"2000\t<{X}u2>\t<{X}join>\t<{X}" + "c" * 5000 + ">\n" + ROW.replace("1000", "3000"))
    log = BadRowLog(str(tmp_path / "bad"))
    elements = list(read_stream(str(stream), log))
    log.close()
    assert [e[0] for e in elements] == [1000, 3000] and log.by_kind == {"line-too-long": 1}
    (recorded,) = [open(os.path.join(tmp_path / "bad", f)).read() for f in os.listdir(tmp_path / "bad")]
    assert "\t3\tline-too-long\t" in recorded and len(recorded) < 400


def test_a_line_without_end_from_a_large_input_is_read_in_bounded_pieces(tmp_path, monkeypatch) -> None:
    """20 MB of NUL bytes under a 64 kB cap: refused after the first piece, never held whole."""
    monkeypatch.setenv("TEFQ_MAX_LINE_BYTES", "65536")
    stream = tmp_path / "zeros.tsv"
    with open(stream, "wb") as fh:
        fh.write(HEADER.encode())
        fh.truncate(20 << 20)  # a sparse file of NULs
    with pytest.raises(TefqError) as e:
        list(read_stream(str(stream)))
    assert e.value.line == 2 and "longer than the limit of 65,536 bytes" in e.value.message
    assert len(e.value.render()) < 1000


@pytest.mark.parametrize("fmt, engine", [("tsv", "oracle"), ("parquet", "oracle"),
                                         pytest.param("parquet", "spark", marks=pytest.mark.spark)])
def test_a_term_over_the_cap_is_a_bad_row(tmp_path, fmt, engine) -> None:
    """On Spark a Parquet file is read by Spark: its projection leaves a long term to the oracle's rules."""
    long_iri = f"<{X}" + "u" * 300 + ">"
    stream = tmp_path / f"s.{fmt}"
    rows = [(1000, f"<{X}u1>", f"<{X}join>", f"<{X}c1>"), (2000, long_iri, f"<{X}join>", f"<{X}c1>")]
    if fmt == "tsv":
        stream.write_text(HEADER + "".join("\t".join(map(str, r)) + "\n" for r in rows))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({c: [r[i] for r in rows] for i, c in enumerate(["ts", "s", "p", "o"])}), str(stream))
    proc = tefq("run", UC1, "--engine", engine, "--stream", str(stream), env={"TEFQ_MAX_TERM_CHARS": "200"},
                timeout=600)
    one_sentence(proc, 2000)
    assert f"this term is {len(long_iri)} characters long, more than the limit of 200 (TEFQ_MAX_TERM_CHARS)" \
        in proc.stderr


def test_the_plain_tsv_fast_path_leaves_a_long_term_to_the_row_reader(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TEFQ_MAX_TERM_CHARS", "200")
    stream = tmp_path / "s.tsv"
    stream.write_text(HEADER + ROW)
    assert plain_tsv_table(str(stream)) is not None
    stream.write_text(HEADER + ROW + ROW.replace("u1", "u" * 300))
    assert plain_tsv_table(str(stream)) is None


def test_an_error_shows_a_window_of_a_long_line(tmp_path) -> None:
    stream = tmp_path / "s.tsv"
    stream.write_text(HEADER + f"1000\t<{X}u1>\t<{X}join>\t<{X}" + "c" * 50_000 + "\x00>\n")
    proc = tefq("run", UC1, "--engine", "oracle", "--stream", str(stream))
    one_sentence(proc)
    assert "…" in proc.stderr and proc.stderr.count("c") < 400


def gzip_bomb(path, line: bytes, size: int) -> None:
    """`size` bytes of `line` repeated, gzip-compressed (a few hundred kB on disk)."""
    with gzip.open(path, "wb", compresslevel=1) as fh:
        block = line * (1 << 20 // len(line))
        for _ in range(size // len(block) + 1):
            fh.write(block)


def test_a_gzip_background_that_expands_past_the_cap_is_refused(tmp_path) -> None:
    """70 MB of triples in a small .nt.gz: past the 64 MiB floor and 2x its size."""
    bg = tmp_path / "bomb.nt.gz"
    gzip_bomb(bg, f"<{X}c1> <{X}genre> <{X}News> .\n".encode(), 70 << 20)
    with pytest.raises(TefqError, match=r"this gzip file decompresses to more than 67,108,864 bytes \(2 times its "
                                        r"size, TEFQ_MAX_GZIP_RATIO\)") as e:
        os.environ["TEFQ_MAX_GZIP_RATIO"] = "2"
        try:
            read_background(str(bg))
        finally:
            del os.environ["TEFQ_MAX_GZIP_RATIO"]
    assert e.value.file == str(bg)


def test_a_gzip_stream_under_the_cap_reads_as_before(tmp_path) -> None:
    stream = tmp_path / "s.tsv.gz"
    stream.write_bytes(gzip.compress((HEADER + ROW * 1000).encode()))
    assert len(list(read_stream(str(stream)))) == 1000


def test_a_fifo_stream_is_refused_at_once_not_waited_on(tmp_path) -> None:
    fifo = tmp_path / "s.tsv"
    os.mkfifo(fifo)
    proc = tefq("run", UC1, "--engine", "oracle", "--stream", str(fifo), timeout=60)
    one_sentence(proc)
    assert f"{fifo}: error: this stream file is a FIFO (named pipe), not a regular file: tefq reads regular " \
           "files only (pipe it in: --stream - < FILE)" in proc.stderr


def test_a_fifo_inside_a_stream_directory_is_refused(tmp_path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.tsv").write_text(HEADER + ROW)
    os.mkfifo(tmp_path / "d" / "b.tsv")
    proc = tefq("run", UC1, "--engine", "oracle", "--stream", str(tmp_path / "d"), timeout=60)
    one_sentence(proc)
    assert "b.tsv: error: this stream file is a FIFO (named pipe)" in proc.stderr


@pytest.mark.parametrize("special", ["fifo", "/dev/null"])
def test_a_special_background_says_what_it_is(tmp_path, special) -> None:
    """/dev/null is only looked at (stat), never opened."""
    path = "/dev/null" if special == "/dev/null" else str(tmp_path / "bg.nt")
    if special == "fifo":
        os.mkfifo(path)
    stream = tmp_path / "s.tsv"
    stream.write_text(HEADER + ROW)
    proc = tefq("run", UC1, "--engine", "oracle", "--stream", str(stream), "--background", path, timeout=60)
    one_sentence(proc)
    kind = "a FIFO (named pipe)" if special == "fifo" else "a character device"
    assert f"{path}: error: this background is {kind}, not a regular file" in proc.stderr
