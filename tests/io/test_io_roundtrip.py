"""write_stream -> read_stream gives the elements back, in order, for every format (hypothesis)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq import terms
from tefq.io.readers import read_stream
from tefq.io.stream_writers import write_stream
from tests.support.paths import DATA

X = terms.XSD
iris = st.sampled_from(["http://example.org/iptv#u1", "http://example.org/iptv#ch1", "urn:x:y",
                        "http://x/\u00e9t\u00e9?q=1&r=%20#f", "http://ex.org/a/b_c-d.e~"]).map(terms.iri)
bnodes = st.from_regex(r"_:[A-Za-z][A-Za-z0-9_]{0,5}", fullmatch=True)
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
datatypes = st.sampled_from([X + "integer", X + "double", X + "string", X + "dateTime", "http://x/dt"])
langs = st.from_regex(r"[a-z]{1,3}(-[a-z0-9]{1,4})?", fullmatch=True)
literals = st.one_of(
    text.map(terms.literal),
    st.builds(lambda lex, dt: terms.literal(lex, dt), text, datatypes),
    st.builds(lambda lex, lang: terms.literal(lex, lang=lang), text, langs),
)
timestamps = st.integers(min_value=-10**12, max_value=10**13)


def streams(subjects, objects):
    return st.lists(st.tuples(timestamps, subjects, iris, objects), max_size=15)


any_stream = streams(st.one_of(iris, bnodes), st.one_of(iris, bnodes, literals))
common = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("suffix", ["tsv", "csv", "parquet", "nq", "tsv.gz", "csv.gz", "nq.gz"])
@common
@given(elements=any_stream)
def test_round_trip(tmp_path, suffix, elements) -> None:
    path = str(tmp_path / f"s.{suffix}")
    assert write_stream(elements, path) == len(elements)
    assert list(read_stream(path)) == elements


def _canonical_bnodes(elements):
    """Blank-node labels are not preserved by rdflib: compare up to a consistent renaming."""
    names: dict[str, str] = {}

    def name(t: str) -> str:
        return names.setdefault(t, f"_:c{len(names)}") if t.startswith("_:") else t

    return [(ts, name(s), p, name(o)) for ts, s, p, o in elements]


@pytest.mark.parametrize("suffix", ["trig", "trig.gz"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(elements=streams(st.one_of(iris, bnodes), st.one_of(iris, bnodes, literals)))
def test_round_trip_trig(tmp_path, suffix, elements) -> None:
    path = str(tmp_path / f"s.{suffix}")
    write_stream(elements, path)
    assert _canonical_bnodes(list(read_stream(path))) == _canonical_bnodes(elements)


def test_writer_refuses_terms_not_in_normal_form(tmp_path) -> None:
    from tefq.errors import TefqError

    with pytest.raises(TefqError, match="element 1"):
        write_stream([(1, "<http://x/s>", "<http://x/p>", '"x"^^<%sstring>' % X)], str(tmp_path / "s.tsv"))
    with pytest.raises(TefqError, match="format"):
        write_stream([], str(tmp_path / "s.json"))


@settings(max_examples=200, deadline=None)
@given(term=st.one_of(iris, bnodes, literals))
def test_tokenizer_agrees_with_the_normal_form(term) -> None:
    """The slow path (full tokenizer) and the fast path give the same normal form."""
    from tefq.io.ntriples import normalise_term, scan_term

    assert scan_term(term, 0) == (term, len(term))
    assert normalise_term(term) == term


@settings(max_examples=200, deadline=None)
@given(s=st.one_of(iris, bnodes), p=iris, o=st.one_of(iris, bnodes, literals),
       g=st.one_of(st.none(), iris, bnodes), spaces=st.sampled_from([" ", "  ", "\t"]))
def test_fast_line_split_agrees_with_the_tokenizer(s, p, o, g, spaces) -> None:
    from tefq.io.elements import statement as _statement
    from tefq.io.readers import _FastStatements

    line = spaces.join([s, p, o] + ([g] if g else [])) + " ."
    fast = _FastStatements("graph")(line)
    assert fast is None or fast == _statement(line, "x.nq", 1, "graph")
    assert _statement(line, "x.nq", 1, "graph") == (s, p, o, g)


def test_convert_a_directory_to_parquet(tmp_path) -> None:
    import os

    from tefq.io.stream_writers import convert_stream

    src = os.path.join(DATA, "streams", "dir")
    dst = str(tmp_path / "all.parquet")
    assert convert_stream(src, dst) == 3
    assert list(read_stream(dst)) == list(read_stream(src))
