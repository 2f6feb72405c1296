"""Whatever a stream file holds, reading it yields elements or raises TefqError: never a traceback."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tefq.errors import TefqError
from tefq.io.readers import read_stream

# Fragments that look like the formats, so the fuzz reaches deep into the parsers.
FRAGMENTS = ["<http://x/s>", "<http://x/p>", "<urn:g>", '"a"', '"b\\"c"@en', '"1"^^<http://x/dt>', "_:b",
             " ", "\t", ",", ".", "\n", "\r\n", '"', "\\", "<", ">", "^^", "@", "#", "1000", "-1",
             "1970-01-01T00:00:01Z", "ts\ts\tp\to\n", "ts,s,p,o\n", "{", "}", "@prefix : <http://x/> .\n",
             "<http://www.w3.org/ns/prov#generatedAtTime>", "xsd:", "é", "\x00", "\ufeff", "\x85"]
contents = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=30).map("".join)


@pytest.mark.parametrize("ext", ["tsv", "csv", "nq", "stream", "trig"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=contents)
def test_no_traceback(tmp_path, ext, content) -> None:
    f = tmp_path / f"fuzz.{ext}"
    f.write_text(content, encoding="utf-8", errors="surrogatepass")
    try:
        for ts, s, p, o in read_stream(str(f)):
            assert isinstance(ts, int) and s[0] in "<_" and p[0] == "<" and o[0] in '<_"'
    except TefqError as e:
        assert e.file == str(f)


cells = st.one_of(st.sampled_from(FRAGMENTS[:7] + ["<rel>", '"x"^^<http://www.w3.org/2001/XMLSchema#string>',
                                                   '"X"@EN', "42", "<http://x/a b>", '"\t"']),
                  contents)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(cells, cells, cells), min_size=1, max_size=5))
@example(rows=[("<http://x/s>", "<http://x/s>", "<http://x/s> ")])  # spaces around a cell: found by CI
def test_parquet_vectorised_check_agrees_with_the_term_parser(tmp_path, rows) -> None:
    """The Parquet reader's regex fast path and the Python parser accept and normalise alike."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tefq.io.ntriples import TermError, check_position, normalise_term

    f = tmp_path / "fuzz.parquet"
    pq.write_table(pa.table({"ts": list(range(len(rows))), "s": [r[0] for r in rows],
                             "p": [r[1] for r in rows], "o": [r[2] for r in rows]}), f)
    expected: list | None = []
    for i, row in enumerate(rows):
        try:
            # Spaces around a cell carry nothing, in every format (validate.check_term).
            terms = [normalise_term(t.strip(" ")) for t in row]
            for t, role in zip(terms, "spo"):
                check_position(t, role)
            expected.append((i, *terms))
        except TermError:
            expected = None
            break
    if expected is None:
        with pytest.raises(TefqError):
            list(read_stream(str(f)))
    else:
        assert list(read_stream(str(f))) == expected
