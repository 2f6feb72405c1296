"""Issue 26 (part 2), cases 1 and 8: a --checkpoint knows what it belongs to. A restart with
another query, another EVERY, another --stream set (a subset path included) or other options is
exit 2 naming what changed (it answered the other query with exit 0); a moved checkpoint is
refused with a sentence (it was exit 1 "Wrong basePath" and a Spark dump)."""
from __future__ import annotations

import os
import shutil

import pytest

import tefq
from tefq.errors import TefqError
from tefq.spark.runtime.checkpoint import resume
from tefq.vocabulary import RunSettings
from tests.support.paths import ROOT

pytestmark = [pytest.mark.reliability]

UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
UC2 = os.path.join(ROOT, "usecases", "uc2.tef")  # the CLI case: test_rel_input_files
STREAMS = os.path.join(ROOT, "tests", "data", "streams")


def uc1(every: str = '"PT10S"', comment: str = "") -> str:
    text = open(UC1, encoding="utf-8").read()
    return comment + text.replace("EVERY \"PT10S\"", f"EVERY {every}")


def doc(text: str):
    return tefq.compile(text, name="q.tef").document()


def stream_dir(tmp_path) -> str:
    d = tmp_path / "s"
    d.mkdir()
    shutil.copy(os.path.join(STREAMS, "basic.tsv"), d / "00.tsv")
    shutil.copy(os.path.join(STREAMS, "basic.tsv"), d / "01.tsv")
    return str(d)


def opened(ck: str, text: str, streams: list[str], **settings) -> None:
    resume(ck, streams, False, doc(text), settings=RunSettings(**settings)).close()


def first_run(ck: str, streams: list[str]) -> None:
    """UC1 opened the checkpoint and committed a micro-batch (its state exists)."""
    opened(ck, uc1(), streams)
    os.makedirs(os.path.join(ck, "q1", "checkpoint", "commits"))
    open(os.path.join(ck, "q1", "checkpoint", "commits", "0"), "w").write("v1\n{}\n")


def test_a_restart_with_the_same_document_in_other_words_resumes(tmp_path) -> None:
    ck, s = str(tmp_path / "ck"), stream_dir(tmp_path)
    first_run(ck, [s])
    opened(ck, uc1(comment="# a comment and a blank line\n\n"), [s])  # positions do not count


def test_a_restart_of_queries_named_out_of_alphabetical_order_resumes(tmp_path) -> None:
    """The record keeps the query names sorted; the document's order is not a change (issue 40:
    busy-channels.rspql names join-counts before busy, and every restart was refused)."""
    ck, s = str(tmp_path / "ck"), stream_dir(tmp_path)
    text = open(os.path.join(ROOT, "examples", "rspql", "busy-channels.rspql"), encoding="utf-8").read()
    opened(ck, text, [s])
    os.makedirs(os.path.join(ck, "q1", "checkpoint", "commits"))
    open(os.path.join(ck, "q1", "checkpoint", "commits", "0"), "w").write("v1\n{}\n")
    opened(ck, text, [s])


@pytest.mark.parametrize("change, words", [
    (dict(text=uc1("\"PT5S\"")), "query q1: EVERY was PT10S, now PT5S"),
    (dict(text=open(UC2, encoding="utf-8").read()), "query q1 changed"),
    (dict(text=uc1().replace("COUNT ?user", "COUNT DISTINCT ?user")), "query q1 changed"),
    (dict(sub="00.tsv"), "the --stream set was"),
    (dict(t0=5), "--t0 was 0, now 5"),
    (dict(lateness_ms=1000), "--lateness (ms) was 0, now 1000"),
])
def test_a_restart_with_anything_different_is_refused_naming_it(tmp_path, change, words) -> None:
    ck, s = str(tmp_path / "ck"), stream_dir(tmp_path)
    first_run(ck, [s])
    streams = [os.path.join(s, change["sub"])] if "sub" in change else [s]
    options = {k: v for k, v in change.items() if k in ("t0", "lateness_ms")}
    with pytest.raises(TefqError) as e:
        opened(ck, change.get("text", uc1()), streams, **options)
    assert words in e.value.message and "belongs to another run" in e.value.message
    assert e.value.file == ck


def test_a_checkpoint_without_state_takes_the_next_run(tmp_path) -> None:
    """A first run that stopped before its first micro-batch (a bad query, a signal) holds nothing."""
    ck, s = str(tmp_path / "ck"), stream_dir(tmp_path)
    opened(ck, uc1(), [s])
    opened(ck, uc1("\"PT5S\""), [s])


def test_a_moved_checkpoint_is_refused_with_a_sentence(tmp_path) -> None:
    ck, s = str(tmp_path / "ck"), stream_dir(tmp_path)
    first_run(ck, [s])
    moved = str(tmp_path / "moved")
    shutil.move(ck, moved)
    with pytest.raises(TefqError, match="has been moved or copied here.*move it back"):
        opened(moved, uc1(), [s])


def test_an_unwritable_checkpoint_is_named(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(TefqError, match="cannot write to the --checkpoint directory") as e:
        opened(str(blocker / "ck"), uc1(), [stream_dir(tmp_path)])
    assert e.value.file == str(blocker / "ck")
