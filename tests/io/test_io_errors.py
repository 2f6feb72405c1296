"""Every malformed input is a TefqError naming the file, the line (Parquet: the row) and, where
known, the column. Nothing is skipped silently."""
from __future__ import annotations

import gzip

import pytest

from tefq.errors import TefqError
from tefq.io.readers import read_background, read_stream

S, P, O = "<http://x/s>", "<http://x/p>", "<http://x/o>"
H = "ts\ts\tp\to\n"
GEN = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "^^<http://www.w3.org/2001/XMLSchema#dateTime>"


def error_of(path: str) -> TefqError:
    with pytest.raises(TefqError) as info:
        list(read_stream(path))
    return info.value


# (file name, content, line, column (0 = not checked), words the message must contain)
CASES = [
    ("bad_ts.tsv", H + f"1\t{S}\t{P}\t{O}\nnoon\t{S}\t{P}\t{O}\n", 3, 1, "bad timestamp"),
    ("bad_date.tsv", H + f"2024-02-30T00:00:00\t{S}\t{P}\t{O}\n", 2, 1, "bad timestamp"),
    ("columns.tsv", H + f"1\t{S}\t{P}\n", 2, 0, "expected 4"),
    ("extra.tsv", H + f"1\t{S}\t{P}\t{O}\t{O}\n", 2, 0, "expected 4"),
    ("header.tsv", f"1\t{S}\t{P}\t{O}\n", 1, 1, "header"),
    ("space_iri.tsv", H + f"1\t<http://x/a b>\t{P}\t{O}\n", 2, 3, "malformed IRI"),
    ("relative.tsv", H + f"1\t{S}\t{P}\t<o>\n", 2, 29, "not absolute"),
    ("lit_pred.tsv", H + f'1\t{S}\t"p"\t{O}\n', 2, 16, "predicate must be an IRI"),
    ("lit_subj.tsv", H + f'1\t"s"\t{P}\t{O}\n', 2, 3, "subject must be"),
    ("unterminated.tsv", H + f'1\t{S}\t{P}\t"abc\n', 2, 29, "malformed literal"),
    ("bad_escape.tsv", H + f'1\t{S}\t{P}\t"a\\qb"\n', 2, 29, "malformed literal"),
    ("trailing.tsv", H + f"1\t{S}\t{P}\t{O} junk\n", 2, 41, "unexpected text"),
    ("prefix.tsv", H + f'1\t{S}\t{P}\t"5"^^foo:int\n', 2, 29, "unknown prefix"),
    ("bad_ts.csv", f"ts,s,p,o\nx,{S},{P},{O}\n", 2, 0, "bad timestamp"),
    ("columns.csv", f"ts,s,p,o\n1,{S},{P}\n", 2, 0, "expected 4"),
    ("term.csv", f'ts,s,p,o\n1,{S},{P},{O}\n2,{S},{P},"""unterminated"\n', 3, 0, "column o"),
    ("quote.csv", f'ts,s,p,o\n1,{S},{P},"""x""\n', 2, 0, "malformed CSV"),
    ("multiline.csv", f'ts,s,p,o\n1,{S},{P},"""a\nb"""\n3,{S},{P},bad\n', 2, 0, "column o"),
    ("after_multiline.csv", f'ts,s,p,o\n1,{S},{P},"""a\\nb"""\n3,{S},{P},bad\n', 3, 0, "column o"),
    ("no_dot.nq", f"{S} {P} {O} <urn:g>\n", 1, 47, "expected '.'"),
    ("default.nq", f"{S} {P} {O} .\n", 1, 0, "default graph"),
    ("no_time.nq", f"{S} {P} {O} <urn:g> .\n{S} {P} {O} <urn:h> .\n<urn:g> {GEN} \"1970-01-01T00:00:00Z\"{DT} .\n",
     2, 0, "<urn:h> has no time"),
    ("bad_time.nq", f'<urn:g> {GEN} "yesterday"{DT} .\n', 1, 53, "not an ISO-8601"),
    ("typed_time.nq", f'<urn:g> {GEN} "1"@en .\n', 1, 0, "timestamp must be"),
    ("two_times.nq", f'<urn:g> {GEN} "1970-01-01T00:00:00Z"{DT} .\n<urn:g> {GEN} "1970-01-01T00:00:01Z"{DT} .\n',
     2, 0, "two times"),
    ("literal_graph.nq", f'{S} {P} {O} "g" .\n', 1, 40, "graph name must be"),
    ("no_ts.stream", f"{S} {P} {O} .\n", 1, 0, "YABench"),
    ("bad_ts.stream", f'{S} {P} {O} "soon" .\n', 1, 40, "not an ISO-8601"),
    ("syntax.trig", "@prefix : <http://x/> .\n<urn:g> {\n  :s :p .\n}\n", 3, 0, "syntax error"),
    ("no_time.trig", "@prefix : <http://x/> .\n\n<urn:g> { :s :p :o . }\n", 3, 0, "<urn:g> has no time"),
    ("utf8.tsv", None, 2, 0, "invalid UTF-8"),
]


@pytest.mark.parametrize("name,content,line,column,words", CASES, ids=[c[0] for c in CASES])
def test_malformed_input_is_located(tmp_path, name, content, line, column, words) -> None:
    f = tmp_path / name
    if content is None:
        f.write_bytes(H.encode() + b"1\t<http://x/\xff>\t<http://x/p>\t<http://x/o>\n")
    else:
        f.write_text(content, encoding="utf-8")
    e = error_of(str(f))
    assert e.file == str(f)
    assert e.line == line, e.render()
    if column:
        assert e.column == column, e.render()
    assert words in e.message, e.render()
    assert e.render().startswith(f"{f}:{line}:")


def test_column_caret_points_at_the_bad_term(tmp_path) -> None:
    f = tmp_path / "t.tsv"
    f.write_text(H + f"1\t{S}\t{P}\t<o>\n")
    text = error_of(str(f)).render().splitlines()
    assert text[1].strip() == f"1\t{S}\t{P}\t<o>"
    assert text[2].index("^") == text[1].index("<o>")


def test_missing_path(tmp_path) -> None:
    with pytest.raises(TefqError, match="no such stream file"):
        read_stream(str(tmp_path / "nope.tsv"))  # raised at call time, before iterating


def test_unknown_extension(tmp_path) -> None:
    f = tmp_path / "s.json"
    f.write_text("{}")
    with pytest.raises(TefqError, match="unknown stream file type") as info:
        read_stream(str(f))
    assert info.value.file == str(f)


def test_unknown_extension_inside_a_directory_is_not_skipped(tmp_path) -> None:
    (tmp_path / "a.tsv").write_text(H)
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(TefqError) as info:
        read_stream(str(tmp_path))
    assert info.value.file.endswith("notes.txt")


def test_empty_directory(tmp_path) -> None:
    (tmp_path / "_SUCCESS").write_text("")
    with pytest.raises(TefqError, match="no stream files"):
        read_stream(str(tmp_path))


def test_gzip_parquet_is_refused(tmp_path) -> None:
    f = tmp_path / "s.parquet.gz"
    f.write_bytes(b"")
    with pytest.raises(TefqError, match="unknown stream file type"):
        read_stream(str(f))


def test_corrupt_gzip(tmp_path) -> None:
    f = tmp_path / "s.tsv.gz"
    f.write_bytes(b"this is not gzip")
    e = error_of(str(f))
    assert e.file == str(f) and "cannot read" in e.message


def test_truncated_gzip_names_the_line(tmp_path) -> None:
    f = tmp_path / "s.tsv.gz"
    data = gzip.compress((H + "".join(f"{i}\t{S}\t{P}\t{O}\n" for i in range(2000))).encode())
    f.write_bytes(data[: len(data) // 2])
    e = error_of(str(f))
    assert e.line > 2 and "cannot read" in e.message


def test_unreadable_file(tmp_path, monkeypatch) -> None:
    import tefq.io.limits as limits

    f = tmp_path / "s.tsv"
    f.write_text(H)

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(limits, "open", denied, raising=False)  # chmod does not stop root
    e = error_of(str(f))
    assert e.file == str(f) and "cannot read" in e.message and "Permission denied" in e.message


def _parquet(tmp_path, **cols):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    f = tmp_path / "s.parquet"
    pq.write_table(pa.table(cols), f)
    return str(f)


def test_parquet_missing_column(tmp_path) -> None:
    f = _parquet(tmp_path, ts=[1], s=[S], p=[P])
    with pytest.raises(TefqError, match="missing Parquet column"):
        list(read_stream(f))


def test_parquet_wrong_ts_type(tmp_path) -> None:
    f = _parquet(tmp_path, ts=["1"], s=[S], p=[P], o=[O])
    with pytest.raises(TefqError, match="column ts must be int64"):
        list(read_stream(f))


def test_parquet_null_names_the_row(tmp_path) -> None:
    f = _parquet(tmp_path, ts=[1, 2, 3], s=[S, S, S], p=[P, P, P], o=[O, None, O])
    e = error_of(f)
    assert (e.line, e.file) == (2, f) and "column o is null" in e.message


def test_parquet_bad_term_names_the_row_and_column(tmp_path) -> None:
    f = _parquet(tmp_path, ts=[1, 2, 3], s=[S, S, S], p=[P, P, '"p"'], o=[O, O, O])
    e = error_of(f)
    assert e.line == 3 and "row 3, column p" in e.message


def test_parquet_not_parquet(tmp_path) -> None:
    f = tmp_path / "s.parquet"
    f.write_text("not parquet")
    with pytest.raises(TefqError, match="cannot read the Parquet file") as info:
        list(read_stream(str(f)))
    assert info.value.file == str(f)


def test_background_errors_are_located(tmp_path) -> None:
    ttl = tmp_path / "bg.ttl"
    ttl.write_text("@prefix : <http://x/> .\n:a :b :c .\n:a :b .\n")
    with pytest.raises(TefqError) as info:
        read_background(str(ttl))
    assert (info.value.file, info.value.line) == (str(ttl), 3)
    nt = tmp_path / "bg.nt"
    nt.write_text(f"{S} {P} {O} .\n{S} {P} oops .\n")
    with pytest.raises(TefqError) as info:
        read_background(str(nt))
    assert (info.value.file, info.value.line) == (str(nt), 2)
    with pytest.raises(TefqError, match="no such background file"):
        read_background(str(tmp_path / "none.ttl"))
    odd = tmp_path / "bg.xml"
    odd.write_text("<rdf/>")
    with pytest.raises(TefqError, match="unknown background file type"):
        read_background(str(odd))


def test_trig_time_errors_point_at_a_line(tmp_path) -> None:
    f = tmp_path / "t.trig"
    f.write_text('@prefix prov: <http://www.w3.org/ns/prov#> .\n<urn:g> { <http://x/s> <http://x/p> 1 . }\n'
                 '<urn:g> prov:generatedAtTime "later" .\n')
    e = error_of(str(f))
    assert (e.line, "not an ISO-8601" in e.message) == (3, True), e.render()
    f.write_text('@prefix prov: <http://www.w3.org/ns/prov#> .\n<urn:g> prov:generatedAtTime "1" .\n'
                 '<urn:g> prov:generatedAtTime "2" .\n')
    e = error_of(str(f))
    assert e.line == 2 and "two times" in e.message  # the graph's first mention: rdflib keeps no positions
