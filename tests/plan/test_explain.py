"""Golden tests of `explain`: the logical plan text of UC1-3 and a windowed query.
Regenerate after an intended change with TEFQ_UPDATE_GOLDEN=1."""
from __future__ import annotations

import os

import pytest

from tefq.analysis import bind
from tefq.plan.explain import explain
from tefq.syntax import parse
from tests.support import paths

QUERIES = paths.DATA / "queries"
GOLDEN = paths.GOLDEN / "explain"


@pytest.mark.parametrize("name", ["uc1", "uc2", "uc3", "windowed_select", "paper_uc1_csparql"])
def test_explain_golden(name: str) -> None:
    src = (QUERIES / f"{name}.tef").read_text()
    prefixes = {"uc": "http://example.org/uc#", "ue": "http://example.org/ue#", "": "http://example.org/iptv#"}
    doc = bind(parse(src, f"{name}.tef"), f"{name}.tef", src, prefixes if name.startswith("paper") else {})
    text = explain(doc)
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("TEFQ_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    assert explain(doc) == text  # deterministic within a run too
