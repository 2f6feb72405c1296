"""The plain xsd:double and xsd:dateTime spellings of `tefq.spark.kernels.windowed.literal_forms` are rdflib's."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tefq.oracle.windowed.r2r import to_nt, to_rdflib
from tefq.spark.kernels.windowed.literal_forms import rdflib_spelling

XSD = "http://www.w3.org/2001/XMLSchema#"
DIGITS = st.text("0123456789", min_size=1, max_size=20)


def rdflib_form(term: str) -> str:
    return to_nt(to_rdflib.__wrapped__(term))  # a fresh rdflib term, not the cached one


@st.composite
def doubles(draw) -> str:
    sign = draw(st.sampled_from(["", "-", "+"]))
    fraction = draw(st.one_of(st.just(""), DIGITS.map(lambda d: "." + d)))
    exponent = draw(st.one_of(st.just(""), st.tuples(st.sampled_from("eE"), st.sampled_from(["", "+", "-"]),
                                                     st.text("0123456789", min_size=1, max_size=3)).map("".join)))
    return f'"{sign}{draw(DIGITS)}{fraction}{exponent}"^^<{XSD}double>'


@st.composite
def datetimes(draw) -> str:
    two = st.one_of(st.integers(0, 30), st.integers(0, 99)).map(lambda n: f"{n:02d}")  # mostly valid
    date = f"{draw(st.integers(0, 9999)):04d}-{draw(st.integers(0, 13)):02d}-{draw(two)}"
    time = f"{draw(st.integers(0, 25)):02d}:{draw(two)}:{draw(two)}"
    fraction = draw(st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=7).map(lambda d: "." + d)))
    zone = draw(st.sampled_from(["", "Z", "+01:00", "-05:30", "+14:00", "-00:00", "+25:00"]))
    return f'"{date}T{time}{fraction}{zone}"^^<{XSD}dateTime>'


@settings(max_examples=300, deadline=None)
@given(st.one_of(doubles(), datetimes()))
def test_the_spellings_are_rdflibs(term: str) -> None:
    got = rdflib_spelling(term)
    assert got is None or got == rdflib_form(term)


def test_the_sensor_streams_literals_are_spelled_without_rdflib() -> None:
    value, stamp = f'"34.188"^^<{XSD}double>', f'"2017-07-14T02:40:00.003Z"^^<{XSD}dateTime>'
    assert rdflib_spelling(value) == rdflib_form(value) == value
    assert rdflib_spelling(stamp) == rdflib_form(stamp) == f'"2017-07-14T02:40:00.003000+00:00"^^<{XSD}dateTime>'
    for other in (f'"1.5"^^<{XSD}decimal>', '"abc"', '"1"@en', f'"2017-02-30T02:40:00Z"^^<{XSD}dateTime>',
                  f'"NaN"^^<{XSD}double>', f'" 1.5"^^<{XSD}double>'):
        assert rdflib_spelling(other) is None
