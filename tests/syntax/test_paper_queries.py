"""The paper's queries as printed (spec §1, §9): examples/paper/ holds their text, which parses and
explains without a PREFIX and runs once `:` is mapped; usecases/ holds the runnable forms, which
bind without a warning and give the same rows."""
from __future__ import annotations

import pytest

from tefq.cli import run_command
from tests.support.paths import ROOT, SHARED

PAPER = ROOT / "examples" / "paper"
SPEC9 = SHARED / "spec" / "TEF-SPARQL.md"
EVENTS = ROOT / "examples" / "programs" / "events.tsv"  # log and programme guide: UC1-UC3 all have rows
IPTV = ":=http://example.org/iptv#"


def tefq(capsys, *argv) -> tuple[int, str, str]:
    code = run_command([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def statements(text: str) -> list[str]:
    """The statements of a document or of the spec's §9 block: comments dropped, one per paragraph."""
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    return [" ".join(p.split()) for p in "\n".join(lines).split("\n\n") if p.strip()]


@pytest.mark.parametrize("name", ["uc1", "uc2", "uc3"])
def test_the_paper_text_parses_and_runs_once_the_prefix_is_mapped(capsys, name: str) -> None:
    paper = PAPER / f"{name}.tef"
    assert not any(s.upper().startswith("PREFIX") for s in statements(paper.read_text()))
    code, out, err = tefq(capsys, "parse", paper)
    assert code == 0 and "query q1" in out, err
    assert "--prefix :=IRI" in err  # a note: the run will need it
    code, out, err = tefq(capsys, "run", paper, "--stream", EVENTS, "--engine", "oracle")
    assert code == 2 and f"{paper}:" in err and "--prefix :=IRI" in err, err
    code, mapped, err = tefq(capsys, "run", paper, "--stream", EVENTS, "--engine", "oracle", "--prefix", IPTV,
                             "--quiet")
    assert code == 0, err
    code, runnable, err = tefq(capsys, "run", ROOT / "usecases" / f"{name}.tef", "--stream", EVENTS, "--engine",
                               "oracle", "--quiet")
    assert code == 0 and err == "", err  # the shipped use-case runs without a warning
    assert mapped == runnable and mapped.count("\n") >= 2


@pytest.mark.needs_shared("spec/TEF-SPARQL.md")
def test_the_paper_text_is_the_spec_text() -> None:
    spec = SPEC9.read_text().split("## 9.", 1)[1].split("```", 2)[1]
    printed = statements(spec)
    ours = [s for name in ("uc1", "uc2", "uc3") for s in statements((PAPER / f"{name}.tef").read_text())]
    assert sorted(set(ours)) == sorted(set(printed))
