"""examples/facts/: each query and command of its README, run and checked."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

from tefq.facts.cli import run_as_of
from tests.support.paths import ROOT

HERE = os.path.join(ROOT, "examples", "facts")
EVENTS = os.path.join(HERE, "events.tsv")
IPTV = "http://example.org/iptv#"
NINE = 1714597200000  # 2024-05-01T21:00:00Z


def tefq(*args: str, cwd: str = ROOT) -> str:
    out = subprocess.run([sys.executable, "-m", "tefq", *args], capture_output=True, text=True, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return out.stdout.replace("\r\n", "\n")


def test_whole_show_viewers():
    assert tefq("run", os.path.join(HERE, "whole-show.tef"), "--stream", EVENTS, "--engine", "oracle", "--quiet") == (
        f"tick,Program,WholeShowViewers\n{NINE},{IPTV}News,1\n{NINE + 3_600_000},{IPTV}Film,1\n")


def test_switched_within_a_minute_after_the_end():
    assert tefq("run", os.path.join(HERE, "switched-after-end.tef"), "--stream", EVENTS, "--engine", "oracle",
                "--quiet") == f"tick,Program,SwitchedWithinAMinute\n{NINE},{IPTV}Match,1\n{NINE},{IPTV}News,1\n"


def as_of(tmp_path, capsys, **source) -> str:
    args = argparse.Namespace(query=os.path.join(HERE, "as-of-report.tef"), prefix=None, background=None,
                              stream=None, facts=None, at="2024-05-01T20:15:00Z,2024-05-01T21:00:00Z", out=None,
                              format="csv", metrics=None, quiet=True)
    for k, v in source.items():
        setattr(args, k, v)
    assert run_as_of(args) == 0
    return capsys.readouterr().out.replace("\r\n", "\n")


def test_as_of_report_from_the_stream_and_from_the_stored_table(tmp_path, capsys):
    tefq("facts", os.path.join(HERE, "as-of-report.tef"), "--stream", EVENTS, "--out", "facts.parquet", "--quiet",
         cwd=str(tmp_path))
    stored = as_of(tmp_path, capsys, facts=str(tmp_path / "facts.parquet"))
    assert stored == as_of(tmp_path, capsys, stream=[EVENTS])
    full = tefq("run", os.path.join(HERE, "as-of-report.tef"), "--stream", EVENTS, "--engine", "oracle", "--quiet")
    header, *rows = full.splitlines()
    assert stored.splitlines() == [header] + [r for r in rows if r.startswith(("1714594500000,", f"{NINE},"))]


def test_worked_example_timeline(tmp_path):
    png = tmp_path / "worked-example.png"
    table = tefq("facts", os.path.join(ROOT, "examples", "spec10", "uc1.tef"), "--stream",
                 os.path.join(ROOT, "examples", "spec10", "events.tsv"), "--plot", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert table.splitlines()[1:3] == [f"UserFact,{IPTV}Alice,{IPTV}A,1000,14000", f"UserFact,{IPTV}Bob,{IPTV}B,3000,9000"]
    assert os.path.getsize(os.path.join(HERE, "worked-example.png")) > 10_000  # the README's picture is there
