"""Stream readers on small hand-written fixtures (tests/data/streams): every format encodes the
same six elements, so each must read back exactly EXPECTED."""
from __future__ import annotations

import gzip
import os
import shutil

import pytest

from tefq.errors import TefqError
from tefq.io.rdf import background_as_ntriples
from tefq.io.readers import read_background, read_stream, stream_files
from tests.support.paths import DATA

STREAMS = os.path.join(DATA, "streams")
E = "http://example.org/iptv#"
X = "http://www.w3.org/2001/XMLSchema#"

EXPECTED = [
    (1000, f"<{E}u1>", f"<{E}join>", f"<{E}ch1>"),
    (1000, f"<{E}u2>", f"<{E}join>", f"<{E}ch1>"),
    (2500, "_:b1", f"<{E}rating>", f'"4"^^<{X}integer>'),
    (3000, f"<{E}u1>", f"<{E}comment>", '"hi, \\"you\\""@en'),
    (3000, f"<{E}u1>", f"<{E}quit>", f"<{E}ch1>"),
    (4000, f"<{E}ch1>", f"<{E}label>", '"Channel One"'),
]


def path(name: str) -> str:
    return os.path.join(STREAMS, name)


@pytest.mark.parametrize("name", ["basic.tsv", "basic.csv", "basic.nq", "basic.stream"])
def test_each_text_format_reads_the_same_elements(name: str) -> None:
    assert list(read_stream(path(name))) == EXPECTED


def test_trig_reads_the_same_elements_with_blank_nodes_renumbered() -> None:
    got = list(read_stream(path("basic.trig")))
    assert got[2][1] == "_:trig1"
    assert [e for i, e in enumerate(got) if i != 2] == [e for i, e in enumerate(EXPECTED) if i != 2]
    assert got[2][0::2] == EXPECTED[2][0::2]


@pytest.mark.parametrize("name", ["basic.tsv", "basic.csv", "basic.nq", "basic.stream", "basic.trig"])
def test_gzip_variant_reads_like_the_plain_file(name: str, tmp_path) -> None:
    gz = tmp_path / (name + ".gz")
    with open(path(name), "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert list(read_stream(str(gz))) == list(read_stream(path(name)))


def test_directory_is_read_recursively_in_name_order_skipping_markers() -> None:
    files = [os.path.relpath(f, path("dir")) for f in stream_files(path("dir"))]
    assert files == ["part-00000.tsv", "part-00001.csv", os.path.join("sub", "part-00002.nq")]
    assert [e[0] for e in read_stream(path("dir"))] == [5000, 6000, 7000]


def test_directory_order_is_by_relative_path_not_by_number(tmp_path) -> None:
    for name, ts in (("b.tsv", 1), ("a10.tsv", 2), ("a2.tsv", 3)):
        (tmp_path / name).write_text(f"ts\ts\tp\to\n{ts}\t<http://x/s>\t<http://x/p>\t<http://x/o>\n")
    assert [e[0] for e in read_stream(str(tmp_path))] == [2, 3, 1]


def test_both_timestamp_conventions_and_zones(tmp_path) -> None:
    f = tmp_path / "t.nq"
    f.write_text(
        '<urn:a> <http://www.w3.org/ns/prov#generatedAtTime> "2024-01-01T01:00:00.25+01:00"'
        f'^^<{X}dateTime> .\n'
        '<urn:b> <http://www.streamreasoning.org/schema/benchmark#hasTimestamp> '
        f'"1704067200250"^^<{X}long> .\n'
        "<http://x/s> <http://x/p> <http://x/o> <urn:a> .\n<http://x/s> <http://x/p> <http://x/o2> <urn:b> .\n")
    assert [e[0] for e in read_stream(str(f))] == [1704067200250, 1704067200250]


def test_tsv_iso_timestamps_without_zone_are_utc_and_sub_ms_truncates(tmp_path) -> None:
    f = tmp_path / "t.tsv"
    f.write_text("ts\ts\tp\to\n"
                 "1970-01-02T00:00:00\t<http://x/s>\t<http://x/p>\t<http://x/o>\n"
                 "1970-01-01T00:00:00.0019Z\t<http://x/s>\t<http://x/p>\t<http://x/o>\n"
                 "1969-12-31T23:59:59.9995Z\t<http://x/s>\t<http://x/p>\t<http://x/o>\n")
    assert [e[0] for e in read_stream(str(f))] == [86_400_000, 1, -1]


def test_terms_are_normalised(tmp_path) -> None:
    f = tmp_path / "t.tsv"
    cells = ['"a\\u0042"', '"x"@EN-GB', '1.50', '-2e3', 'true', '"5"^^xsd:int', '<http://x/\\u00e9>',
             '"tab\there"']
    f.write_text("ts\ts\tp\to\n" + "".join(f"1\t<http://x/s>\t<http://x/p>\t{c}\n" for c in cells))
    assert [e[3] for e in read_stream(str(f))] == [
        '"aB"', '"x"@en-gb', f'"1.50"^^<{X}decimal>', f'"-2e3"^^<{X}double>', f'"true"^^<{X}boolean>',
        f'"5"^^<{X}int>', "<http://x/\u00e9>", '"tab\\there"']


def test_raw_tab_inside_a_tsv_literal_is_kept(tmp_path) -> None:
    f = tmp_path / "t.tsv"
    f.write_text('ts\ts\tp\to\n1\t<http://x/s>\t<http://x/p>\t"a\tb"\n')
    assert list(read_stream(str(f)))[0][3] == '"a\\tb"'


def test_reader_is_lazy(tmp_path) -> None:
    """A bad row late in the file is only reported when reached: readers stream."""
    f = tmp_path / "t.tsv"
    f.write_text("ts\ts\tp\to\n1\t<http://x/s>\t<http://x/p>\t<http://x/o>\nbad\n")
    it = read_stream(str(f))
    assert next(it)[0] == 1
    with pytest.raises(TefqError):
        next(it)


def test_parquet_fixture_with_timestamp_and_dictionary_columns(tmp_path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({
        "ts": pa.array([1000, 2500], pa.timestamp("ms")),
        "s": pa.array(["<http://x/s>", "_:b"]).dictionary_encode(),
        "p": ["<http://x/p>", "<http://x/p>"],
        "o": ['"v"^^<http://www.w3.org/2001/XMLSchema#string>', '"x"@EN'],
        "extra": [1, 2],
    })
    pq.write_table(table, tmp_path / "t.parquet")
    assert list(read_stream(str(tmp_path / "t.parquet"))) == [
        (1000, "<http://x/s>", "<http://x/p>", '"v"'), (2500, "_:b", "<http://x/p>", '"x"@en')]


def test_background_formats_and_triples(tmp_path) -> None:
    ttl = tmp_path / "bg.ttl"
    ttl.write_text('@prefix : <http://x/> .\n:ch1 :genre "news" ; :rank "01"^^<http://www.w3.org/2001/XMLSchema#integer> .\n')
    nt = tmp_path / "bg.nt"
    nt.write_text('<http://x/ch1> <http://x/genre> "news" .\n<http://x/ch1> <http://x/rank> '
                  f'"01"^^<{X}integer> .\n')
    trig = tmp_path / "bg.trig"
    trig.write_text('@prefix : <http://x/> .\n:g1 { :ch1 :genre "news" . }\n:ch1 :rank "01"^^<http://www.w3.org/2001/XMLSchema#integer> .\n')
    want = [("<http://x/ch1>", "<http://x/genre>", '"news"'),
            ("<http://x/ch1>", "<http://x/rank>", f'"01"^^<{X}integer>')]
    for f in (ttl, nt, trig):
        assert list(background_as_ntriples(read_background(str(f)))) == want, f


def test_crlf_line_ends_and_byte_order_mark(tmp_path) -> None:
    for name, sep in (("t.tsv", "\t"), ("t.csv", ",")):
        f = tmp_path / name
        f.write_bytes(("\ufeff" + sep.join(["ts", "s", "p", "o"]) + "\r\n"
                       + sep.join(["1", "<http://x/s>", "<http://x/p>", "<http://x/o>"]) + "\r\n").encode())
        assert list(read_stream(str(f))) == [(1, "<http://x/s>", "<http://x/p>", "<http://x/o>")], name


def test_gzip_background(tmp_path) -> None:
    f = tmp_path / "bg.nt.gz"
    f.write_bytes(gzip.compress(b'<http://x/a> <http://x/b> "c"@EN .\n'))
    assert list(background_as_ntriples(read_background(str(f)))) == [("<http://x/a>", "<http://x/b>", '"c"@en')]


def test_symlinked_folder_inside_a_stream_directory_is_read(tmp_path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "x.tsv").write_text("ts\ts\tp\to\n9\t<http://x/s>\t<http://x/p>\t<http://x/o>\n")
    stream = tmp_path / "stream"
    stream.mkdir()
    (stream / "linked").symlink_to(real, target_is_directory=True)
    assert [e[0] for e in read_stream(str(stream))] == [9]


def test_spaces_around_cells_are_ignored(tmp_path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("ts, s, p, o\n 1, <http://x/s>, <http://x/p>, \"a b\" \n")
    assert list(read_stream(str(f))) == [(1, "<http://x/s>", "<http://x/p>", '"a b"')]
    t = tmp_path / "t.tsv"
    t.write_text("ts\ts\tp\to\n1\t  <http://x/s>\t<http://x/p>\t<o>\n")
    with pytest.raises(TefqError) as info:
        list(read_stream(str(t)))
    assert info.value.column == 31  # still points at <o>
    t.write_text("ts\ts\tp\to\n1\t  <rel>\t<http://x/p>\t<http://x/o>\n")
    with pytest.raises(TefqError) as info:
        list(read_stream(str(t)))
    assert info.value.column == 5  # past the two spaces, at <rel>
