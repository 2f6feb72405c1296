"""Result cells of every kind of term, for the result writers' properties (hypothesis)."""
from __future__ import annotations

from hypothesis import strategies as st

from tefq import terms

X = terms.XSD
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10)
numbers = st.one_of(
    st.integers(-10**20, 10**20).map(lambda i: terms.literal(str(i), X + "integer")),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(
        lambda d: terms.literal(str(d), X + "decimal")),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: terms.literal(repr(f), X + "double")),
)
cells = st.one_of(
    st.none(),
    st.sampled_from(["<http://e/ch1>", "<http://e/a,b>", "_:b0"]),
    text.map(terms.literal),
    st.builds(lambda lex: terms.literal(lex, lang="en"), text),
    st.builds(lambda lex, dt: terms.literal(lex, dt), text, st.sampled_from([X + "dateTime", "http://x/dt"])),
    numbers,
)
