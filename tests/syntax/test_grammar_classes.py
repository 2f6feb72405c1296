"""The grammar's name-character classes (grammar/tef.lark, above PN_PREFIX): written as negated
classes, because Python's `re` compiles a class range one code point at a time and the contextual
lexer compiles these classes into each of its scanners. Here are their readable spellings, checked
against the grammar's on every code point, and a guard against wide ranges coming back."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GRAMMAR = "\n".join(line for line in (ROOT / "grammar" / "tef.lark").read_text(encoding="utf-8").splitlines()
                    if not line.lstrip().startswith("//"))  # the rules and terminals, not the comments
EVERY_CODE_POINT = "".join(map(chr, range(0x110000)))

READABLE = [  # what each terminal allows: the spellings the classes had before
    r"[A-Za-z\u00C0-\uFFFF]",
    r"[A-Za-z0-9_\u00C0-\uFFFF]",
    r"[A-Za-z0-9_:\u00C0-\uFFFF]",
    r"[A-Za-z0-9_\u00B7\u00C0-\uFFFF]",
    r"[A-Za-z0-9_\u00B7\u00C0-\uFFFF-]",
    r"[A-Za-z0-9_.\u00B7\u00C0-\uFFFF-]",
    r"[A-Za-z0-9_.:\u00B7\u00C0-\uFFFF-]",
]


def matched(cls: str) -> str:
    return "".join(re.findall(cls, EVERY_CODE_POINT))


def test_each_negated_class_means_a_readable_one() -> None:
    negated = set(re.findall(r"\[\^[^\]]*\\U00010000-\\U0010FFFF\]", GRAMMAR))
    assert len(negated) == len(READABLE)
    readable = {matched(cls): cls for cls in READABLE}
    for cls in negated:
        assert matched(cls) in readable, f"{cls} matches no readable spelling"


def test_no_class_range_spans_thousands_of_code_points() -> None:
    """A positive range of 4,096 or more BMP code points costs milliseconds each time a scanner
    holding it compiles (every command's first parse)."""
    for lo, hi in re.findall(r"\\u([0-9A-Fa-f]{4})-\\u([0-9A-Fa-f]{4})", GRAMMAR):
        assert int(hi, 16) - int(lo, 16) < 4096, f"\\u{lo}-\\u{hi}"
